// Reference IR interpreter for the differential test: shared/ir/README.md's evaluation done the plain way, every node in scope in IR order, every step.
// Slow and obvious on purpose; runtime/ir/compileIr.ts must answer exactly as this does.
import { standardSend, type Algorithm, type Handoff, type LocalState, type ModelId } from '../../shared/algorithm.ts';
import type { ModelCatalogEntry } from '../../shared/ir/checkParams.ts';
import { validateIr } from '../../shared/ir/validateIr.ts';
import { isIrMeta, type IrMeta } from '../../runtime/ir/irMeta.ts';

interface Dist {
  ids: readonly number[];
  probs: readonly number[];
  k: number;
}

const COMPARE: Record<string, (a: number, b: number) => boolean> = {
  '>': (a, b) => a > b,
  '>=': (a, b) => a >= b,
  '<': (a, b) => a < b,
  '<=': (a, b) => a <= b,
  '==': (a, b) => a === b,
  '!=': (a, b) => a !== b,
};
const ARITH: Record<string, (a: number, b: number) => number> = {
  '+': (a, b) => a + b,
  '-': (a, b) => a - b,
  '*': (a, b) => a * b,
  '/': (a, b) => (b === 0 ? 0 : a / b),
};
const SIGNAL_FIELD: Record<string, 'entropy' | 'maxProb' | 'margin' | 'tokenProb' | 'stepsHere' | 'position' | 'generated' | 'draw' | 'token'> = {
  entropy: 'entropy',
  maxProb: 'maxProb',
  margin: 'margin',
  tokenProb: 'tokenProb',
  stepsHere: 'stepsHere',
  position: 'position',
  generated: 'generated',
  draw: 'draw',
  sampledToken: 'token',
};

