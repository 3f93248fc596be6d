// Prebuilt operators of the IR interpreter: each node becomes a small closure over fixed indexes, composed once at deploy into a tree.
// Nothing is generated or evaluated: every closure below is a fixed function of this file, parameterised by the node's data.
import type { RouteInput } from '../../shared/algorithm.ts';
import type { IrPortRef } from '../../shared/ir/irSchema.ts';
import type { AnalyzedNode } from '../../shared/ir/analyzeGraph.ts';
import type { IrMeta } from './irMeta.ts';

export type Input = RouteInput<IrMeta>;
/** A number or token value of one step. */
export type NumFn = (x: Input) => number;
/** A boolean value of one step. */
export type BoolFn = (x: Input) => boolean;
/** A step's side effect: a memory update, or a shared value computed once into its slot. */
export type StepOp = (x: Input) => void;

/**
 * Scratch state of one route() call, reused by every call (route() is synchronous and not re-entrant).
 * Memory values are loaded from meta before the step and written back after it.
 */
export interface Frame {
  /** Memory values after this step's update (a memory's `value` output). */
  mem: Float64Array;
  /** Memory values before this step (a memory's `prev` output). */
  prev: Float64Array;
  /** Values of shared nodes, computed once per step (booleans as 0/1). */
  num: Float64Array;
}

export interface ExprContext {
  frame: Frame;
  node(id: string): AnalyzedNode;
  /** Index of a memory node in `mem` / `prev`. */
  memory(id: string): number;
  /** Slot in `num` of a node computed once per step, or -1 when its value is computed where it is read. */
  shared(id: string): number;
  /** Token ids a Token-match node accepts (ids plus text matches resolved at compile time). */
  tokenSet(id: string): ReadonlySet<number> | undefined;
}

/** Signal and constant nodes read one field or hold one value: they are cheap enough to repeat at every reader. */
export function isLeaf(node: AnalyzedNode): boolean {
  return node.spec.category === 'signal' || node.spec.category === 'constant';
}

/** Whether the node's single output is a boolean. */
export function isBoolean(node: AnalyzedNode): boolean {
  return node.spec.outputs.length > 0 && node.spec.outputs[0].type === 'boolean';
}

/** The value a number or token port carries, as a closure. */
export function numExpr(ref: IrPortRef, ctx: ExprContext): NumFn {
  const node = ctx.node(ref.node);
  if (node.spec.category === 'memory') {
    const i = ctx.memory(node.id);
    const { mem, prev } = ctx.frame;
    return ref.port === 'prev' ? () => prev[i] : () => mem[i];
  }
  const s = ctx.shared(node.id);
  if (s >= 0) {
    const { num } = ctx.frame;
    return () => num[s];
  }
  return nodeNum(node, ctx);
}

/** The value a boolean port carries, as a closure. Boolean nodes only ever produce 0 or 1. */
export function boolExpr(ref: IrPortRef, ctx: ExprContext): BoolFn {
  const node = ctx.node(ref.node);
  const s = ctx.shared(node.id);
  if (s >= 0) {
    const { num } = ctx.frame;
    return () => num[s] !== 0;
  }
  return nodeBool(node, ctx);
}

/** The computation of a node with a number or token output. Signal reads go through ToNumber, as a Float64Array store would. */
export function nodeNum(node: AnalyzedNode, ctx: ExprContext): NumFn {
  const p = node.params;
  switch (node.type) {
    case 'entropy':
      return (x) => +x.entropy;
    case 'maxProb':
      return (x) => +x.maxProb;
    case 'margin':
      return (x) => +x.margin;
    case 'tokenProb':
      return (x) => +x.tokenProb;
    case 'stepsHere':
      return (x) => +x.stepsHere;
    case 'position':
      return (x) => +x.position;
    case 'generated':
      return (x) => +x.generated;
    case 'draw':
      return (x) => +x.draw;
    case 'sampledToken':
      return (x) => +x.token;
    case 'head': {
      const name = p.head as string;
      // A head the runner did not provide reads as NaN, and every comparison with NaN is false.
      return (x) => (Object.hasOwn(x.heads, name) ? Number(x.heads[name]) : Number.NaN);
    }
    case 'constant': {
      const v = Number(p.value);
      return () => v;
    }
    case 'arith': {
      const a = numExpr(node.inputs.a, ctx);
      if (!Object.hasOwn(node.inputs, 'b')) return arithConst(p.op as string, a, p.value as number);
      return arith(p.op as string, a, numExpr(node.inputs.b, ctx));
    }
    case 'minMax': {
      const a = numExpr(node.inputs.a, ctx);
      const b = numExpr(node.inputs.b, ctx);
      return p.op === 'min' ? (x) => Math.min(a(x), b(x)) : (x) => Math.max(a(x), b(x));
    }
    case 'topKMass': {
      const topK = distTopK(node.inputs.dist, ctx);
      const k = p.k as number;
      return (x) => {
        const ids = x.topIds;
        const probs = x.topProbs;
        const n = Math.min(k, Math.min(topK, ids.length, probs.length));
        let s = 0;
        for (let i = 0; i < n; i++) s += probs[i];
        return +s;
      };
    }
    case 'probOf': {
      const topK = distTopK(node.inputs.dist, ctx);
      const token = numExpr(node.inputs.token, ctx);
      return (x) => {
        const ids = x.topIds;
        const probs = x.topProbs;
        const n = Math.min(topK, ids.length, probs.length);
        const t = token(x);
        for (let i = 0; i < n; i++) if (ids[i] === t) return +probs[i];
        return 0;
      };
    }
    default: {
      // A boolean read as a number (never wired by a valid graph; kept total for safety).
      const b = nodeBool(node, ctx);
      return (x) => (b(x) ? 1 : 0);
    }
  }
}

