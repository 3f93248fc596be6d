// Whether a batched step mixing one-token rows with longer feeds runs as two forward passes.
import type { StepRow } from './modelRunner.ts';

/**
 * What a second pass costs beyond its tokens, in token slots (its fixed run overhead and the re-pack
 * that merges the two groups at the next step). Measured on the bundled small model, a re-pack is
 * about 3 % of a step, so the split pays from a few tokens of padding saved.
 */
const SPLIT_PASS_COST = 16;

/**
 * One pass costs rows × the longest feed (every row is padded to it, and every row's attention span
 * grows by it), so a 20-token prefill beside 7 decodes costs 160 token slots instead of 27. The
 * decode rows then go on their own (their batch usually reused as is) and the longer feeds apart.
 * Null: one pass.
 */
export function splitFeeds(rows: readonly Pick<StepRow, 'tokens'>[]): { decode: number[]; multi: number[] } | null {
  const decode: number[] = [];
  const multi: number[] = [];
  let longest = 0;
  rows.forEach((r, i) => {
    if (r.tokens.length === 1) decode.push(i);
    else multi.push(i);
    longest = Math.max(longest, r.tokens.length);
  });
  if (decode.length === 0 || multi.length === 0) return null;
  const mixed = rows.length * longest;
  const apart = decode.length + multi.length * longest + SPLIT_PASS_COST;
  return apart < mixed ? { decode, multi } : null;
}
