// The playground's chips: each token's text, except that a character split across tokens (each decoding alone to "�") is shown whole on its first token and the rest are marked as its continuation.
import type { StreamToken } from './api.ts';

export interface Chip {
  /** The token's place in the stream. */
  index: number;
  text: string;
  /** This token only completes the character shown on an earlier chip. */
  continuation: boolean;
}

const PARTIAL = '\uFFFD';

/** A committed token that decodes alone to part of a character (a discarded one is not in the content). */
const split = (t: StreamToken): boolean => t.kept && t.text.includes(PARTIAL);

/**
 * `content` is the answer's text as streamed (the server decodes it incrementally, so split
 * characters come out whole): a run of tokens whose own texts hold "�" gets the stretch of
 * `content` up to where the next clean token's text starts. Without content, the tokens' texts.
 */
export function tokenChips(tokens: readonly StreamToken[], content: string): Chip[] {
  const chips: Chip[] = [];
  let pos = 0;
  for (let i = 0; i < tokens.length; ) {
    const t = tokens[i];
    if (!split(t) || !content) {
      if (content.startsWith(t.text, pos)) pos += t.text.length;
      chips.push({ index: i, text: t.text, continuation: false });
      i++;
      continue;
    }
    let j = i;
    while (j < tokens.length && split(tokens[j])) j++;
    const group = tokens.slice(i, j);
    // the joined text holds at least each token's whole characters and one for the split ones
    const least = group.reduce((n, g) => n + g.text.replaceAll(PARTIAL, '').length, 0) + 1;
    const next = j < tokens.length ? tokens[j].text : '';
    const found = next ? content.indexOf(next, pos + least) : -1;
    const end = next ? (found >= 0 ? found : pos) : content.length;
    const joined = content.slice(pos, end);
    if (!joined) {
      // nothing to align with: show what the tokens say
      for (let k = i; k < j; k++) chips.push({ index: k, text: tokens[k].text, continuation: false });
    } else {
      chips.push({ index: i, text: joined, continuation: false });
      for (let k = i + 1; k < j; k++) chips.push({ index: k, text: '', continuation: true });
      pos = end;
    }
    i = j;
  }
  return chips;
}
