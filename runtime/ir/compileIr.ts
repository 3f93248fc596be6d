// IR → Algorithm: validates the IR once, then composes route/send/receive from the node modules' closures. No code is ever generated or evaluated.
import { standardSend, type Algorithm, type Handoff, type LocalState, type ModelId, type RouteInput, type StepWants } from '../../shared/algorithm.ts';
import type { AnalyzedNode, Program } from '../../shared/ir/analyzeGraph.ts';
import type { IrPortRef } from '../../shared/ir/irSchema.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import { issue, type IrIssue } from '../../shared/ir/irIssue.ts';
import type { NodeRegistry } from '../../shared/ir/nodeRegistry.ts';
import type { BoolFn, Guard, NumFn } from '../../shared/ir/nodeTypeDef.ts';
import { validateIr } from '../../shared/ir/validateIr.ts';
import { isIrMeta, type IrMeta } from './irMeta.ts';
import { boolExpr, guardOf, isLeaf, memoryOp, numExpr, passes, sharedOp, type ExprContext, type Frame, type StepOp } from './operators.ts';

export interface CompileIrOptions {
  /** The deployed models; when given, every model and head the IR names must be among them. */
  models?: readonly ModelCatalogEntry[];
  /** Token texts by model (index = token id), for Token-match nodes that match text. */
  vocab?: Readonly<Record<string, readonly string[]>>;
  /** The node types; the product's registry by default. */
  registry?: NodeRegistry;
}

/** An IR that cannot be deployed; `details` carries one issue per broken rule. */
export class IrCompileError extends Error {
  override readonly name = 'IrCompileError';
  constructor(readonly details: IrIssue[]) {
    super(`invalid IR: ${details.map((d) => `${d.nodeId ?? 'graph'}: ${d.code}`).join('; ')}`);
  }
}

/** One decision node, resolved: every decision has this one shape, so route() reads them without polymorphism. */
interface Decision {
  /** The condition as data when its node offers a Guard; else `when` (null: always). */
  test: Guard | null;
  when: BoolFn | null;
  /** Fires only from this consecutive call on the model in one visit (0: any). */
  after: number;
  /** Target when not drawn; 0 stays. */
  to: ModelId;
  keep: boolean;
  /** A draw: picks ids[j] for the first cumulative[j] above u (u null: the seeded draw). */
  draw: boolean;
  u: NumFn | null;
  ids: ModelId[];
  cumulative: number[];
}

interface Plan {
  /** Memory updates and shared values, in IR order; empty for most graphs. */
  ops: StepOp[];
  decisions: Decision[];
}

/** Compiles and returns the algorithm; throws IrCompileError when the IR breaks any rule. */
export function compileIr(ir: unknown, options: CompileIrOptions = {}): Algorithm<IrMeta> {
  const r = tryCompileIr(ir, options);
  if (!r.ok) throw new IrCompileError(r.issues);
  return r.algorithm;
}

export type TryCompileIr = { ok: true; algorithm: Algorithm<IrMeta>; issues: IrIssue[] } | { ok: false; issues: IrIssue[] };

/** As compileIr, but answers with the issues instead of throwing. Never throws. */
export function tryCompileIr(ir: unknown, options: CompileIrOptions = {}): TryCompileIr {
  const checked = validateIr(ir, options.models ?? null, options.registry);
  if (!checked.ok) return checked;
  const vocabs = options.vocab ?? {};
  const vocab = (model: string | null): readonly string[] | undefined => (model !== null && Object.hasOwn(vocabs, model) ? vocabs[model] : undefined);
  const issues: IrIssue[] = [...checked.issues];
  for (const n of checked.program.nodes) {
    const need = (n.def.category === 'constant' || n.def.category === 'logic') && n.def.needsVocab?.(n.params);
    if (need && !vocab(n.scope)) {
      issues.push(issue(n.id, 'needs_vocab', `${need.reason} needs the vocabulary of "${n.scope ?? ''}", which this server did not provide.`, need.fix));
    }
  }
  if (issues.some((i) => i.severity === 'error')) return { ok: false, issues };
  return { ok: true, algorithm: build(checked.program, checked.ir.name, (m) => vocab(m) ?? []), issues };
}

