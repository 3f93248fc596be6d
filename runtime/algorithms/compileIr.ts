// IR → Algorithm: validates the IR once, then composes route/send/receive from prebuilt operators. No code is ever generated or evaluated.
import { standardSend, type Algorithm, type Handoff, type LocalState, type ModelId, type StepWants } from '../../shared/algorithm.ts';
import type { AnalyzedNode, Program } from '../../shared/ir/analyzeGraph.ts';
import type { IrPortRef } from '../../shared/ir/irSchema.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import { issue, type IrIssue } from '../../shared/ir/irIssue.ts';
import { validateIr } from '../../shared/ir/validateIr.ts';
import { isIrMeta, type IrMeta } from './irMeta.ts';
import { boolExpr, isLeaf, memoryInitial, memoryOp, numExpr, passes, sharedOp, signalTest, type BoolFn, type ExprContext, type Frame, type NumFn, type SignalTest, type StepOp } from './operators.ts';

export interface CompileIrOptions {
  /** The deployed models; when given, every model and head the IR names must be among them. */
  models?: readonly ModelCatalogEntry[];
  /** Token texts by model (index = token id), for Token-match nodes that match text. */
  vocab?: Readonly<Record<string, readonly string[]>>;
}

/** An IR that cannot be deployed; `details` carries one issue per broken rule. */
export class IrCompileError extends Error {
  override readonly name = 'IrCompileError';
  constructor(readonly details: IrIssue[]) {
    super(`invalid IR: ${details.map((d) => `${d.nodeId ?? 'graph'}: ${d.code}`).join('; ')}`);
  }
}

const STAY = 0;
const HANDOFF = 1;
const HAND_BACK = 2;
const DRAW_MODEL = 3;

/** One decision node, resolved: every decision has this one shape, so route() reads them without polymorphism. */
interface Decision {
  type: typeof STAY | typeof HANDOFF | typeof HAND_BACK | typeof DRAW_MODEL;
  /** Guard as data when it is a signal-vs-constant Compare; else `when` (null: always). */
  test: SignalTest | null;
  when: BoolFn | null;
  to: ModelId;
  keep: boolean;
  after: number;
  u: NumFn | null;
  ids: ModelId[];
  cumulative: number[];
}

interface Plan {
  /** Memory updates and shared values, in IR order; empty for most graphs. */
  ops: StepOp[];
  decisions: Decision[];
}

const MAX_VOCAB = 1 << 20;

/** Compiles and returns the algorithm; throws IrCompileError when the IR breaks any rule. */
export function compileIr(ir: unknown, options: CompileIrOptions = {}): Algorithm<IrMeta> {
  const r = tryCompileIr(ir, options);
  if (!r.ok) throw new IrCompileError(r.issues);
  return r.algorithm;
}

export type TryCompileIr = { ok: true; algorithm: Algorithm<IrMeta>; issues: IrIssue[] } | { ok: false; issues: IrIssue[] };

/** As compileIr, but answers with the issues instead of throwing. Never throws. */
export function tryCompileIr(ir: unknown, options: CompileIrOptions = {}): TryCompileIr {
  const checked = validateIr(ir, options.models ?? null);
  if (!checked.ok) return checked;
  const tokenSets = new Map<string, Set<number>>();
  const issues: IrIssue[] = [...checked.issues];
  for (const n of checked.program.nodes) {
    if (n.type !== 'tokenMatch') continue;
    const set = new Set(n.params.ids as number[]);
    const text = n.params.text as string;
    if (text) {
      const model = n.scope ?? '';
      const vocab = options.vocab && Object.hasOwn(options.vocab, model) ? options.vocab[model] : undefined;
      if (!vocab) {
        issues.push(issue(n.id, 'needs_vocab', `Matching text "${text}" needs the vocabulary of "${model}", which this server did not provide.`, 'Match token ids instead of text.'));
        continue;
      }
      const exact = n.params.match === 'exact';
      for (let id = 0; id < Math.min(vocab.length, MAX_VOCAB); id++) {
        const t = vocab[id];
        if (typeof t === 'string' && (exact ? t.trim() === text.trim() : t.includes(text))) set.add(id);
      }
    }
    tokenSets.set(n.id, set);
  }
  if (issues.some((i) => i.severity === 'error')) return { ok: false, issues };
  return { ok: true, algorithm: build(checked.program, checked.ir.name, tokenSets), issues };
}

