// Node `stay`: keep decoding on this model.
import type { DecisionDef } from '../../nodeTypeDef.ts';
import { modelParam, priority, when } from '../parts.ts';

export const stay: DecisionDef = {
  type: 'stay',
  category: 'decision',
  label: 'Stay',
  description: 'Keep decoding on this model.',
  inputs: [when],
  outputs: [],
  params: [modelParam('On model'), priority],
  route: () => ({ to: null, keep: true }),
  summary: (p) => `on ${p.model} · p${p.priority}`,
};
