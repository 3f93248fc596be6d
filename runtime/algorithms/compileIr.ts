// IR → Algorithm: validates the IR once, then composes route/send/receive from prebuilt operators. No code is ever generated or evaluated.
import { standardSend, type Algorithm, type Handoff, type LocalState, type ModelId, type RouteInput, type StepWants } from '../../shared/algorithm.ts';
import type { AnalyzedNode, Program } from '../../shared/ir/analyzeGraph.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import { issue, type IrIssue } from '../../shared/ir/irIssue.ts';
import { validateIr } from '../../shared/ir/validateIr.ts';
import { isIrMeta, type IrMeta } from './irMeta.ts';
import { buildOp, memoryInitial, type Dist, type Frame, type Op, type SlotMap } from './operators.ts';

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

type Decision =
  | { type: 'stay'; when: number }
  | { type: 'handoff'; when: number; to: ModelId; keep: boolean }
  | { type: 'handBack'; when: number; to: ModelId; after: number }
  | { type: 'drawModel'; when: number; u: number; ids: ModelId[]; cumulative: number[]; keep: boolean };

interface Plan {
  ops: Op[];
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

  // Slots: every output port gets one; memory nodes also get a place in `mem`.
  const numSlots = new Map<string, number>();
  const distSlots = new Map<string, number>();
  const memIndex = new Map<string, number>();
  const memNodes: AnalyzedNode[] = [];
  for (const n of program.nodes) {
    for (const port of n.spec.outputs) {
      const key = `${n.id}\u0000${port.name}`;
      if (port.type === 'distribution') distSlots.set(key, distSlots.size);
      else numSlots.set(key, numSlots.size);
    }
    if (n.spec.category === 'memory') {
      memIndex.set(n.id, memNodes.length);
      memNodes.push(n);
    }
  }
  const slots: SlotMap = {
    out: (node, port) => numSlots.get(`${node}\u0000${port}`) ?? distSlots.get(`${node}\u0000${port}`) ?? -1,
    memory: (node) => memIndex.get(node)!,
  };
  const initialMem = memNodes.map(memoryInitial);
  const prevSlots = memNodes.map((n) => slots.out(n.id, 'prev'));

  const plans: Plan[] = models.map((m) => {
    const ops: Op[] = [];
    for (const n of program.nodes) {
      const memory = n.spec.category === 'memory';
      if (!memory && n.scope !== null && n.scope !== m) continue;
      const op = buildOp(n, { slots, memoryActive: n.scope === null || n.scope === m, tokenSet: tokenSets.get(n.id) });
      if (op) ops.push(op);
    }
    const byId = new Map(program.nodes.map((n) => [n.id, n]));
    const decisions = program.routes[m].map((id): Decision => {
      const n = byId.get(id)!;
      const when = Object.hasOwn(n.inputs, 'when') ? slots.out(n.inputs.when.node, n.inputs.when.port) : -1;
      const p = n.params;
      switch (n.type) {
        case 'handoff':
          return { type: 'handoff', when, to: idOf(p.to as string), keep: p.keep as boolean };
        case 'handBack':
          return { type: 'handBack', when, to: idOf(p.to as string), after: p.after as number };
        case 'drawModel': {
          const w = p.weights as Record<string, number>;
          const ids: ModelId[] = [];
          const cumulative: number[] = [];
          let acc = 0;
          for (const model of Object.keys(w)) {
            if (!(w[model] > 0)) continue;
            acc += w[model];
            ids.push(idOf(model));
            cumulative.push(acc);
          }
          const u = Object.hasOwn(n.inputs, 'u') ? slots.out(n.inputs.u.node, n.inputs.u.port) : -1;
          return { type: 'drawModel', when, u, ids, cumulative: cumulative.map((c) => c / acc), keep: p.keep as boolean };
        }
        default:
          return { type: 'stay', when };
      }
    });
    return { ops, decisions };
  });

  const resetOnArrival: (readonly number[] | null)[] = models.map((m) => {
    const id = Object.hasOwn(program.receive, m) ? program.receive[m] : undefined;
    const n = id ? program.nodes.find((x) => x.id === id) : undefined;
    return n?.type === 'receiveCommit' ? (n.params.reset as string[]).map((r) => memIndex.get(r)!) : null;
  });

  const frame: Frame = {
    input: undefined as unknown as RouteInput<IrMeta>,
    num: new Float64Array(numSlots.size),
    dist: new Array<Dist>(distSlots.size),
    mem: new Float64Array(memNodes.length),
  };
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
    route(input) {
      const plan = plans[input.model - 1];
      if (!plan || typeof input.meta !== 'object' || input.meta === null) return 0;
      // Metadata from another algorithm version cannot be trusted: start it afresh.
      if (!isIrMeta(input.meta, memNodes.length)) Object.assign(input.meta as object, initMeta());
      const meta = input.meta;
      if (meta.at !== input.model) {
        meta.at = input.model;
        meta.run = 0;
      }
      meta.run++;
      frame.input = input;
      for (let i = 0; i < memNodes.length; i++) {
        frame.mem[i] = meta.mem[i];
        frame.num[prevSlots[i]] = meta.mem[i];
      }
      for (const op of plan.ops) op(frame);
      let target = 0;
      let keep = true;
      for (const d of plan.decisions) {
        if (d.when >= 0 && !frame.num[d.when]) continue;
        if (d.type === 'handBack' && meta.run < d.after) continue;
        if (d.type === 'handoff') {
          target = d.to;
          keep = d.keep;
        } else if (d.type === 'handBack') {
          target = d.to;
        } else if (d.type === 'drawModel') {
          let u = d.u >= 0 ? frame.num[d.u] : input.draw;
          if (!(u >= 0)) u = 0;
          let pick = d.ids[d.ids.length - 1];
          for (let i = 0; i < d.cumulative.length; i++) {
            if (u < d.cumulative[i]) {
              pick = d.ids[i];
              break;
            }
          }
          target = pick === input.model ? 0 : pick;
          keep = d.keep;
        }
        break;
      }
      for (let i = 0; i < memNodes.length; i++) meta.mem[i] = frame.mem[i];
      meta.keep = keep;
      frame.input = undefined as unknown as RouteInput<IrMeta>;
      return target;
    },
    send: (req) => standardSend(req, req.meta.keep === true),
    receive(handoff: Handoff<IrMeta>): LocalState<IrMeta> {
      const meta: IrMeta = isIrMeta(handoff.meta, memNodes.length) ? { ...handoff.meta, mem: handoff.meta.mem.slice() } : initMeta();
      for (const i of resetOnArrival[handoff.to - 1] ?? []) meta.mem[i] = initialMem[i];
      return { meta };
    },
  };
}
