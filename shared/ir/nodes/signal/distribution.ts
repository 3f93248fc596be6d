// Signal node `distribution`: the top-k of the next-token distribution, read by the distribution nodes it feeds.
import { LIMITS } from '../../nodeTypes.ts';
import { signal } from '../parts.ts';

export const distribution = signal({
  type: 'distribution',
  label: 'Distribution',
  description: 'Top-k of the next-token distribution.',
  out: { name: 'out', type: 'distribution', label: 'top-k' },
  extra: [{ kind: 'int', name: 'topK', label: 'Top k', min: 1, max: LIMITS.maxTopK, default: 8 }],
  read: () => null,
  wants: (p) => ({ topK: p.topK as number }),
  summary: (p) => `top-${p.topK} · ${p.model}`,
});
