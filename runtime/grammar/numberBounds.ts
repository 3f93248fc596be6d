// Bounded JSON-schema numbers rewritten into a form xgrammar's converter gets right, so every number it allows is within bounds.

/**
 * xgrammar 0.1.27 writes wrong grammars for bounded numbers: `{"type": "integer", "maximum": 120}`
 * lets 128 pass (`"1" [0-2] [0-9]`), `{"type": "number", "minimum": 0, "maximum": 1}` lets 1.5 pass,
 * exclusive bounds are ignored, a bound with a fraction garbles the grammar and a negative
 * one-sided bound lets the wrong side through. Its grammars for digit-aligned blocks (100–109,
 * 0–99, 120–120) are right. So a bounded number becomes an `anyOf` of such blocks: the integers in
 * bounds, and the decimals "i.fff" whose every value lies in bounds, a few values near a
 * fractional bound no longer offered. A one-sided minimum ≥ 0 ends its blocks at a power of ten and
 * leaves the rest to xgrammar's `minimum` (right for those). A one-sided maximum, or a negative
 * one-sided minimum, is left as xgrammar writes it: covering it with blocks down to a far bound
 * meets another xgrammar fault (an `anyOf` of "-9dd", "-9d" and "0–99" accepts 1000000001).
 */
export function tightenNumberBounds(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(tightenNumberBounds);
  if (schema === null || typeof schema !== 'object') return schema;
  const node: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) node[k] = k === 'const' || k === 'enum' || k === 'default' || k === 'examples' ? v : tightenNumberBounds(v);
  return node.type === 'number' || node.type === 'integer' ? boundedNumber(node, node.type) : node;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Digit-aligned blocks covering [lo, hi] for 0 ≤ lo ≤ hi: [a·10^k, a·10^k + 10^k − 1], largest first from lo. */
function positiveBlocks(lo: number, hi: number): [number, number][] {
  const out: [number, number][] = [];
  while (lo <= hi) {
    let step = 1;
    while (lo % (step * 10) === 0 && lo + step * 10 - 1 <= hi) step *= 10;
    out.push([lo, lo + step - 1]);
    lo += step;
  }
  return out;
}

/** Digit-aligned blocks covering the integers [lo, hi], negatives mirrored. */
export function integerBlocks(lo: number, hi: number): [number, number][] {
  const out: [number, number][] = [];
  if (lo < 0) for (const [a, b] of positiveBlocks(Math.max(1, -hi), -lo).reverse()) out.push([-b, -a]);
  if (hi >= 0) out.push(...positiveBlocks(Math.max(0, lo), hi));
  return out;
}

function boundedNumber(node: Record<string, unknown>, type: 'number' | 'integer'): Record<string, unknown> {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum, type: _type, ...rest } = node;
  let lo = num(minimum) ?? num(exclusiveMinimum);
  let hi = num(maximum) ?? num(exclusiveMaximum);
  if (lo === undefined || (hi === undefined && lo < 0)) return node;
  const loOpen = num(minimum) === undefined;
  const hiOpen = num(maximum) === undefined && hi !== undefined;
  // a one-sided minimum ≥ 0: blocks up to the next power of ten, then xgrammar's own `minimum` beyond it
  const tail = hi === undefined ? 10 ** String(Math.ceil(lo) + 1).length : undefined;
  hi ??= (tail as number) - 1;
  // exact integers within the bounds
  let intLo = Math.ceil(lo);
  if (loOpen && intLo === lo) intLo++;
  let intHi = Math.floor(hi);
  if (hiOpen && intHi === hi) intHi--;
  const branches: Record<string, unknown>[] = intLo <= intHi ? integerBlocks(intLo, intHi).map(([a, b]) => ({ type: 'integer', minimum: a, maximum: b })) : [];
  if (type === 'number') {
    // integer parts whose every fraction stays inside: "i.fff" is in [i, i + 1) for i ≥ 0 and in (i − 1, i] for i < 0
    const l = lo;
    const h = hi;
    const fits = (i: number) => (i >= 0 ? (loOpen ? i > l : i >= l) && i + 1 <= h : i - 1 >= l && (hiOpen ? i < h : i <= h));
    let fracLo = Math.floor(lo) - 1;
    while (fracLo <= hi && !fits(fracLo)) fracLo++;
    let fracHi = Math.ceil(hi) + 1;
    while (fracHi >= lo && !fits(fracHi)) fracHi--;
    if (fracLo <= fracHi && fits(fracLo) && fits(fracHi)) for (const [a, b] of integerBlocks(fracLo, fracHi)) branches.push({ type: 'number', minimum: a, maximum: b });
  }
  if (tail !== undefined) branches.push({ type, minimum: tail });
  // nothing expressible (a range narrower than one integer part, holding no integer): left to xgrammar as asked
  if (branches.length === 0) return node;
  return branches.length === 1 ? { ...rest, ...branches[0] } : { ...rest, anyOf: branches };
}