/** Token-match nodes match by ids only here (the differential test's graphs carry no text). */
export function referenceAlgorithm(ir: unknown, catalog: readonly ModelCatalogEntry[]): Algorithm<IrMeta> {
  const checked = validateIr(ir, catalog);
  if (!checked.ok) throw new Error(`invalid IR: ${checked.issues.map((i) => i.code).join(', ')}`);
  const { program } = checked;
  const { models } = program;
  const idOf = (m: string): ModelId => models.indexOf(m) + 1;
  const byId = new Map(program.nodes.map((n) => [n.id, n]));
  const memNodes = program.nodes.filter((n) => n.def.category === 'memory');
  const memIndex = new Map(memNodes.map((n, i) => [n.id, i]));
  const initialMem = memNodes.map((n) => n.params.value as number);
  const initMeta = (): IrMeta => ({ mem: initialMem.slice(), keep: true, at: 0, run: 0 });

  return {
    name: checked.ir.name,
    models: [...models],
    entry: idOf(program.entry),
    initMeta,
    route(input) {
      const m = models[input.model - 1];
      if (m === undefined || typeof input.meta !== 'object' || input.meta === null) return 0;
      if (!isIrMeta(input.meta, memNodes.length)) Object.assign(input.meta as object, initMeta());
      const meta = input.meta;
      if (meta.at !== input.model) {
        meta.at = input.model;
        meta.run = 0;
      }
      meta.run++;
      // Numbers, booleans (0/1) and tokens by "node.port", as a Float64Array slot would hold them.
      const num = new Map<string, number>();
      const dist = new Map<string, Dist>();
      const mem = Float64Array.from(meta.mem);
      for (const n of memNodes) num.set(`${n.id}.prev`, mem[memIndex.get(n.id)!]);
      for (const n of program.nodes) {
        const memory = n.def.category === 'memory';
        if (!memory && n.scope !== null && n.scope !== m) continue;
        const has = (port: string): boolean => Object.hasOwn(n.inputs, port);
        const read = (port: string): number => num.get(`${n.inputs[port].node}.${n.inputs[port].port}`)!;
        const readDist = (): Dist => dist.get(`${n.inputs.dist.node}.${n.inputs.dist.port}`) ?? { ids: [], probs: [], k: 0 };
        const out = (v: unknown): void => void num.set(`${n.id}.out`, Float64Array.of(v as number)[0]);
        const p = n.params;
        if (Object.hasOwn(SIGNAL_FIELD, n.type)) {
          out(input[SIGNAL_FIELD[n.type]]);
          continue;
        }
        switch (n.type) {
          case 'head':
            out(Object.hasOwn(input.heads, p.head as string) ? Number(input.heads[p.head as string]) : Number.NaN);
            break;
          case 'distribution':
            dist.set(`${n.id}.out`, { ids: input.topIds, probs: input.topProbs, k: Math.min(p.topK as number, input.topIds.length, input.topProbs.length) });
            break;
          case 'constant':
          case 'flag':
            out(Number(p.value));
            break;
          case 'compare':
            out(COMPARE[p.op as string](read('a'), has('b') ? read('b') : (p.value as number)) ? 1 : 0);
            break;
          case 'and':
            out(read('a') && read('b') ? 1 : 0);
            break;
          case 'or':
            out(read('a') || read('b') ? 1 : 0);
            break;
          case 'not':
            out(read('a') ? 0 : 1);
            break;
          case 'arith':
            out(ARITH[p.op as string](read('a'), has('b') ? read('b') : (p.value as number)));
            break;
          case 'minMax':
            out((p.op === 'min' ? Math.min : Math.max)(read('a'), read('b')));
            break;
          case 'tokenMatch':
            out(new Set(p.ids as number[]).has(read('token')) ? 1 : 0);
            break;
          case 'topKMass': {
            const d = readDist();
            let s = 0;
            for (let i = 0; i < Math.min(p.k as number, d.k); i++) s += d.probs[i];
            out(s);
            break;
          }
          case 'probOf': {
            const d = readDist();
            const token = read('token');
            let prob = 0;
            for (let i = 0; i < d.k; i++) {
              if (d.ids[i] === token) {
                prob = d.probs[i];
                break;
              }
            }
            out(prob);
            break;
          }
          case 'counter':
          case 'movingAverage': {
            const i = memIndex.get(n.id)!;
            if (n.scope === null || n.scope === m) {
              const reset = has('reset') && read('reset');
              if (n.type === 'counter') {
                let v = mem[i];
                if (reset) v = p.value as number;
                else if (!has('inc') || read('inc')) v += p.step as number;
                if (Number.isFinite(v)) mem[i] = v;
              } else if (reset) mem[i] = p.value as number;
              else {
                const alpha = p.alpha as number;
                const v = alpha * read('x') + (1 - alpha) * mem[i];
                if (Number.isFinite(v)) mem[i] = v;
              }
            }
            num.set(`${n.id}.value`, mem[i]);
            break;
          }
        }
      }
      let target = 0;
      let keep = true;
      for (const id of program.routes[m]) {
        const d = byId.get(id)!;
        const p = d.params;
        const when = Object.hasOwn(d.inputs, 'when') ? num.get(`${d.inputs.when.node}.${d.inputs.when.port}`) : 1;
        if (!when) continue;
        if (d.type === 'handBack' && meta.run < (p.after as number)) continue;
        if (d.type === 'handoff') {
          target = idOf(p.to as string);
          keep = p.keep as boolean;
        } else if (d.type === 'handBack') {
          target = idOf(p.to as string);
        } else if (d.type === 'drawModel') {
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
          let u = Object.hasOwn(d.inputs, 'u') ? num.get(`${d.inputs.u.node}.${d.inputs.u.port}`)! : input.draw;
          if (!(u >= 0)) u = 0;
          let pick = ids[ids.length - 1];
          for (let i = 0; i < cumulative.length; i++) {
            if (u < cumulative[i] / acc) {
              pick = ids[i];
              break;
            }
          }
          target = pick === input.model ? 0 : pick;
          keep = p.keep as boolean;
        }
        break;
      }
      for (let i = 0; i < memNodes.length; i++) meta.mem[i] = mem[i];
      meta.keep = keep;
      return target;
    },
    send: (req) => standardSend(req, req.meta.keep === true),
    receive(handoff: Handoff<IrMeta>): LocalState<IrMeta> {
      const meta: IrMeta = isIrMeta(handoff.meta, memNodes.length) ? { ...handoff.meta, mem: handoff.meta.mem.slice() } : initMeta();
      const m = models[handoff.to - 1];
      const rc = m !== undefined && Object.hasOwn(program.receive, m) ? byId.get(program.receive[m]) : undefined;
      if (rc?.type === 'receiveCommit') for (const id of rc.params.reset as string[]) meta.mem[memIndex.get(id)!] = initialMem[memIndex.get(id)!];
      return { meta };
    },
  };
}
