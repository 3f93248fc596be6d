// Validation and analysis of an algorithm graph: types, wiring, cycles, model scopes, decisions; the program when it is sound.
import { checkParams, type ModelCatalogEntry } from './checkParams.ts';
import type { GraphDocument, GraphEdge, GraphNode } from './graph.ts';
import { errorsOf, issue, type IrIssue } from './irIssue.ts';
import type { IrPortRef, IrWants } from './irSchema.ts';
import { NODE_REGISTRY, type NodeRegistry } from './nodeRegistry.ts';
import { LIMITS, type ParamValue } from './nodeTypes.ts';
import { isCycleBreaking, type NodeTypeDef, type Route } from './nodeTypeDef.ts';

export interface AnalyzedNode {
  id: string;
  type: string;
  def: NodeTypeDef;
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

/** A node of a known type, its parameters checked (defaults filled in). */
interface Known {
  node: GraphNode;
  def: NodeTypeDef;
  index: number;
  params: Record<string, ParamValue>;
}
type KnownNodes = ReadonlyMap<string, Known>;
type Inputs = ReadonlyMap<string, Record<string, IrPortRef>>;

/** The models a decision can send a request to. */
function routeTargets(r: Route): string[] {
  if ('weights' in r) return Object.keys(r.weights).filter((m) => r.weights[m] > 0);
  return r.to === null ? [] : [r.to];
}

const routeOf = (k: Known): Route | null => (k.def.category === 'decision' ? k.def.route(k.params) : null);

/**
 * Checks every rule and, when none is broken, returns the program the compiler emits.
 * `catalog` lists the deployable models; null accepts any model name (IR checked without one), and
 * then `modelOrder` (the IR's declared models) orders the model ids. `registry` holds the node types.
 */
export function analyzeGraph(
  graph: Pick<GraphDocument, 'nodes' | 'edges'>,
  catalog: readonly ModelCatalogEntry[] | null,
  modelOrder: readonly string[] = [],
  registry: NodeRegistry = NODE_REGISTRY,
): GraphAnalysis {
  const issues: IrIssue[] = [];
  if (graph.nodes.length > LIMITS.maxNodes || graph.edges.length > LIMITS.maxEdges) {
    issues.push(
      issue(
        null,
        'too_large',
        `The graph has ${graph.nodes.length} nodes and ${graph.edges.length} edges.`,
        `Keep to ${LIMITS.maxNodes} nodes and ${LIMITS.maxEdges} edges.`,
      ),
    );
    return { issues };
  }
  const { present, known } = checkNodes(graph.nodes, catalog, registry, issues);
  const inputs = wire(graph.edges, present, known, issues);
  const order = topologicalOrder(known, inputs, issues);
  if (!order) return { issues };
  const scope = modelScopes(order, known, inputs, issues);
  const { entry, reachable, decisions, receive } = structure(known, inputs, issues);
  if (errorsOf(issues).length || entry === null) return { issues };

  const catalogOrder = catalog?.map((c) => c.name) ?? modelOrder;
  const models = [...reachable].sort((a, b) => rank(catalogOrder, a) - rank(catalogOrder, b) || (a < b ? -1 : a > b ? 1 : 0));
  const wants: Record<string, IrWants> = {};
  const routes: Record<string, string[]> = {};
  for (const m of models) {
    const heads = new Set<string>();
    let topK = 0;
    for (const id of order) {
      const { def, params } = known.get(id)!;
      if (params.model !== m || def.category !== 'signal') continue;
      const w = def.wants?.(params) ?? {};
      for (const h of w.heads ?? []) heads.add(h);
      topK = Math.max(topK, w.topK ?? 0);
    }
    wants[m] = { topK, hidden: false, heads: [...heads].sort() };
    routes[m] = decisions.get(m)!;
  }
  const nodes: AnalyzedNode[] = order.map((id) => {
    const { node, def, params } = known.get(id)!;
    return { id, type: node.type, def, params, inputs: { ...inputs.get(id)! }, scope: scope.get(id) ?? null };
  });
  return { issues, program: { nodes, models, entry, wants, routes, receive } };
}

/** Unique ids, known types, parameters; a decision may not send a request to its own model. */
function checkNodes(
  nodes: readonly GraphNode[],
  catalog: readonly ModelCatalogEntry[] | null,
  registry: NodeRegistry,
  issues: IrIssue[],
): { present: Set<string>; known: Map<string, Known> } {
  const present = new Set<string>();
  const typed: Omit<Known, 'params'>[] = [];
  nodes.forEach((node, index) => {
    if (present.has(node.id)) {
      issues.push(issue(node.id, 'duplicate_node_id', `Two nodes share the id "${node.id}".`, 'Give each node its own id.'));
      return;
    }
    present.add(node.id);
    const def = registry.get(node.type);
    if (!def) issues.push(issue(node.id, 'unknown_node_type', `"${node.type}" is not a node type.`, 'Replace it with a node from the palette.'));
    else typed.push({ node, def, index });
  });
  const memoryIds = new Set(typed.filter((k) => k.def.category === 'memory').map((k) => k.node.id));
  const known = new Map<string, Known>();
  for (const k of typed) {
    const params = checkParams(k.node.id, k.def, k.node.params, catalog, memoryIds, issues);
    const entry = { ...k, params };
    known.set(k.node.id, entry);
    const route = routeOf(entry);
    if (route && 'to' in route && route.to === params.model) {
      issues.push(issue(k.node.id, 'self_handoff', `Hands off from "${params.model}" to itself.`, 'Pick a different target model, or use Stay.'));
    }
  }
  return { present, known };
}

/** Edges: both ends exist, ports exist, types agree, one edge per input; then inputs left open and nodes feeding nothing. */
function wire(edges: readonly GraphEdge[], present: ReadonlySet<string>, known: KnownNodes, issues: IrIssue[]): Inputs {
  const inputs = new Map<string, Record<string, IrPortRef>>();
  for (const id of known.keys()) inputs.set(id, Object.create(null));
  const usedOutputs = new Set<string>();
  for (const e of edges) {
    if (!present.has(e.source) || !present.has(e.target)) {
      const at = present.has(e.target) ? e.target : present.has(e.source) ? e.source : null;
      issues.push(issue(at, 'dangling_edge', `Edge ${e.id} connects to a node that does not exist.`, 'Delete the edge.'));
      continue;
    }
    const src = known.get(e.source);
    const tgt = known.get(e.target);
    if (!src || !tgt) continue; // the unknown type is already reported
    const out = src.def.outputs.find((p) => p.name === e.sourceHandle);
    if (!out) {
      issues.push(issue(e.source, 'unknown_port', `${src.def.label} has no output "${e.sourceHandle}".`, 'Reconnect the edge from an existing output.'));
      continue;
    }
    const inp = tgt.def.inputs.find((p) => p.name === e.targetHandle);
    if (!inp) {
      issues.push(issue(e.target, 'unknown_port', `${tgt.def.label} has no input "${e.targetHandle}".`, 'Reconnect the edge to an existing input.'));
      continue;
    }
    if (out.type !== inp.type) {
      issues.push(
        issue(
          e.target,
          'type_mismatch',
          `Input "${inp.label}" takes a ${inp.type}, but ${src.def.label} gives a ${out.type}.`,
          `Connect a ${inp.type} output, or convert it first (e.g. Compare turns a number into a boolean).`,
        ),
      );
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
  for (const { node, def } of known.values()) {
    for (const p of def.inputs) {
      if (!p.optional && !Object.hasOwn(inputs.get(node.id)!, p.name)) {
        issues.push(issue(node.id, 'missing_input', `Input "${p.label}" (${p.type}) is not connected.`, `Connect a ${p.type} output to "${p.label}".`));
      }
    }
    if (def.outputs.length > 0 && !usedOutputs.has(node.id)) {
      issues.push(issue(node.id, 'unused_node', `${def.label} feeds nothing.`, 'Connect its output or delete it.', 'warning'));
    }
  }
  return inputs;
}

/** Each node's model scope, in evaluation order: signals, decisions and receive nodes name theirs; operators take their inputs'. */
function modelScopes(order: readonly string[], known: KnownNodes, inputs: Inputs, issues: IrIssue[]): Map<string, string | null> {
  const scope = new Map<string, string | null>();
  const outputScope = (ref: IrPortRef): string | null => (known.get(ref.node)!.def.category === 'memory' ? null : (scope.get(ref.node) ?? null));
  for (const id of order) {
    const { def, params: p } = known.get(id)!;
    const ins = Object.values(inputs.get(id)!);
    if (def.category === 'signal') {
      scope.set(id, p.model as string);
      continue;
    }
    const scopes = [...new Set(ins.map(outputScope).filter((s): s is string => s !== null))];
    if (def.category === 'decision' || def.category === 'receive') {
      const foreign = scopes.filter((s) => s !== p.model);
      if (foreign.length) {
        issues.push(
          issue(
            id,
            'wrong_model_scope',
            `Decides on "${p.model}" but reads signals of "${foreign.join('", "')}".`,
            `Read signals set to "${p.model}", or set this node's model to "${foreign[0]}".`,
          ),
        );
      }
      scope.set(id, p.model as string);
      continue;
    }
    if (scopes.length > 1) {
      issues.push(
        issue(
          id,
          'mixed_models',
          `Combines signals of "${scopes.join('" and "')}", which never exist in the same step.`,
          'Feed it signals of one model, or carry the other through a memory node.',
        ),
      );
    }
    scope.set(id, scopes[0] ?? null);
  }
  return scope;
}

interface Structure {
  entry: string | null;
  reachable: Set<string>;
  /** Per model, decision node ids in the order they are tried. */
  decisions: Map<string, string[]>;
  receive: Record<string, string>;
}

/** Start, decisions per model, the models a request can reach from the entry, and one receive policy per model. */
function structure(known: KnownNodes, inputs: Inputs, issues: IrIssue[]): Structure {
  const starts = [...known.values()].filter((k) => k.def.category === 'start');
  if (starts.length === 0) issues.push(issue(null, 'missing_start', 'The graph has no Start node.', 'Add a Start node and choose the entry model.'));
  for (const extra of starts.slice(1)) issues.push(issue(extra.node.id, 'duplicate_start', 'A graph has exactly one Start node.', 'Delete this Start node.'));
  // Ties break by id, not document position: the IR's node order differs from the designer's.
  const byPriority = (a: string, b: string) =>
    (known.get(a)!.params.priority as number) - (known.get(b)!.params.priority as number) || (a < b ? -1 : a > b ? 1 : 0);
  const decisions = new Map<string, string[]>();
  for (const { node, def, params } of known.values()) {
    if (def.category !== 'decision') continue;
    const m = params.model as string;
    decisions.set(m, [...(decisions.get(m) ?? []), node.id]);
  }
  for (const list of decisions.values()) list.sort(byPriority);

  const entry = starts.length ? (starts[0].params.model as string) : null;
  const reachable = new Set<string>();
  const cameFrom = new Map<string, string>();
  if (entry !== null) {
    const queue = [entry];
    reachable.add(entry);
    while (queue.length) {
      const m = queue.shift()!;
      for (const d of decisions.get(m) ?? []) {
        for (const t of routeTargets(routeOf(known.get(d)!)!)) {
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
      issues.push(
        issue(
          at,
          'missing_decision',
          `Model "${m}" ${how} but has no decision: route() would have nothing to run there.`,
          `Add a Stay, Hand off or Hand back node on model "${m}".`,
        ),
      );
    }
  }
  for (const [m, list] of decisions) {
    if (!reachable.has(m)) {
      for (const d of list)
        issues.push(
          issue(
            d,
            'unreachable_decision',
            `No request ever reaches "${m}", so this decision never runs.`,
            `Hand off to "${m}" from a reachable model, or delete this node.`,
            'warning',
          ),
        );
      continue;
    }
    // A decision that counts calls (`after`) or has a condition may not fire; the first that always does shadows the rest.
    const always = list.findIndex((d) => {
      const r = routeOf(known.get(d)!)!;
      return !('after' in r && r.after !== undefined) && !Object.hasOwn(inputs.get(d)!, 'when');
    });
    for (const d of list.slice(always < 0 ? list.length : always + 1)) {
      issues.push(
        issue(
          d,
          'shadowed_decision',
          `${list[always]} always fires first on "${m}", so this decision never runs.`,
          `Give this node a lower priority number than ${list[always]}, or connect a condition to ${list[always]}.`,
          'warning',
        ),
      );
    }
  }
  const receive: Record<string, string> = {};
  for (const { node, def, params } of [...known.values()].sort((a, b) => a.index - b.index)) {
    if (def.category !== 'receive') continue;
    const m = params.model as string;
    if (Object.hasOwn(receive, m))
      issues.push(issue(node.id, 'duplicate_receive', `Model "${m}" already has receive policy ${receive[m]}.`, 'Keep one receive node per model.'));
    else if (reachable.has(m)) receive[m] = node.id;
  }
  return { entry, reachable, decisions, receive };
}

function rank(order: readonly string[], m: string): number {
  const i = order.indexOf(m);
  return i < 0 ? order.length : i;
}

/** Kahn's algorithm over the dependency edges (reads of a memory's `prev` excluded); reports one cycle if any. */
function topologicalOrder(known: KnownNodes, inputs: Inputs, issues: IrIssue[]): string[] | null {
  const deps = new Map<string, string[]>();
  const users = new Map<string, string[]>();
  for (const id of known.keys()) users.set(id, []);
  for (const [id, slots] of inputs) {
    const d = Object.values(slots)
      .filter((ref) => !isCycleBreaking(known.get(ref.node)!.def, ref.port))
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
  const path = [...cycle]
    .reverse()
    .concat(cycle[cycle.length - 1])
    .join(' → ');
  for (const id of cycle) {
    issues.push(issue(id, 'cycle', `Part of a loop: ${path}.`, "Break the loop, or read the memory node's prev output instead of value."));
  }
  return null;
}
