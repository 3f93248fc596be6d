// An xgrammar EBNF expression matching exactly the JSON integers of a range, digit by digit.

/**
 * The JSON integers in [lo, hi] (either side open when undefined) as an EBNF expression: no
 * leading zeros, no "-0". Written here because xgrammar 0.1.27's own range grammar lets numbers
 * past an upper bound through (0–120 becomes `"1" [0-2] [0-9]`, so 128 passes). An empty range
 * throws, naming the bounds.
 */
export function integerRange(lo: bigint | undefined, hi: bigint | undefined): string {
  if (lo !== undefined && hi !== undefined && lo > hi) throw new Error(`no integer lies between minimum ${lo} and maximum ${hi}`);
  const alts: string[] = [];
  // negatives: "-" then the magnitudes from max(1, -hi) to -lo
  if (lo === undefined || lo < 0n) {
    const from = hi === undefined || hi >= 0n ? 1n : -hi;
    alts.push(`"-" ${group(magnitudes(from, lo === undefined ? undefined : -lo))}`);
  }
  if (hi === undefined || hi >= 0n) alts.push(...magnitudes(lo === undefined || lo < 0n ? 0n : lo, hi));
  return group(alts);
}

/** Alternatives for the non-negative integers in [a, b] (b undefined: unbounded), one or more per digit count. */
function magnitudes(a: bigint, b: bigint | undefined): string[] {
  const alts: string[] = [];
  const first = a.toString().length;
  const last = b === undefined ? first : b.toString().length;
  for (let d = first; d <= last; d++) {
    const lo = d === first ? a : 10n ** BigInt(d - 1);
    const top = 10n ** BigInt(d) - 1n;
    const hi = b !== undefined && b < top ? b : top;
    alts.push(...sameLength(lo.toString(), hi.toString()));
  }
  // with no upper bound, every longer number too
  if (b === undefined) alts.push(['[1-9]', ...Array<string>(first).fill('[0-9]'), '[0-9]*'].join(' '));
  return alts;
}

/** Alternatives for the digit strings from x to y, both of one length n ≥ 1, x ≤ y. */
function sameLength(x: string, y: string): string[] {
  if (x === y) return [`"${x}"`];
  const n = x.length;
  const x0 = Number(x[0]);
  const y0 = Number(y[0]);
  const xr = x.slice(1);
  const yr = y.slice(1);
  if (x0 === y0) return [`"${x0}" ${group(sameLength(xr, yr))}`];
  const any = Array<string>(n - 1).fill('[0-9]');
  const xFull = /^0*$/.test(xr);
  const yFull = /^9*$/.test(yr);
  const alts: string[] = [];
  if (!xFull) alts.push(`"${x0}" ${group(sameLength(xr, '9'.repeat(n - 1)))}`);
  const midLo = xFull ? x0 : x0 + 1;
  const midHi = yFull ? y0 : y0 - 1;
  if (midLo <= midHi) alts.push([digits(midLo, midHi), ...any].join(' '));
  if (!yFull) alts.push(`"${y0}" ${group(sameLength('0'.repeat(n - 1), yr))}`);
  return alts;
}

const digits = (a: number, b: number) => (a === b ? `"${a}"` : `[${a}-${b}]`);
const group = (alts: string[]) => (alts.length === 1 ? alts[0] : `(${alts.join(' | ')})`);
