// Bounded JSON-schema numbers rewritten into a form xgrammar's converter gets right, so every number it allows is within bounds.

/**
 * xgrammar 0.1.27 turns `{"type": "number", "minimum": 0, "maximum": 1}` into `0 | 1 | 0.d+ | 1.d+`
 * (1.5 passes), ignores `exclusiveMinimum` / `exclusiveMaximum`, and writes a grammar that accepts
 * any character in place of the point when a bound has a fraction. The
 * integer parts strictly inside a number range, are right. So a bounded number becomes
 * `anyOf [integer in bounds, number whose every "i.fff" lies in bounds]`: answers stay valid, at the
 * cost of a few values near a bound the grammar no longer offers (e.g. 0.5 under a minimum of 0.25).
 */
export function tightenNumberBounds(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(tightenNumberBounds);
  if (schema === null || typeof schema !== 'object') return schema;
  const node: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) node[k] = k === 'const' || k === 'enum' || k === 'default' || k === 'examples' ? v : tightenNumberBounds(v);
  return node.type === 'number' ? boundedNumber(node) : node;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function boundedNumber(node: Record<string, unknown>): Record<string, unknown> {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum, ...rest } = node;
  const lo = num(minimum) ?? num(exclusiveMinimum);
  const hi = num(maximum) ?? num(exclusiveMaximum);
  if (lo === undefined && hi === undefined) return node;
  const loOpen = num(minimum) === undefined && lo !== undefined;
  const hiOpen = num(maximum) === undefined && hi !== undefined;
  // exact integers within the bounds
  let intLo = lo === undefined ? undefined : Math.ceil(lo);
  if (intLo !== undefined && loOpen && intLo === lo) intLo++;
  let intHi = hi === undefined ? undefined : Math.floor(hi);
  if (intHi !== undefined && hiOpen && intHi === hi) intHi--;
  // integer parts whose every fraction stays inside: "i.fff" is in [i, i + 1) for i ≥ 0 and in (i − 1, i] for i < 0
  const fits = (i: number) => (lo === undefined || (i >= 0 ? (loOpen ? i > lo : i >= lo) : i - 1 >= lo)) && (hi === undefined || (i >= 0 ? i + 1 <= hi : hiOpen ? i < hi : i <= hi));
  let fracLo = lo === undefined ? undefined : Math.floor(lo) - 1;
  while (fracLo !== undefined && !fits(fracLo) && (hi === undefined || fracLo <= hi)) fracLo++;
  let fracHi = hi === undefined ? undefined : Math.ceil(hi) + 1;
  while (fracHi !== undefined && !fits(fracHi) && (lo === undefined || fracHi >= lo)) fracHi--;
  const branches: Record<string, unknown>[] = [];
  if (intLo === undefined || intHi === undefined || intLo <= intHi) branches.push({ type: 'integer', ...(intLo !== undefined ? { minimum: intLo } : {}), ...(intHi !== undefined ? { maximum: intHi } : {}) });
  const fracOk = (fracLo === undefined || fits(fracLo)) && (fracHi === undefined || fits(fracHi)) && (fracLo === undefined || fracHi === undefined || fracLo <= fracHi);
  if (fracOk) branches.push({ type: 'number', ...(fracLo !== undefined ? { minimum: fracLo } : {}), ...(fracHi !== undefined ? { maximum: fracHi } : {}) });
  // nothing expressible (a range narrower than one integer part, holding no integer): leave it to xgrammar as asked
  if (branches.length === 0) return node;
  const { type: _number, ...others } = rest;
  return branches.length === 1 ? { ...others, ...branches[0] } : { ...others, anyOf: branches };
}
