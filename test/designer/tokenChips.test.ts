// Issue 53 item 17: playground chips show a character split across tokens whole on its first token, the rest marked as continuation.
import { describe, expect, it } from 'vitest';
import type { StreamToken } from '../../designer/src/designer/api.ts';
import { tokenChips } from '../../designer/src/designer/tokenChips.ts';

const tok = (text: string, kept = true): StreamToken => ({
  id: 1,
  text,
  model: 'small',
  signals: { entropy: 0, maxProb: 1, margin: 1, heads: {} },
  decision: 'stay',
  kept,
});
const view = (tokens: StreamToken[], content: string) => tokenChips(tokens, content).map((c) => (c.continuation ? '+' : c.text));

describe('tokenChips', () => {
  it('joins a character spread over two and three tokens onto the first', () => {
    expect(view([tok('a'), tok('\uFFFD'), tok('\uFFFD'), tok(' b')], 'aé b')).toEqual(['a', 'é', '+', ' b']);
    expect(view([tok('\uFFFD'), tok('\uFFFD'), tok('\uFFFD'), tok('!')], '日!')).toEqual(['日', '+', '+', '!']);
  });
  it('keeps the whole characters a split token also holds, and works at the end of the answer', () => {
    expect(view([tok('x'), tok(' \uFFFD'), tok('\uFFFD')], 'x 日')).toEqual(['x', ' 日', '+']);
    // the next token's text also occurs inside the joined stretch: searched past what the group holds at least
    expect(view([tok(' \uFFFD'), tok('\uFFFD'), tok(' ')], ' 日 ')).toEqual([' 日', '+', ' ']);
  });
  it('leaves clean tokens, discarded ones, and a stream without content as they are', () => {
    expect(view([tok('a'), tok('b', false), tok('c')], 'ac')).toEqual(['a', 'b', 'c']);
    expect(view([tok('\uFFFD'), tok('\uFFFD')], '')).toEqual(['\uFFFD', '\uFFFD']);
  });
});
