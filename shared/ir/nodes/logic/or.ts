// Node `or`: either boolean input true.
import type { ValueDef } from '../../nodeTypeDef.ts';
import { bool } from '../parts.ts';

export const or: ValueDef = {
  type: 'or',
  category: 'logic',
  label: 'Or',
  description: 'Either input true.',
  inputs: [bool('a'), bool('b')],
  outputs: [bool('out', 'a ∨ b')],
  params: [],
  evaluate(ctx) {
    const a = ctx.bool('a');
    const b = ctx.bool('b');
    return { bool: (x) => a(x) || b(x) };
  },
  summary: () => '',
};
