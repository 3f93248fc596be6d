// Prebuilt operators of the IR interpreter: one closure per node over fixed slot indexes, each bounded work per step.
import type { RouteInput } from '../../shared/algorithm.ts';
import type { AnalyzedNode } from '../../shared/ir/analyzeGraph.ts';
import type { IrMeta } from './irMeta.ts';

/** The top-k view a distribution port carries. */
export interface Dist {
  ids: readonly number[];
  probs: readonly number[];
  /** Entries usable: min(node topK, entries the runner gave). */
  k: number;
}

/** Scratch state of one route() evaluation. Numbers, booleans (0/1) and tokens share `num`. */
export interface Frame {
  input: RouteInput<IrMeta>;
  num: Float64Array;
  dist: Dist[];
  /** Memory values, loaded from meta before the step and written back after. */
  mem: Float64Array;
}

export type Op = (f: Frame) => void;

/** Where each node output and memory lives in a Frame. */
export interface SlotMap {
  /** Slot of (node, port) in `num` or `dist` (by the port's type). */
  out(node: string, port: string): number;
  /** Index of a memory node in `mem`. */
  memory(node: string): number;
}

export interface OpContext {
  slots: SlotMap;
  /** True when this plan's model updates the memory node (its inputs are live on this model). */
  memoryActive: boolean;
  /** Token ids a Token-match node accepts (ids plus text matches resolved at compile time). */
  tokenSet?: ReadonlySet<number>;
}

const EMPTY_DIST: Dist = { ids: [], probs: [], k: 0 };