function build(program: Program, name: string, tokenSets: ReadonlyMap<string, ReadonlySet<number>>): Algorithm<IrMeta> {
  const { models } = program;
  const idOf = (m: string): ModelId => models.indexOf(m) + 1;
  const byId = new Map(program.nodes.map((n) => [n.id, n]));

  // Memory nodes get a place in `mem` (after this step's update) and `prev` (before it).
  const memIndex = new Map<string, number>();
  const memNodes: AnalyzedNode[] = [];
  for (const n of program.nodes) {
    if (n.spec.category !== 'memory') continue;
    memIndex.set(n.id, memNodes.length);
    memNodes.push(n);
  }
  const memCount = memNodes.length;
  const initialMem = memNodes.map(memoryInitial);

  // Per model: which nodes a step reads, and which of them more than one reader shares. A shared node
  // (other than a signal or constant, which are cheaper to repeat) is computed once per step into a
  // slot; every other node is composed into its single reader, so a step evaluates only what the
  // decision it reaches needs, and the closure tree stays as large as the graph.
  const sharedSlot = new Map<string, number>();
  const layouts = models.map((m) => {
    const active = memNodes.filter((n) => n.scope === null || n.scope === m);
    const readers = new Map<string, number>();
    const visit = (ref: IrPortRef): void => {
      const n = byId.get(ref.node)!;
      const count = (readers.get(n.id) ?? 0) + 1;
      readers.set(n.id, count);
      if (count === 1 && n.spec.category !== 'memory') for (const r of Object.values(n.inputs)) visit(r);
    };
    for (const id of program.routes[m]) for (const r of Object.values(byId.get(id)!.inputs)) visit(r);
    for (const n of active) for (const r of Object.values(n.inputs)) visit(r);
    const shared = new Set<string>();
    for (const [id, count] of readers) {
      const n = byId.get(id)!;
      if (count > 1 && n.spec.category !== 'memory' && !isLeaf(n)) {
        shared.add(id);
        if (!sharedSlot.has(id)) sharedSlot.set(id, sharedSlot.size);
      }
    }
    return { active: new Set(active), shared };
  });

  const frame: Frame = { mem: new Float64Array(memCount), prev: new Float64Array(memCount), num: new Float64Array(sharedSlot.size) };

  const plans: Plan[] = models.map((m, i) => {
    const { active, shared } = layouts[i];
    const ctx: ExprContext = {
      frame,
      node: (id) => byId.get(id)!,
      memory: (id) => memIndex.get(id)!,
      shared: (id) => (shared.has(id) ? sharedSlot.get(id)! : -1),
      tokenSet: (id) => tokenSets.get(id),
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
    const reset = n?.type === 'receiveCommit' ? (n.params.reset as string[]).map((r) => memIndex.get(r)!) : [];
    return reset.length ? reset : null;
  });

  const initMeta = (): IrMeta => ({ mem: initialMem.slice(), keep: true, at: 0, run: 0 });

  const wants: Record<ModelId, Partial<StepWants>> = {};
  for (const m of models) {
    const w = program.wants[m];
    if (w.topK || w.hidden || w.heads.length) wants[idOf(m)] = { topK: w.topK, hidden: w.hidden, heads: [...w.heads] };
  }

  const { mem, prev } = frame;
  return {
    name,
    models: [...models],
    entry: idOf(program.entry),
    wants,
    initMeta,
    route(input) {
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
        // Hand back fires on the after-th consecutive call on this model (meta.run counts them).
        if (d.type === HAND_BACK && meta.run < d.after) continue;
        if (d.test !== null ? !passes(d.test, input) : d.when !== null && !d.when(input)) continue;
        if (d.type === HANDOFF) {
          target = d.to;
          keep = d.keep;
        } else if (d.type === HAND_BACK) {
          target = d.to;
        } else if (d.type === DRAW_MODEL) {
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
          keep = d.keep;
        }
        break;
      }
      for (let i = 0; i < memCount; i++) values[i] = mem[i];
      meta.keep = keep;
      return target;
    },
    send: (req) => standardSend(req, req.meta.keep === true),
    receive(handoff: Handoff<IrMeta>): LocalState<IrMeta> {
      const reset = resetOnArrival[handoff.to - 1];
      const given = handoff.meta;
      if (isIrMeta(given, memCount)) {
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

/** One decision node, resolved against the plan's closures. */
function decision(n: AnalyzedNode, ctx: ExprContext, idOf: (m: string) => ModelId): Decision {
  const p = n.params;
  const guarded = Object.hasOwn(n.inputs, 'when');
  const test = guarded ? signalTest(n.inputs.when, ctx) : null;
  const d: Decision = {
    type: STAY,
    test,
    when: guarded && test === null ? boolExpr(n.inputs.when, ctx) : null,
    to: 0,
    keep: true,
    after: 0,
    u: null,
    ids: [],
    cumulative: [],
  };
  switch (n.type) {
    case 'handoff':
      d.type = HANDOFF;
      d.to = idOf(p.to as string);
      d.keep = p.keep as boolean;
      break;
    case 'handBack':
      d.type = HAND_BACK;
      d.to = idOf(p.to as string);
      d.after = p.after as number;
      break;
    case 'drawModel': {
      d.type = DRAW_MODEL;
      const w = p.weights as Record<string, number>;
      let acc = 0;
      for (const model of Object.keys(w)) {
        if (!(w[model] > 0)) continue;
        acc += w[model];
        d.ids.push(idOf(model));
        d.cumulative.push(acc);
      }
      for (let i = 0; i < d.cumulative.length; i++) d.cumulative[i] /= acc;
      d.u = Object.hasOwn(n.inputs, 'u') ? numExpr(n.inputs.u, ctx) : null;
      d.keep = p.keep as boolean;
      break;
    }
  }
  return d;
}
