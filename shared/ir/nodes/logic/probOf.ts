// Node `probOf`: the probability a distribution gives a token, 0 outside its top-k.
import type { ValueDef } from '../../nodeTypeDef.ts';
import { num } from '../parts.ts';

export const probOf: ValueDef = {
  type: 'probOf',
  category: 'logic',
  label: 'Prob of token',
  description: 'Probability the distribution gives a token (0 outside its top-k).',
  inputs: [
    { name: 'dist', type: 'distribution', label: 'dist' },
    { name: 'token', type: 'token', label: 'token' },
  ],
  outputs: [num('out', 'p')],
  params: [],
  evaluate(ctx) {
    const topK = ctx.topK('dist');
    const token = ctx.num('token');
    return {
      num: (x) => {
        const ids = x.topIds;
        const probs = x.topProbs;
        const n = Math.min(topK, ids.length, probs.length);
        const t = token(x);
        for (let i = 0; i < n; i++) if (ids[i] === t) return +probs[i];
        return 0;
      },
    };
  },
  summary: () => '',
};
