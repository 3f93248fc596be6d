// Bounded JSON-schema numbers and integers handed over as exact EBNF ranges, since xgrammar's converter lets values past a bound through.
import { integerRange } from './integerRange.ts';

/** At most this many digits after a bounded number's point (xgrammar's own bounded numbers allow six too). */
const FRACTION = '"." [0-9]{1,6}';

/**
 * The schema with every bounded `integer` and `number` node replaced by `placeholder(ebnf)`, `ebnf`
 * an expression for exactly the values the grammar should offer. xgrammar 0.1.27 writes
 * `{"type": "integer", "minimum": 0, "maximum": 120}` as `0 | [1-9] | [1-9][0-9] | 1[0-2][0-9]`
 * (128 passes), turns `{"type": "number", "minimum": 0, "maximum": 1}` into `0 | 1 | 0.d+ | 1.d+`
 * (1.5 passes), and ignores `exclusiveMinimum` / `exclusiveMaximum` on numbers. So an integer
 * becomes its exact range, and a bounded number `integer in bounds | i.fff` for the integer parts i
 * whose every fraction lies in bounds: answers stay valid, at the cost of a few values near a bound
 * the grammar no longer offers (e.g. 0.5 under a minimum of 0.25). A number range narrower than one
 * integer part that holds no integer is left to xgrammar as asked.
 */
export function numberBounds(schema: unknown, placeholder: (ebnf: string) => unknown): unknown {
  if (Array.isArray(schema)) return schema.map((s) => numberBounds(s, placeholder));
  if (schema === null || typeof schema !== 'object') return schema;
  const node: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema))
    node[k] = k === 'const' || k === 'enum' || k === 'default' || k === 'examples' ? v : numberBounds(v, placeholder);
  if ('enum' in node || 'const' in node) return node;
  const ebnf = node.type === 'integer' ? integerNode(node) : node.type === 'number' ? numberNode(node) : undefined;
  return ebnf === undefined ? node : placeholder(ebnf);
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The node's bounds, each with whether it is exclusive (draft 4's boolean `exclusiveMinimum` included). */
function bounds(node: Record<string, unknown>) {
  const { minimum, maximum, exclusiveMinimum: exMin, exclusiveMaximum: exMax } = node;
  const lo =
    num(exMin) !== undefined && (num(minimum) === undefined || num(exMin)! >= num(minimum)!)
      ? { v: num(exMin)!, open: true }
      : num(minimum) !== undefined
        ? { v: num(minimum)!, open: exMin === true }
        : undefined;
  const hi =
    num(exMax) !== undefined && (num(maximum) === undefined || num(exMax)! <= num(maximum)!)
      ? { v: num(exMax)!, open: true }
      : num(maximum) !== undefined
        ? { v: num(maximum)!, open: exMax === true }
        : undefined;
  return { lo, hi };
}

/** The integers within the bounds: [intLo, intHi], either side undefined when open. */
function integerBounds(node: Record<string, unknown>): { intLo?: number; intHi?: number } {
  const { lo, hi } = bounds(node);
  let intLo = lo === undefined ? undefined : Math.ceil(lo.v);
  if (intLo !== undefined && lo!.open && intLo === lo!.v) intLo++;
  let intHi = hi === undefined ? undefined : Math.floor(hi.v);
  if (intHi !== undefined && hi!.open && intHi === hi!.v) intHi--;
  return { intLo, intHi };
}

const big = (v: number | undefined) => (v === undefined ? undefined : BigInt(v));

function integerNode(node: Record<string, unknown>): string | undefined {
  const { lo, hi } = bounds(node);
  if (lo === undefined && hi === undefined) return undefined;
  const { intLo, intHi } = integerBounds(node);
  return integerRange(big(intLo), big(intHi));
}

function numberNode(node: Record<string, unknown>): string | undefined {
  const { lo: l, hi: h } = bounds(node);
  if (l === undefined && h === undefined) return undefined;
  const lo = l?.v;
  const hi = h?.v;
  const { intLo, intHi } = integerBounds(node);
  // integer parts whose every fraction stays inside: "i.fff" is in [i, i + 1) for i ≥ 0 and in (i − 1, i] for i < 0
  const fits = (i: number) =>
    (lo === undefined || (i >= 0 ? (l!.open ? i > lo : i >= lo) : i - 1 >= lo)) && (hi === undefined || (i >= 0 ? i + 1 <= hi : h!.open ? i < hi : i <= hi));
  let fracLo = lo === undefined ? undefined : Math.floor(lo) - 1;
  while (fracLo !== undefined && !fits(fracLo) && (hi === undefined || fracLo <= hi)) fracLo++;
  let fracHi = hi === undefined ? undefined : Math.ceil(hi) + 1;
  while (fracHi !== undefined && !fits(fracHi) && (lo === undefined || fracHi >= lo)) fracHi--;
  const alts: string[] = [];
  if (intLo === undefined || intHi === undefined || intLo <= intHi) alts.push(integerRange(big(intLo), big(intHi)));
  const fracOk =
    (fracLo === undefined || fits(fracLo)) && (fracHi === undefined || fits(fracHi)) && (fracLo === undefined || fracHi === undefined || fracLo <= fracHi);
  if (fracOk) alts.push(`${integerRange(big(fracLo), big(fracHi))} ${FRACTION}`);
  return alts.length === 0 ? undefined : alts.join(' | ');
}
