// Node `compare`: a <op> b of two numbers, b falling back to the Value parameter; a signal against a fixed number is also a Guard.
import { COMPARE_OPS, type BoolFn, type NumFn, type ValueDef } from '../../nodeTypeDef.ts';
import { binarySummary, bool, num, value } from '../parts.ts';

export const compare: ValueDef = {
  type: 'compare',
  category: 'logic',
  label: 'Compare',
  description: 'a <op> b; b defaults to the Value parameter when unconnected.',
  inputs: [num('a'), num('b', 'b', true)],
  outputs: [bool('out', 'result')],
  params: [{ kind: 'enum', name: 'op', label: 'Operator', options: COMPARE_OPS, default: '>' }, value('Value (b)', 0.03, 'b')],
  evaluate(ctx) {
    const op = ctx.params.op as string;
    const a = ctx.num('a');
    return { bool: ctx.has('b') ? compareBoth(op, a, ctx.num('b')) : compareConst(op, a, ctx.params.value as number) };
  },
  guard(ctx) {
    const read = ctx.signal('a');
    const b = ctx.has('b') ? ctx.fixed('b') : (ctx.params.value as number);
    if (read === null || b === null) return null;
    return { ...read, op: COMPARE_OPS.indexOf(ctx.params.op as (typeof COMPARE_OPS)[number]), value: b };
  },
  summary: binarySummary,
};

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

function compareBoth(op: string, a: NumFn, b: NumFn): BoolFn {
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