function build(program: Program, name: string, vocab: ExprContext['vocab']): Algorithm<IrMeta> {
  const { models } = program;
  const idOf = (m: string): ModelId => models.indexOf(m) + 1;
  const byId = new Map(program.nodes.map((n) => [n.id, n]));

  // Memory nodes get a place in `mem` (after this step's update) and `prev` (before it).
  const memIndex = new Map<string, number>();
  const memNodes: AnalyzedNode[] = [];
  for (const n of program.nodes) {
    if (n.def.category !== 'memory') continue;
    memIndex.set(n.id, memNodes.length);
    memNodes.push(n);
  }
  const initialMem = memNodes.map((n) => (n.def.category === 'memory' ? n.def.initial(n.params) : 0));
  const { sharedSlot, layouts } = sharing(program, byId, memNodes);
  const frame: Frame = { mem: new Float64Array(memNodes.length), prev: new Float64Array(memNodes.length), num: new Float64Array(sharedSlot.size) };

  const plans: Plan[] = models.map((m, i) => {
    const { active, shared } = layouts[i];
    const ctx: ExprContext = {
      frame,
      node: (id) => byId.get(id)!,
      memory: (id) => memIndex.get(id)!,
      shared: (id) => (shared.has(id) ? sharedSlot.get(id)! : -1),
      vocab,
    };
    // Side effects of a step, in evaluation order: memory updates and shared values.
    const ops: StepOp[] = [];
    for (const n of program.nodes) {
      if (active.has(n)) {
        const op = memoryOp(n, ctx);
        if (op) ops.push(op);
      } else if (shared.has(n.id)) ops.push(sharedOp(n, sharedSlot.get(n.id)!, ctx));
    }
    return { ops, decisions: program.routes[m].map((id) => decision(byId.get(id)!, ctx, idOf)) };
  });

  const resetOnArrival: (readonly number[] | null)[] = models.map((m) => {
    const id = Object.hasOwn(program.receive, m) ? program.receive[m] : undefined;
    const n = id ? byId.get(id) : undefined;
    const reset = n?.def.category === 'receive' && n.def.resetOnArrival ? n.def.resetOnArrival(n.params).map((r) => memIndex.get(r)!) : [];
    return reset.length ? reset : null;
  });

  const initMeta = (): IrMeta => ({ mem: initialMem.slice(), keep: true, at: 0, run: 0 });

  const wants: Record<ModelId, Partial<StepWants>> = {};
  for (const m of models) {
    const w = program.wants[m];
    if (w.topK || w.hidden || w.heads.length) wants[idOf(m)] = { topK: w.topK, hidden: w.hidden, heads: [...w.heads] };
  }

  return {
    name,
    models: [...models],
    entry: idOf(program.entry),
    wants,
    initMeta,
    route: router(plans, frame, initMeta),
    send: (req) => standardSend(req, req.meta.keep === true),
    receive(handoff: Handoff<IrMeta>): LocalState<IrMeta> {
      const reset = resetOnArrival[handoff.to - 1];
      const given = handoff.meta;
      if (isIrMeta(given, memNodes.length)) {
        // Nothing to restart: accept the peer's metadata as it is, as the default receive does.
        if (!reset) return { meta: given };
        const meta: IrMeta = { ...given, mem: given.mem.slice() };
        for (const i of reset) meta.mem[i] = initialMem[i];
        return { meta };
      }
      const meta = initMeta();
      if (reset) for (const i of reset) meta.mem[i] = initialMem[i];
      return { meta };
    },
  };
}

/**
 * Per model: which nodes a step reads, and which of them more than one reader shares. A shared node
 * (other than a signal or constant, which are cheaper to repeat) is computed once per step into a
 * slot; every other node is composed into its single reader, so a step evaluates only what the
 * decision it reaches needs, and the closure tree stays as large as the graph.
 */
