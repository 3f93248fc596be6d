// Node `constant`: a fixed number, known at deploy.
import type { ValueDef } from '../../nodeTypeDef.ts';
import { fmt, num, value } from '../parts.ts';

export const constant: ValueDef = {
  type: 'constant',
  category: 'constant',
  label: 'Constant',
  description: 'A fixed number, e.g. a threshold shared by several comparisons.',
  inputs: [],
  outputs: [num('out', 'value')],
  params: [value('Value', 0.03)],
  fixed: (p) => Number(p.value),
  evaluate({ params }) {
    const v = Number(params.value);
    return { num: () => v };
  },
  summary: (p) => fmt(p.value),
};
