// Node `and`: both boolean inputs true.
import type { ValueDef } from '../../nodeTypeDef.ts';
import { bool } from '../parts.ts';

export const and: ValueDef = {
  type: 'and',
  category: 'logic',
  label: 'And',
  description: 'Both inputs true.',
  inputs: [bool('a'), bool('b')],
  outputs: [bool('out', 'a ∧ b')],
  params: [],
  evaluate(ctx) {
    const a = ctx.bool('a');
    const b = ctx.bool('b');
    return { bool: (x) => a(x) && b(x) };
  },
  summary: () => '',
};
