// Signal node `head`: the output of a router network the model ships, by name.
import { num, signal } from '../parts.ts';

export const head = signal({
  type: 'head',
  label: 'Router head',
  description: 'Output of a router network shipped with the model (e.g. citer, r2r, colm).',
  out: num('out', 'score'),
  extra: [{ kind: 'head', name: 'head', label: 'Head', default: 'citer' }],
  read: (p) => ({ field: null, head: p.head as string }),
  wants: (p) => ({ heads: [p.head as string] }),
  summary: (p) => `${p.head} · ${p.model}`,
});