/** The computation of a node with a boolean output. */
export function nodeBool(node: AnalyzedNode, ctx: ExprContext): BoolFn {
  const p = node.params;
  switch (node.type) {
    case 'flag': {
      const v = Boolean(Number(p.value));
      return v ? () => true : () => false;
    }
    case 'compare': {
      const a = numExpr(node.inputs.a, ctx);
      if (!Object.hasOwn(node.inputs, 'b')) return compareConst(p.op as string, a, p.value as number);
      return compare(p.op as string, a, numExpr(node.inputs.b, ctx));
    }
    case 'and': {
      const a = boolExpr(node.inputs.a, ctx);
      const b = boolExpr(node.inputs.b, ctx);
      return (x) => a(x) && b(x);
    }
    case 'or': {
      const a = boolExpr(node.inputs.a, ctx);
      const b = boolExpr(node.inputs.b, ctx);
      return (x) => a(x) || b(x);
    }
    case 'not': {
      const a = boolExpr(node.inputs.a, ctx);
      return (x) => !a(x);
    }
    case 'tokenMatch': {
      const t = numExpr(node.inputs.token, ctx);
      const set = ctx.tokenSet(node.id) ?? new Set<number>();
      return (x) => set.has(t(x));
    }
    default: {
      const n = nodeNum(node, ctx);
      return (x) => {
        const v = n(x);
        return v !== 0 && v === v;
      };
    }
  }
}

/** Top-k entries a distribution port offers: its Distribution node's `topK`. */
function distTopK(ref: IrPortRef, ctx: ExprContext): number {
  const node = ctx.node(ref.node);
  return node.type === 'distribution' ? (node.params.topK as number) : 0;
}

/** RouteInput fields a signal node reads directly. */
const SIGNAL_FIELDS = {
  entropy: 'entropy',
  maxProb: 'maxProb',
  margin: 'margin',
  tokenProb: 'tokenProb',
  stepsHere: 'stepsHere',
  position: 'position',
  generated: 'generated',
  draw: 'draw',
  sampledToken: 'token',
} as const;
type SignalField = (typeof SIGNAL_FIELDS)[keyof typeof SIGNAL_FIELDS];
const COMPARE_OPS = ['>', '>=', '<', '<=', '==', '!='];

/**
 * The commonest guard, a Compare of one signal against a constant, as data: `passes` tests it
 * inline, with no closure calls (closure call sites shared by every deployed graph go megamorphic).
 */
export interface SignalTest {
  /** The RouteInput field read, or null for a router head. */
  field: SignalField | null;
  head: string;
  /** Index in COMPARE_OPS; anything else compares with !=, as the closure form does. */
  op: number;
  value: number;
}

/** The guard behind a boolean port as a SignalTest, or null when it is not that shape. */
export function signalTest(ref: IrPortRef, ctx: ExprContext): SignalTest | null {
  const node = ctx.node(ref.node);
  if (node.type !== 'compare') return null;
  const a = ctx.node(node.inputs.a.node);
  let value: number;
  if (!Object.hasOwn(node.inputs, 'b')) value = node.params.value as number;
  else {
    const b = ctx.node(node.inputs.b.node);
    if (b.type !== 'constant') return null;
    value = Number(b.params.value);
  }
  const op = COMPARE_OPS.indexOf(node.params.op as string);
  if (a.type === 'head') return { field: null, head: a.params.head as string, op, value };
  if (Object.hasOwn(SIGNAL_FIELDS, a.type)) return { field: SIGNAL_FIELDS[a.type as keyof typeof SIGNAL_FIELDS], head: '', op, value };
  return null;
}

