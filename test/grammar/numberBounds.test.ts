// Bounded numbers under xgrammar: every string the rewritten schema's grammar accepts lies within the bounds, and typical values are still offered.
import { beforeAll, describe, expect, it } from 'vitest';
import { integerBlocks, tightenNumberBounds } from '../../runtime/grammar/numberBounds.ts';
import { loadXGrammar, type XGrammar } from '../../runtime/grammar/xgrammar.ts';

let xg: XGrammar;
beforeAll(async () => {
  xg = await loadXGrammar();
}, 60_000);

async function accepts(schema: unknown, text: string): Promise<boolean> {
  const g = await xg.lib.Grammar.fromJSONSchema(JSON.stringify(schema), false);
  try {
    return await xg.lib.Testings.isGrammarAcceptString(g, text);
  } finally {
    g.dispose();
  }
}

/** Strings a model could write for a number: around both bounds, halves and quarters, far out. */
function candidates(lo: number | undefined, hi: number | undefined): string[] {
  const out = new Set<string>(['0', '-1', '1', '0.5', '-0.5', '1000000001', '-1000000001']);
  for (const b of [lo, hi]) {
    if (b === undefined) continue;
    const i = Math.trunc(b);
    for (const d of [-101, -11, -10, -2, -1, 0, 1, 2, 9, 10, 11, 100]) {
      out.add(String(i + d));
      out.add(`${i + d}.5`);
      out.add(`${i + d}.25`);
    }
    out.add(String(b));
  }
  return [...out].filter((c) => !c.startsWith('-0.') || c === '-0.5');
}

function inside(x: number, b: Record<string, number>): boolean {
  if (b.minimum !== undefined && x < b.minimum) return false;
  if (b.exclusiveMinimum !== undefined && x <= b.exclusiveMinimum) return false;
  if (b.maximum !== undefined && x > b.maximum) return false;
  if (b.exclusiveMaximum !== undefined && x >= b.exclusiveMaximum) return false;
  return true;
}

describe('tightenNumberBounds', () => {
  it('shows the converter bugs it works around: 1.5 under a maximum of 1, 128 under 120', async () => {
    expect(await accepts({ type: 'number', minimum: 0, maximum: 1 }, '1.5')).toBe(true);
    expect(await accepts(tightenNumberBounds({ type: 'number', minimum: 0, maximum: 1 }), '1.5')).toBe(false);
    expect(await accepts({ type: 'integer', minimum: 0, maximum: 120 }, '128')).toBe(true);
    expect(await accepts(tightenNumberBounds({ type: 'integer', minimum: 0, maximum: 120 }), '128')).toBe(false);
  });

  const cases: Record<string, number>[] = [
    { minimum: 0, maximum: 1 },
    { minimum: 0, maximum: 120 },
    { minimum: 1, maximum: 9999 },
    { minimum: -40, maximum: 60 },
    { minimum: 0.5, maximum: 2.25 },
    { exclusiveMinimum: 0, exclusiveMaximum: 10 },
    { minimum: -2.25, maximum: -0.5 },
    { minimum: -355, maximum: -37 },
    { minimum: 17, maximum: 1234 },
    { minimum: 250 },
    { exclusiveMinimum: 0 },
  ];
  for (const type of ['integer', 'number'] as const) {
    for (const bounds of cases) {
      it(`${type}: accepts only values within ${JSON.stringify(bounds)}, and some inside`, async () => {
        const schema = tightenNumberBounds({ type, ...bounds });
        const g = await xg.lib.Grammar.fromJSONSchema(JSON.stringify(schema), false);
        let offered = 0;
        try {
          for (const c of candidates(bounds.minimum ?? bounds.exclusiveMinimum, bounds.maximum ?? bounds.exclusiveMaximum)) {
            if (!(await xg.lib.Testings.isGrammarAcceptString(g, c))) continue;
            offered++;
            expect(inside(Number(c), bounds), `${c} accepted for ${type} ${JSON.stringify(bounds)}`).toBe(true);
            if (type === 'integer') expect(Number.isInteger(Number(c)), c).toBe(true);
          }
        } finally {
          g.dispose();
        }
        expect(offered).toBeGreaterThan(0);
      });
    }
  }

  it('splits ranges into digit-aligned blocks that cover them exactly', () => {
    for (const [lo, hi] of [[0, 120], [-355, -37], [-40, 60], [7, 7], [1, 10000]] as const) {
      const blocks = integerBlocks(lo, hi);
      let next = lo;
      for (const [a, b] of blocks) {
        expect(a).toBe(next);
        next = b + 1;
      }
      expect(next).toBe(hi + 1);
    }
  });

  it('rewrites numbers nested in objects, arrays and $defs, and leaves enum values alone', () => {
    const out = tightenNumberBounds({
      type: 'object',
      properties: { a: { type: 'array', items: { type: 'number', minimum: 0, maximum: 1 } } },
      $defs: { t: { type: 'number', maximum: 5 } }, // one-sided maximum: left as written
      enum: [{ type: 'number', minimum: 0 }],
    }) as { properties: { a: { items: { anyOf?: unknown[] } } }; $defs: { t: { anyOf?: unknown[] } }; enum: unknown[] };
    expect(out.properties.a.items.anyOf?.length).toBeGreaterThan(1);
    expect(out.$defs.t.anyOf).toBeUndefined();
    expect(out.enum).toEqual([{ type: 'number', minimum: 0 }]);
  });
});
