// Node `arith`: a <op> b of two numbers, b falling back to the Value parameter; division by zero gives 0.
import type { NumFn, ValueDef } from '../../nodeTypeDef.ts';
import { binarySummary, num, value } from '../parts.ts';

export const arith: ValueDef = {
  type: 'arith',
  category: 'logic',
  label: 'Arithmetic',
  description: 'a <op> b; b defaults to the Value parameter. Division by zero gives 0.',
  inputs: [num('a'), num('b', 'b', true)],
  outputs: [num('out', 'result')],
  params: [{ kind: 'enum', name: 'op', label: 'Operator', options: ['+', '-', '*', '/'], default: '*' }, value('Value (b)', 1, 'b')],
  evaluate(ctx) {
    const op = ctx.params.op as string;
    const a = ctx.num('a');
    return { num: ctx.has('b') ? arithBoth(op, a, ctx.num('b')) : arithConst(op, a, ctx.params.value as number) };
  },
  summary: binarySummary,
};

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

function arithBoth(op: string, a: NumFn, b: NumFn): NumFn {
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
