// Validation and analysis of an algorithm graph: types, wiring, cycles, model scopes, decisions; the program when it is sound.
import { checkParams, type ModelCatalogEntry } from './checkParams.ts';
import type { GraphDocument, GraphNode } from './graph.ts';
import { errorsOf, issue, type IrIssue } from './irIssue.ts';
import type { IrPortRef, IrWants } from './irSchema.ts';
import { isCycleBreaking, LIMITS, nodeSpec, type NodeSpec, type ParamValue } from './nodeTypes.ts';

export interface AnalyzedNode {
  id: string;
  type: string;
  spec: NodeSpec;
  params: Record<string, ParamValue>;
  inputs: Record<string, IrPortRef>;
  /**
   * The model whose steps evaluate this node, or null for every step. For a memory node this is
   * when it updates; its outputs are readable on every step.
   */
  scope: string | null;
}

export interface Program {
  /** All nodes in evaluation order. */
  nodes: AnalyzedNode[];
  models: string[];
  entry: string;
  wants: Record<string, IrWants>;
  routes: Record<string, string[]>;
  receive: Record<string, string>;
}

export interface GraphAnalysis {
  issues: IrIssue[];
  /** Present when no issue is an error. */
  program?: Program;
}

const DECISION_TARGETS = (n: { type: string; params: Record<string, ParamValue> }): string[] => {
  if (n.type === 'handoff' || n.type === 'handBack') return [n.params.to as string];
  if (n.type === 'drawModel') {
    const w = n.params.weights as Record<string, number>;
    return Object.keys(w).filter((m) => w[m] > 0);
  }
  return [];
};

/**
 * Checks every rule and, when none is broken, returns the program the compiler emits.
 * `catalog` lists the deployable models; null accepts any model name (IR checked without one), and
 * then `modelOrder` (the IR's declared models) orders the model ids.
 */
