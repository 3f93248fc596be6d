// Node `handBack`: after N tokens on this model in one visit, return to a model, keeping those tokens.
import { LIMITS } from '../../nodeTypes.ts';
import type { DecisionDef } from '../../nodeTypeDef.ts';
import { modelParam, priority, when } from '../parts.ts';

export const handBack: DecisionDef = {
  type: 'handBack',
  category: 'decision',
  label: 'Hand back after N',
  description: 'After N tokens on this model in one visit, return to a model. Those tokens are kept.',
  inputs: [when],
  outputs: [],
  params: [
    modelParam('On model', 'large'),
    { kind: 'model', name: 'to', label: 'To model', default: 'small' },
    { kind: 'int', name: 'after', label: 'After N tokens', min: 1, max: LIMITS.maxHandBack, default: 1 },
    priority,
  ],
  route: (p) => ({ to: p.to as string, keep: true, after: p.after as number }),
  summary: (p) => `${p.model} → ${p.to} after ${p.after} · p${p.priority}`,
};
