// Node `handoff`: send the request to another model, keeping or discarding the token just sampled.
import type { DecisionDef } from '../../nodeTypeDef.ts';
import { modelParam, priority, when } from '../parts.ts';

export const handoff: DecisionDef = {
  type: 'handoff',
  category: 'decision',
  label: 'Hand off',
  description: 'Send the request to another model, keeping or discarding the token just sampled.',
  inputs: [when],
  outputs: [],
  params: [
    modelParam('On model'),
    { kind: 'model', name: 'to', label: 'To model', default: 'large' },
    { kind: 'boolean', name: 'keep', label: 'Keep token', default: false, help: 'Off: the peer regenerates this position.' },
    priority,
  ],
  route: (p) => ({ to: p.to as string, keep: p.keep as boolean }),
  summary: (p) => `${p.model} → ${p.to} · ${p.keep ? 'keep' : 'discard'} · p${p.priority}`,
};
