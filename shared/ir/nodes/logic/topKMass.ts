// Node `topKMass`: the total probability of the k most likely tokens of a distribution.
import { LIMITS } from '../../nodeTypes.ts';
import type { ValueDef } from '../../nodeTypeDef.ts';
import { num } from '../parts.ts';

export const topKMass: ValueDef = {
  type: 'topKMass',
  category: 'logic',
  label: 'Top-k mass',
  description: 'Total probability of the k most likely tokens.',
  inputs: [{ name: 'dist', type: 'distribution', label: 'dist' }],
  outputs: [num('out', 'mass')],
  params: [{ kind: 'int', name: 'k', label: 'k', min: 1, max: LIMITS.maxTopK, default: 2 }],
  evaluate(ctx) {
    const topK = ctx.topK('dist');
    const k = ctx.params.k as number;
    return {
      num: (x) => {
        const ids = x.topIds;
        const probs = x.topProbs;
        const n = Math.min(k, Math.min(topK, ids.length, probs.length));
        let s = 0;
        for (let i = 0; i < n; i++) s += probs[i];
        return +s;
      },
    };
  },
  summary: (p) => `k = ${p.k}`,
};