export function analyzeGraph(
  graph: Pick<GraphDocument, 'nodes' | 'edges'>,
  catalog: readonly ModelCatalogEntry[] | null,
  modelOrder: readonly string[] = [],
): GraphAnalysis {
  const issues: IrIssue[] = [];
  if (graph.nodes.length > LIMITS.maxNodes || graph.edges.length > LIMITS.maxEdges) {
    issues.push(issue(null, 'too_large', `The graph has ${graph.nodes.length} nodes and ${graph.edges.length} edges.`, `Keep to ${LIMITS.maxNodes} nodes and ${LIMITS.maxEdges} edges.`));
    return { issues };
  }

  // Nodes: unique ids, known types, parameters.
  const present = new Set<string>();
  const known = new Map<string, { node: GraphNode; spec: NodeSpec; index: number }>();
  graph.nodes.forEach((node, index) => {
    if (present.has(node.id)) {
      issues.push(issue(node.id, 'duplicate_node_id', `Two nodes share the id "${node.id}".`, 'Give each node its own id.'));
      return;
    }
    present.add(node.id);
    const spec = nodeSpec(node.type);
    if (!spec) issues.push(issue(node.id, 'unknown_node_type', `"${node.type}" is not a node type.`, 'Replace it with a node from the palette.'));
    else known.set(node.id, { node, spec, index });
  });
  const memoryIds = new Set([...known.values()].filter((k) => k.spec.category === 'memory').map((k) => k.node.id));
  const params = new Map<string, Record<string, ParamValue>>();
  for (const { node, spec } of known.values()) {
    const p = checkParams(node.id, spec, node.params, catalog, memoryIds, issues);
    params.set(node.id, p);
    if ((node.type === 'handoff' || node.type === 'handBack') && p.to === p.model) {
      issues.push(issue(node.id, 'self_handoff', `Hands off from "${p.model}" to itself.`, 'Pick a different target model, or use Stay.'));
    }
  }

  // Edges: both ends exist, ports exist, types agree, one edge per input.
  const inputs = new Map<string, Record<string, IrPortRef>>();
  for (const id of known.keys()) inputs.set(id, Object.create(null));
  const usedOutputs = new Set<string>();
  for (const e of graph.edges) {
    if (!present.has(e.source) || !present.has(e.target)) {
      const at = present.has(e.target) ? e.target : present.has(e.source) ? e.source : null;
      issues.push(issue(at, 'dangling_edge', `Edge ${e.id} connects to a node that does not exist.`, 'Delete the edge.'));
      continue;
    }
    const src = known.get(e.source);
    const tgt = known.get(e.target);
    if (!src || !tgt) continue; // the unknown type is already reported
    const out = src.spec.outputs.find((p) => p.name === e.sourceHandle);
    if (!out) {
      issues.push(issue(e.source, 'unknown_port', `${src.spec.label} has no output "${e.sourceHandle}".`, 'Reconnect the edge from an existing output.'));
      continue;
    }
    const inp = tgt.spec.inputs.find((p) => p.name === e.targetHandle);
    if (!inp) {
      issues.push(issue(e.target, 'unknown_port', `${tgt.spec.label} has no input "${e.targetHandle}".`, 'Reconnect the edge to an existing input.'));
      continue;
    }
    if (out.type !== inp.type) {
      issues.push(issue(e.target, 'type_mismatch', `Input "${inp.label}" takes a ${inp.type}, but ${src.spec.label} gives a ${out.type}.`, `Connect a ${inp.type} output, or convert it first (e.g. Compare turns a number into a boolean).`));
      continue;
    }
    const slots = inputs.get(e.target)!;
    if (Object.hasOwn(slots, inp.name)) {
      issues.push(issue(e.target, 'duplicate_input', `Input "${inp.label}" has more than one edge.`, 'Delete all but one edge into this input.'));
      continue;
    }
    slots[inp.name] = { node: e.source, port: out.name };
    usedOutputs.add(e.source);
  }
  for (const { node, spec } of known.values()) {
    for (const p of spec.inputs) {
      if (!p.optional && !Object.hasOwn(inputs.get(node.id)!, p.name)) {
        issues.push(issue(node.id, 'missing_input', `Input "${p.label}" (${p.type}) is not connected.`, `Connect a ${p.type} output to "${p.label}".`));
      }
    }
    if (spec.outputs.length > 0 && !usedOutputs.has(node.id)) {
      issues.push(issue(node.id, 'unused_node', `${spec.label} feeds nothing.`, 'Connect its output or delete it.', 'warning'));
    }
  }

  const order = topologicalOrder(known, inputs, issues);
  if (!order) return { issues };

  const scope = new Map<string, string | null>();
  const outputScope = (ref: IrPortRef): string | null => (known.get(ref.node)!.spec.category === 'memory' ? null : scope.get(ref.node) ?? null);
  for (const id of order) {
    const { spec } = known.get(id)!;
    const p = params.get(id)!;
    const ins = Object.values(inputs.get(id)!);
    if (spec.category === 'signal') {
      scope.set(id, p.model as string);
      continue;
    }
    const scopes = [...new Set(ins.map(outputScope).filter((s): s is string => s !== null))];
    if (spec.category === 'decision' || spec.category === 'receive') {
      const foreign = scopes.filter((s) => s !== p.model);
      if (foreign.length) {
        issues.push(issue(id, 'wrong_model_scope', `Decides on "${p.model}" but reads signals of "${foreign.join('", "')}".`, `Read signals set to "${p.model}", or set this node's model to "${foreign[0]}".`));
      }
      scope.set(id, p.model as string);
      continue;
    }
    if (scopes.length > 1) {
      issues.push(issue(id, 'mixed_models', `Combines signals of "${scopes.join('" and "')}", which never exist in the same step.`, 'Feed it signals of one model, or carry the other through a memory node.'));
    }
    scope.set(id, scopes[0] ?? null);
  }

  // Start, decisions, reachability.
  const starts = [...known.values()].filter((k) => k.spec.category === 'start');
  if (starts.length === 0) issues.push(issue(null, 'missing_start', 'The graph has no Start node.', 'Add a Start node and choose the entry model.'));
  for (const extra of starts.slice(1)) issues.push(issue(extra.node.id, 'duplicate_start', 'A graph has exactly one Start node.', 'Delete this Start node.'));
  // Ties break by id, not document position: the IR's node order differs from the designer's.
  const byPriority = (a: string, b: string) => (params.get(a)!.priority as number) - (params.get(b)!.priority as number) || (a < b ? -1 : a > b ? 1 : 0);
  const decisions = new Map<string, string[]>();
  for (const { node, spec } of known.values()) {
    if (spec.category !== 'decision') continue;
    const m = params.get(node.id)!.model as string;
    decisions.set(m, [...(decisions.get(m) ?? []), node.id]);
  }
  for (const list of decisions.values()) list.sort(byPriority);

  const entry = starts.length ? (params.get(starts[0].node.id)!.model as string) : null;
  const reachable = new Set<string>();
  const cameFrom = new Map<string, string>();
  if (entry !== null) {
    const queue = [entry];
    reachable.add(entry);
    while (queue.length) {
      const m = queue.shift()!;
      for (const d of decisions.get(m) ?? []) {
        for (const t of DECISION_TARGETS({ type: known.get(d)!.node.type, params: params.get(d)! })) {
          if (!reachable.has(t)) {
            reachable.add(t);
            cameFrom.set(t, d);
            queue.push(t);
          }
        }
      }
    }
    for (const m of reachable) {
      if (decisions.has(m)) continue;
      const at = m === entry ? starts[0].node.id : cameFrom.get(m)!;
      const how = m === entry ? 'is the entry model' : `receives requests from ${at}`;
      issues.push(issue(at, 'missing_decision', `Model "${m}" ${how} but has no decision: route() would have nothing to run there.`, `Add a Stay, Hand off or Hand back node on model "${m}".`));
    }
  }
  for (const [m, list] of decisions) {
    if (!reachable.has(m)) {
      for (const d of list) issues.push(issue(d, 'unreachable_decision', `No request ever reaches "${m}", so this decision never runs.`, `Hand off to "${m}" from a reachable model, or delete this node.`, 'warning'));
      continue;
    }
    const always = list.findIndex((d) => known.get(d)!.node.type !== 'handBack' && !Object.hasOwn(inputs.get(d)!, 'when'));
    for (const d of list.slice(always < 0 ? list.length : always + 1)) {
      issues.push(issue(d, 'shadowed_decision', `${list[always]} always fires first on "${m}", so this decision never runs.`, `Give this node a lower priority number than ${list[always]}, or connect a condition to ${list[always]}.`, 'warning'));
    }
  }
  const receive: Record<string, string> = {};
  for (const { node, spec } of [...known.values()].sort((a, b) => a.index - b.index)) {
    if (spec.category !== 'receive') continue;
    const m = params.get(node.id)!.model as string;
    if (Object.hasOwn(receive, m)) issues.push(issue(node.id, 'duplicate_receive', `Model "${m}" already has receive policy ${receive[m]}.`, 'Keep one receive node per model.'));
    else if (reachable.has(m)) receive[m] = node.id;
  }

  if (errorsOf(issues).length || entry === null) return { issues };

  const catalogOrder = catalog?.map((c) => c.name) ?? modelOrder;
  const models = [...reachable].sort((a, b) => rank(catalogOrder, a) - rank(catalogOrder, b) || (a < b ? -1 : a > b ? 1 : 0));
  const wants: Record<string, IrWants> = {};
  const routes: Record<string, string[]> = {};
  for (const m of models) {
    const heads = new Set<string>();
    let topK = 0;
    for (const id of order) {
      const { node } = known.get(id)!;
      const p = params.get(id)!;
      if (p.model !== m || known.get(id)!.spec.category !== 'signal') continue;
      if (node.type === 'head') heads.add(p.head as string);
      if (node.type === 'distribution') topK = Math.max(topK, p.topK as number);
    }
    wants[m] = { topK, hidden: false, heads: [...heads].sort() };
    routes[m] = decisions.get(m)!;
  }
  const nodes: AnalyzedNode[] = order.map((id) => ({ id, type: known.get(id)!.node.type, spec: known.get(id)!.spec, params: params.get(id)!, inputs: { ...inputs.get(id)! }, scope: scope.get(id) ?? null }));
  return { issues, program: { nodes, models, entry, wants, routes, receive } };
}

