// Node `minMax`: the smaller or larger of two numbers.
import type { ValueDef } from '../../nodeTypeDef.ts';
import { num } from '../parts.ts';

export const minMax: ValueDef = {
  type: 'minMax',
  category: 'logic',
  label: 'Min / Max',
  description: 'The smaller or larger of a and b.',
  inputs: [num('a'), num('b')],
  outputs: [num('out', 'result')],
  params: [{ kind: 'enum', name: 'op', label: 'Operator', options: ['min', 'max'], default: 'max' }],
  evaluate(ctx) {
    const a = ctx.num('a');
    const b = ctx.num('b');
    return { num: ctx.params.op === 'min' ? (x) => Math.min(a(x), b(x)) : (x) => Math.max(a(x), b(x)) };
  },
  summary: (p) => `${p.op}(a, b)`,
};
