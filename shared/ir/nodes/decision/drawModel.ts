// Node `drawModel`: pick the model of the next token by weights, from a uniform number (the seeded draw by default).
import type { DecisionDef } from '../../nodeTypeDef.ts';
import { fmt, modelParam, num, priority, when } from '../parts.ts';

export const drawModel: DecisionDef = {
  type: 'drawModel',
  category: 'decision',
  label: 'Draw model',
  description: 'Pick the model of the next token by weights (u defaults to the seeded draw). Drawing this model stays.',
  inputs: [num('u', 'u', true), when],
  outputs: [],
  params: [
    modelParam('On model'),
    { kind: 'weights', name: 'weights', label: 'Weights', default: { small: 0.5, medium: 0.3, large: 0.2 } },
    { kind: 'boolean', name: 'keep', label: 'Keep token', default: true },
    priority,
  ],
  route: (p) => ({ weights: p.weights as Readonly<Record<string, number>>, keep: p.keep as boolean, u: 'u' }),
  summary(p) {
    const w = p.weights as Readonly<Record<string, number>>;
    const shares = Object.entries(w)
      .filter(([, x]) => x > 0)
      .map(([m, x]) => `${m} ${fmt(x)}`);
    return `on ${p.model} · ${shares.join(' · ')}`;
  },
};