/** Whether a SignalTest holds on this step; the same answer as the Compare node's closure. */
export function passes(t: SignalTest, x: Input): boolean {
  let v: number;
  if (t.field !== null) v = +x[t.field];
  else v = Object.hasOwn(x.heads, t.head) ? Number(x.heads[t.head]) : Number.NaN;
  const b = t.value;
  switch (t.op) {
    case 0:
      return v > b;
    case 1:
      return v >= b;
    case 2:
      return v < b;
    case 3:
      return v <= b;
    case 4:
      return v === b;
    default:
      return v !== b;
  }
}

/** The step op that computes a shared node once into its slot. */
export function sharedOp(node: AnalyzedNode, slot: number, ctx: ExprContext): StepOp {
  const { num } = ctx.frame;
  if (isBoolean(node)) {
    const b = nodeBool(node, ctx);
    return (x) => void (num[slot] = b(x) ? 1 : 0);
  }
  const n = nodeNum(node, ctx);
  return (x) => void (num[slot] = n(x));
}

/** The step op of a memory node on a model where it updates; memories elsewhere only read `mem`. */
export function memoryOp(node: AnalyzedNode, ctx: ExprContext): StepOp | null {
  const { mem } = ctx.frame;
  const m = ctx.memory(node.id);
  const p = node.params;
  const reset = Object.hasOwn(node.inputs, 'reset') ? boolExpr(node.inputs.reset, ctx) : null;
  const initial = p.value as number;
  switch (node.type) {
    case 'counter': {
      const inc = Object.hasOwn(node.inputs, 'inc') ? boolExpr(node.inputs.inc, ctx) : null;
      const step = p.step as number;
      return (x) => {
        let v = mem[m];
        if (reset !== null && reset(x)) v = initial;
        else if (inc === null || inc(x)) v += step;
        // Memory stays finite so the metadata survives JSON as well as structured clone.
        if (Number.isFinite(v)) mem[m] = v;
      };
    }
    case 'movingAverage': {
      const input = numExpr(node.inputs.x, ctx);
      const alpha = p.alpha as number;
      return (x) => {
        if (reset !== null && reset(x)) mem[m] = initial;
        else {
          const v = alpha * input(x) + (1 - alpha) * mem[m];
          if (Number.isFinite(v)) mem[m] = v;
        }
      };
    }
    default:
      return null;
  }
}

function compareConst(op: string, a: NumFn, b: number): BoolFn {
  switch (op) {
    case '>':
      return (x) => a(x) > b;
    case '>=':
      return (x) => a(x) >= b;
    case '<':
      return (x) => a(x) < b;
    case '<=':
      return (x) => a(x) <= b;
    case '==':
      return (x) => a(x) === b;
    default:
      return (x) => a(x) !== b;
  }
}

function compare(op: string, a: NumFn, b: NumFn): BoolFn {
  switch (op) {
    case '>':
      return (x) => a(x) > b(x);
    case '>=':
      return (x) => a(x) >= b(x);
    case '<':
      return (x) => a(x) < b(x);
    case '<=':
      return (x) => a(x) <= b(x);
    case '==':
      return (x) => a(x) === b(x);
    default:
      return (x) => a(x) !== b(x);
  }
}

function arithConst(op: string, a: NumFn, b: number): NumFn {
  switch (op) {
    case '+':
      return (x) => a(x) + b;
    case '-':
      return (x) => a(x) - b;
    case '*':
      return (x) => a(x) * b;
    default:
      return b === 0 ? () => 0 : (x) => a(x) / b;
  }
}

function arith(op: string, a: NumFn, b: NumFn): NumFn {
  switch (op) {
    case '+':
      return (x) => a(x) + b(x);
    case '-':
      return (x) => a(x) - b(x);
    case '*':
      return (x) => a(x) * b(x);
    default:
      return (x) => {
        const d = b(x);
        return d === 0 ? 0 : a(x) / d;
      };
  }
}

/** Initial value of a memory node (its `value` parameter). */
export function memoryInitial(node: AnalyzedNode): number {
  return node.params.value as number;
}
