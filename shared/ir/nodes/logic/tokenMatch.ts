// Node `tokenMatch`: whether a token is one of a set of ids or its text matches; text is resolved against the model vocabulary at deploy.
import { LIMITS } from '../../nodeTypes.ts';
import type { Params, ValueDef } from '../../nodeTypeDef.ts';
import { bool } from '../parts.ts';

/** Vocabulary entries scanned for text matches; larger vocabularies match on their first entries only. */
const MAX_VOCAB = 1 << 20;

export const tokenMatch: ValueDef = {
  type: 'tokenMatch',
  category: 'logic',
  label: 'Token match',
  description: 'True when the token is one of the ids, or its text matches (text needs the model vocabulary at deploy).',
  inputs: [{ name: 'token', type: 'token', label: 'token' }],
  outputs: [bool('out', 'match')],
  params: [
    { kind: 'ids', name: 'ids', label: 'Token ids', maxItems: LIMITS.maxTokenIds, default: [] },
    { kind: 'text', name: 'text', label: 'Text', maxLength: 64, default: '' },
    { kind: 'enum', name: 'match', label: 'Text match', options: ['exact', 'contains'], default: 'exact' },
  ],
  needsVocab: (p) => (p.text ? { reason: `Matching text "${p.text}"`, fix: 'Match token ids instead of text.' } : null),
  evaluate(ctx) {
    const t = ctx.num('token');
    const set = tokenIds(ctx.params, ctx.vocab);
    return { bool: (x) => set.has(t(x)) };
  },
  summary(p) {
    const ids = p.ids as readonly number[];
    const parts = [ids.length ? `ids ${ids.slice(0, 4).join(',')}${ids.length > 4 ? '…' : ''}` : '', p.text ? `“${p.text}”` : ''].filter(Boolean);
    return parts.join(' or ') || 'matches nothing';
  },
};

/** The ids listed plus those whose text in `vocab` matches. */
function tokenIds(p: Params, vocab: readonly string[]): Set<number> {
  const set = new Set(p.ids as readonly number[]);
  const text = p.text as string;
  if (!text) return set;
  const exact = p.match === 'exact';
  for (let id = 0; id < Math.min(vocab.length, MAX_VOCAB); id++) {
    const t = vocab[id];
    if (typeof t === 'string' && (exact ? t.trim() === text.trim() : t.includes(text))) set.add(id);
  }
  return set;
}