/** The operator for `node`, or null for nodes that compute nothing per step (start, decisions, receive). */
export function buildOp(node: AnalyzedNode, ctx: OpContext): Op | null {
  const { slots } = ctx;
  const p = node.params;
  const inSlot = (port: string): number => {
    const ref = Object.hasOwn(node.inputs, port) ? node.inputs[port] : undefined;
    return ref ? slots.out(ref.node, ref.port) : -1;
  };
  const o = node.spec.outputs.length ? slots.out(node.id, node.spec.outputs[0].name) : -1;
  switch (node.type) {
    case 'entropy':
      return (f) => void (f.num[o] = f.input.entropy);
    case 'maxProb':
      return (f) => void (f.num[o] = f.input.maxProb);
    case 'margin':
      return (f) => void (f.num[o] = f.input.margin);
    case 'tokenProb':
      return (f) => void (f.num[o] = f.input.tokenProb);
    case 'stepsHere':
      return (f) => void (f.num[o] = f.input.stepsHere);
    case 'position':
      return (f) => void (f.num[o] = f.input.position);
    case 'generated':
      return (f) => void (f.num[o] = f.input.generated);
    case 'draw':
      return (f) => void (f.num[o] = f.input.draw);
    case 'sampledToken':
      return (f) => void (f.num[o] = f.input.token);
    case 'head': {
      const name = p.head as string;
      // A head the runner did not provide reads as NaN, and every comparison with NaN is false.
      return (f) => void (f.num[o] = Object.hasOwn(f.input.heads, name) ? Number(f.input.heads[name]) : Number.NaN);
    }
    case 'distribution': {
      const topK = p.topK as number;
      return (f) => {
        const { topIds, topProbs } = f.input;
        f.dist[o] = { ids: topIds, probs: topProbs, k: Math.min(topK, topIds.length, topProbs.length) };
      };
    }
    case 'constant':
    case 'flag': {
      const v = Number(p.value);
      return (f) => void (f.num[o] = v);
    }
    case 'compare': {
      const a = inSlot('a');
      const b = inSlot('b');
      const bv = p.value as number;
      const cmp = comparator(p.op as string);
      return (f) => void (f.num[o] = cmp(f.num[a], b < 0 ? bv : f.num[b]) ? 1 : 0);
    }
    case 'and': {
      const a = inSlot('a');
      const b = inSlot('b');
      return (f) => void (f.num[o] = f.num[a] && f.num[b] ? 1 : 0);
    }
    case 'or': {
      const a = inSlot('a');
      const b = inSlot('b');
      return (f) => void (f.num[o] = f.num[a] || f.num[b] ? 1 : 0);
    }
    case 'not': {
      const a = inSlot('a');
      return (f) => void (f.num[o] = f.num[a] ? 0 : 1);
    }
    case 'arith': {
      const a = inSlot('a');
      const b = inSlot('b');
      const bv = p.value as number;
      const fn = arithmetic(p.op as string);
      return (f) => void (f.num[o] = fn(f.num[a], b < 0 ? bv : f.num[b]));
    }
    case 'minMax': {
      const a = inSlot('a');
      const b = inSlot('b');
      const fn = p.op === 'min' ? Math.min : Math.max;
      return (f) => void (f.num[o] = fn(f.num[a], f.num[b]));
    }
    case 'tokenMatch': {
      const t = inSlot('token');
      const set = ctx.tokenSet ?? new Set<number>();
      return (f) => void (f.num[o] = set.has(f.num[t]) ? 1 : 0);
    }
    case 'topKMass': {
      const d = inSlot('dist');
      const k = p.k as number;
      return (f) => {
        const dist = f.dist[d] ?? EMPTY_DIST;
        let s = 0;
        for (let i = 0, n = Math.min(k, dist.k); i < n; i++) s += dist.probs[i];
        f.num[o] = s;
      };
    }
    case 'probOf': {
      const d = inSlot('dist');
      const t = inSlot('token');
      return (f) => {
        const dist = f.dist[d] ?? EMPTY_DIST;
        const token = f.num[t];
        let prob = 0;
        for (let i = 0; i < dist.k; i++) {
          if (dist.ids[i] === token) {
            prob = dist.probs[i];
            break;
          }
        }
        f.num[o] = prob;
      };
    }
    case 'counter': {
      const m = slots.memory(node.id);
      const value = slots.out(node.id, 'value');
      const inc = inSlot('inc');
      const reset = inSlot('reset');
      const initial = p.value as number;
      const step = p.step as number;
      if (!ctx.memoryActive) return (f) => void (f.num[value] = f.mem[m]);
      return (f) => {
        let v = f.mem[m];
        if (reset >= 0 && f.num[reset]) v = initial;
        else if (inc < 0 || f.num[inc]) v += step;
        // Memory stays finite so the metadata survives JSON as well as structured clone.
        if (Number.isFinite(v)) f.mem[m] = v;
        f.num[value] = f.mem[m];
      };
    }
    case 'movingAverage': {
      const m = slots.memory(node.id);
      const value = slots.out(node.id, 'value');
      const x = inSlot('x');
      const reset = inSlot('reset');
      const alpha = p.alpha as number;
      const initial = p.value as number;
      if (!ctx.memoryActive) return (f) => void (f.num[value] = f.mem[m]);
      return (f) => {
        if (reset >= 0 && f.num[reset]) f.mem[m] = initial;
        else {
          const v = alpha * f.num[x] + (1 - alpha) * f.mem[m];
          if (Number.isFinite(v)) f.mem[m] = v;
        }
        f.num[value] = f.mem[m];
      };
    }
    default:
      return null;
  }
}

function comparator(op: string): (a: number, b: number) => boolean {
  switch (op) {
    case '>':
      return (a, b) => a > b;
    case '>=':
      return (a, b) => a >= b;
    case '<':
      return (a, b) => a < b;
    case '<=':
      return (a, b) => a <= b;
    case '==':
      return (a, b) => a === b;
    default:
      return (a, b) => a !== b;
  }
}

function arithmetic(op: string): (a: number, b: number) => number {
  switch (op) {
    case '+':
      return (a, b) => a + b;
    case '-':
      return (a, b) => a - b;
    case '*':
      return (a, b) => a * b;
    default:
      return (a, b) => (b === 0 ? 0 : a / b);
  }
}

/** Initial value of a memory node (its `value` parameter). */
export function memoryInitial(node: AnalyzedNode): number {
  return node.params.value as number;
}
