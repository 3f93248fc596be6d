// Composition of one model's evaluation tree: each node becomes its module's closure, its inputs wired to earlier closures, shared values and memory slots.
// Nothing is generated or evaluated: every closure is a fixed function of a node module, parameterised by the node's data.
import type { AnalyzedNode } from '../../shared/ir/analyzeGraph.ts';
import type { IrPortRef } from '../../shared/ir/irSchema.ts';
import type { BoolFn, EvalContext, Guard, NumFn, SignalField, SignalRead, StepInput, ValueFn } from '../../shared/ir/nodeTypeDef.ts';

/** A step's side effect: a memory update, or a shared value computed once into its slot. */
export type StepOp = (x: StepInput) => void;

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
  /** Token texts of a model by id (empty when the server gave none). */
  vocab(model: string | null): readonly string[];
}

/** Signal and constant nodes read one field or hold one value: they are cheap enough to repeat at every reader. */
export function isLeaf(node: AnalyzedNode): boolean {
  return node.def.category === 'signal' || node.def.category === 'constant';
}

/** Whether the node's single output is a boolean. */
export function isBoolean(node: AnalyzedNode): boolean {
  return node.def.outputs.length > 0 && node.def.outputs[0].type === 'boolean';
}

/** The value a number or token port carries, as a closure. */
export function numExpr(ref: IrPortRef, ctx: ExprContext): NumFn {
  const node = ctx.node(ref.node);
  if (node.def.category === 'memory') {
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

/** Signal reads go through ToNumber, as a Float64Array store would; one closure per field keeps each property access monomorphic. */
const FIELD_READS: Record<SignalField, NumFn> = {
  entropy: (x) => +x.entropy,
  maxProb: (x) => +x.maxProb,
  margin: (x) => +x.margin,
  tokenProb: (x) => +x.tokenProb,
  stepsHere: (x) => +x.stepsHere,
  position: (x) => +x.position,
  generated: (x) => +x.generated,
  draw: (x) => +x.draw,
  token: (x) => +x.token,
};

function signalFn(r: SignalRead): NumFn {
  if (r.field !== null) return FIELD_READS[r.field];
  const name = r.head;
  // A head the runner did not provide reads as NaN, and every comparison with NaN is false.
  return (x) => (Object.hasOwn(x.heads, name) ? Number(x.heads[name]) : Number.NaN);
}

/** The node's closure from its module, or null for a node with no value (a distribution, a decision). */
function valueFn(node: AnalyzedNode, ctx: ExprContext): ValueFn | null {
  const { def } = node;
  if (def.category === 'signal') {
    const r = def.read(node.params);
    return r ? { num: signalFn(r) } : null;
  }
  if (def.category === 'constant' || def.category === 'logic') return def.evaluate(evalContext(node, ctx));
  return null;
}

// A valid graph never reads a boolean as a number or the reverse, nor a node without a value; the conversions keep these total anyway.
function nodeNum(node: AnalyzedNode, ctx: ExprContext): NumFn {
  const v = valueFn(node, ctx);
  if (v === null) return () => Number.NaN;
  if ('num' in v) return v.num;
  const b = v.bool;
  return (x) => (b(x) ? 1 : 0);
}

function nodeBool(node: AnalyzedNode, ctx: ExprContext): BoolFn {
  const v = valueFn(node, ctx);
  if (v === null) return () => false;
  if ('bool' in v) return v.bool;
  const n = v.num;
  return (x) => {
    const y = n(x);
    return y !== 0 && !Number.isNaN(y);
  };
}

/** What a node module's evaluation sees of its node: parameters, and its inputs as closures or, where fixed, as data. */
function evalContext(node: AnalyzedNode, ctx: ExprContext): EvalContext {
  const source = (port: string): AnalyzedNode => ctx.node(node.inputs[port].node);
  return {
    params: node.params,
    has: (port) => Object.hasOwn(node.inputs, port),
    num: (port) => numExpr(node.inputs[port], ctx),
    bool: (port) => boolExpr(node.inputs[port], ctx),
    topK(port) {
      const { def, params } = source(port);
      return def.category === 'signal' ? (def.wants?.(params).topK ?? 0) : 0;
    },
    signal(port) {
      const { def, params } = source(port);
      return def.category === 'signal' ? def.read(params) : null;
    },
    fixed(port) {
      const { def, params } = source(port);
      return (def.category === 'constant' || def.category === 'logic') && def.fixed ? def.fixed(params) : null;
    },
    vocab: ctx.vocab(node.scope),
  };
}

/** The condition behind a boolean port as a Guard, or null when its node offers none. */
export function guardOf(ref: IrPortRef, ctx: ExprContext): Guard | null {
  const node = ctx.node(ref.node);
  const { def } = node;
  return (def.category === 'constant' || def.category === 'logic') && def.guard ? def.guard(evalContext(node, ctx)) : null;
}

/** Whether a Guard holds on this step; the same answer as the Compare closure (ops index COMPARE_OPS). */
export function passes(t: Guard, x: StepInput): boolean {
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
  const { def } = node;
  if (def.category !== 'memory') return null;
  const { mem } = ctx.frame;
  const m = ctx.memory(node.id);
  const next = def.update(evalContext(node, ctx));
  return (x) => {
    const v = next(x, mem[m]);
    // Memory stays finite so the metadata survives JSON as well as structured clone.
    if (Number.isFinite(v)) mem[m] = v;
  };
}
