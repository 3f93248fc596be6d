// Node `flag`: a fixed true or false.
import type { ValueDef } from '../../nodeTypeDef.ts';
import { bool, fmt } from '../parts.ts';

export const flag: ValueDef = {
  type: 'flag',
  category: 'constant',
  label: 'Flag',
  description: 'A fixed true/false.',
  inputs: [],
  outputs: [bool('out', 'value')],
  params: [{ kind: 'boolean', name: 'value', label: 'Value', default: true }],
  evaluate({ params }) {
    const v = Boolean(Number(params.value));
    return { bool: v ? () => true : () => false };
  },
  summary: (p) => fmt(p.value),
};