function sharing(program: Program, byId: ReadonlyMap<string, AnalyzedNode>, memNodes: readonly AnalyzedNode[]) {
  const sharedSlot = new Map<string, number>();
  const layouts = program.models.map((m) => {
    const active = memNodes.filter((n) => n.scope === null || n.scope === m);
    const readers = new Map<string, number>();
    const visit = (ref: IrPortRef): void => {
      const n = byId.get(ref.node)!;
      const count = (readers.get(n.id) ?? 0) + 1;
      readers.set(n.id, count);
      if (count === 1 && n.def.category !== 'memory') for (const r of Object.values(n.inputs)) visit(r);
    };
    for (const id of program.routes[m]) for (const r of Object.values(byId.get(id)!.inputs)) visit(r);
    for (const n of active) for (const r of Object.values(n.inputs)) visit(r);
    const shared = new Set<string>();
    for (const [id, count] of readers) {
      const n = byId.get(id)!;
      if (count > 1 && n.def.category !== 'memory' && !isLeaf(n)) {
        shared.add(id);
        if (!sharedSlot.has(id)) sharedSlot.set(id, sharedSlot.size);
      }
    }
    return { active: new Set(active), shared };
  });
  return { sharedSlot, layouts };
}

/** route(): loads memory, runs the step's ops, then tries the model's decisions in order; the first that fires wins. */
function router(plans: readonly Plan[], frame: Frame, initMeta: () => IrMeta): (input: RouteInput<IrMeta>) => ModelId {
  const { mem, prev } = frame;
  const memCount = mem.length;
  return (input) => {
    const plan = plans[input.model - 1];
    if (!plan || typeof input.meta !== 'object' || input.meta === null) return 0;
    // Metadata from another algorithm version cannot be trusted: start it afresh.
    if (!isIrMeta(input.meta, memCount)) Object.assign(input.meta as object, initMeta());
    const meta = input.meta;
    if (meta.at !== input.model) {
      meta.at = input.model;
      meta.run = 0;
    }
    meta.run++;
    const values = meta.mem;
    for (let i = 0; i < memCount; i++) {
      mem[i] = values[i];
      prev[i] = values[i];
    }
    const { ops, decisions } = plan;
    for (let i = 0; i < ops.length; i++) ops[i](input);
    let target = 0;
    let keep = true;
    for (let i = 0; i < decisions.length; i++) {
      const d = decisions[i];
      // meta.run counts the consecutive calls on this model.
      if (meta.run < d.after) continue;
      if (d.test !== null ? !passes(d.test, input) : d.when !== null && !d.when(input)) continue;
      keep = d.keep;
      if (!d.draw) {
        target = d.to;
        break;
      }
      let u = d.u !== null ? d.u(input) : input.draw;
      if (!(u >= 0)) u = 0;
      const { ids, cumulative } = d;
      let pick = ids[ids.length - 1];
      for (let j = 0; j < cumulative.length; j++) {
        if (u < cumulative[j]) {
          pick = ids[j];
          break;
        }
      }
      target = pick === input.model ? 0 : pick;
      break;
    }
    for (let i = 0; i < memCount; i++) values[i] = mem[i];
    meta.keep = keep;
    return target;
  };
}

/** One decision node, resolved against the plan's closures. */
function decision(n: AnalyzedNode, ctx: ExprContext, idOf: (m: string) => ModelId): Decision {
  const guarded = Object.hasOwn(n.inputs, 'when');
  const test = guarded ? guardOf(n.inputs.when, ctx) : null;
  const route = n.def.category === 'decision' ? n.def.route(n.params) : { to: null, keep: true };
  const d: Decision = {
    test,
    when: guarded && test === null ? boolExpr(n.inputs.when, ctx) : null,
    after: 0,
    to: 0,
    keep: route.keep,
    draw: false,
    u: null,
    ids: [],
    cumulative: [],
  };
  if ('weights' in route) {
    d.draw = true;
    const w = route.weights;
    let acc = 0;
    for (const model of Object.keys(w)) {
      if (!(w[model] > 0)) continue;
      acc += w[model];
      d.ids.push(idOf(model));
      d.cumulative.push(acc);
    }
    for (let i = 0; i < d.cumulative.length; i++) d.cumulative[i] /= acc;
    d.u = Object.hasOwn(n.inputs, route.u) ? numExpr(n.inputs[route.u], ctx) : null;
  } else {
    d.to = route.to === null ? 0 : idOf(route.to);
    d.after = route.after ?? 0;
  }
  return d;
}