function rank(order: readonly string[], m: string): number {
  const i = order.indexOf(m);
  return i < 0 ? order.length : i;
}

/** Kahn's algorithm over the dependency edges (reads of a memory's `prev` excluded); reports one cycle if any. */
function topologicalOrder(
  known: ReadonlyMap<string, { node: GraphNode; spec: NodeSpec; index: number }>,
  inputs: ReadonlyMap<string, Record<string, IrPortRef>>,
  issues: IrIssue[],
): string[] | null {
  const deps = new Map<string, string[]>();
  const users = new Map<string, string[]>();
  for (const id of known.keys()) users.set(id, []);
  for (const [id, slots] of inputs) {
    const d = Object.values(slots)
      .filter((ref) => !isCycleBreaking(known.get(ref.node)!.node.type, ref.port))
      .map((ref) => ref.node);
    deps.set(id, d);
    for (const s of d) users.get(s)!.push(id);
  }
  const pending = new Map([...deps].map(([id, d]) => [id, d.length]));
  const ready = [...known.keys()].filter((id) => pending.get(id) === 0);
  const order: string[] = [];
  while (ready.length) {
    const id = ready.shift()!;
    order.push(id);
    for (const u of users.get(id)!) {
      const left = pending.get(u)! - 1;
      pending.set(u, left);
      if (left === 0) ready.push(u);
    }
  }
  if (order.length === known.size) return order;
  // Every node left has an unfinished dependency: walking dependencies from one must revisit a node, on a cycle.
  const left = new Set([...known.keys()].filter((id) => pending.get(id)! > 0));
  const walk: string[] = [];
  let at = [...left][0];
  while (!walk.includes(at)) {
    walk.push(at);
    at = deps.get(at)!.find((d) => left.has(d))!;
  }
  const cycle = walk.slice(walk.indexOf(at));
  const path = [...cycle].reverse().concat(cycle[cycle.length - 1]).join(' → ');
  for (const id of cycle) {
    issues.push(issue(id, 'cycle', `Part of a loop: ${path}.`, "Break the loop, or read the memory node's prev output instead of value."));
  }
  return null;
}
