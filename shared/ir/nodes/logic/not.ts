// Node `not`: the negation of a boolean.
import type { ValueDef } from '../../nodeTypeDef.ts';
import { bool } from '../parts.ts';

export const not: ValueDef = {
  type: 'not',
  category: 'logic',
  label: 'Not',
  description: 'Negation.',
  inputs: [bool('a')],
  outputs: [bool('out', '¬a')],
  params: [],
  evaluate(ctx) {
    const a = ctx.bool('a');
    return { bool: (x) => !a(x) };
  },
  summary: () => '',
};
