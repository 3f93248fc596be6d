// Bounded numbers under xgrammar: every string the rewritten schema's grammar accepts lies within the bounds, and typical values are still offered.
import { beforeAll, describe, expect, it } from 'vitest';
import { tightenNumberBounds } from '../../runtime/grammar/numberBounds.ts';
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

const CANDIDATES = ['-41', '-40.5', '-40', '-39.5', '-2.25', '-1', '-0.5', '0', '0.25', '0.5', '0.999', '1', '1.5', '2', '2.25', '2.5', '9.75', '10', '10.5', '59.9', '60', '60.5'];

describe('tightenNumberBounds', () => {
  it('shows the converter bug it works around: 1.5 passes a maximum of 1 unrewritten', async () => {
    expect(await accepts({ type: 'number', minimum: 0, maximum: 1 }, '1.5')).toBe(true);
    expect(await accepts(tightenNumberBounds({ type: 'number', minimum: 0, maximum: 1 }), '1.5')).toBe(false);
  });

  const cases: Record<string, unknown>[] = [
    { minimum: 0, maximum: 1 },
    { minimum: -40, maximum: 60 },
    { minimum: 0.5, maximum: 2.25 },
    { exclusiveMinimum: 0, exclusiveMaximum: 10 },
    { minimum: -2.25, maximum: -0.5 },
    { maximum: 2 },
    { minimum: -1 },
  ];
  for (const bounds of cases) {
    it(`accepts only numbers within ${JSON.stringify(bounds)}, and some inside`, async () => {
      const schema = tightenNumberBounds({ type: 'number', ...bounds });
      const lo = (bounds.minimum ?? bounds.exclusiveMinimum) as number | undefined;
      const hi = (bounds.maximum ?? bounds.exclusiveMaximum) as number | undefined;
      const inside = (x: number) =>
        (lo === undefined || (bounds.exclusiveMinimum !== undefined ? x > lo : x >= lo)) && (hi === undefined || (bounds.exclusiveMaximum !== undefined ? x < hi : x <= hi));
      let offered = 0;
      for (const c of CANDIDATES) {
        const ok = await accepts(schema, c);
        if (ok) expect(inside(Number(c)), `${c} accepted under ${JSON.stringify(schema)}`).toBe(true);
        if (ok) offered++;
      }
      expect(offered).toBeGreaterThan(0);
    });
  }

  it('rewrites numbers nested in objects, arrays and $defs, and leaves enum values alone', () => {
    const out = tightenNumberBounds({
      type: 'object',
      properties: { a: { type: 'array', items: { type: 'number', minimum: 0, maximum: 1 } } },
      $defs: { t: { type: 'number', maximum: 5 } },
      enum: [{ type: 'number', minimum: 0 }],
    }) as { properties: { a: { items: { anyOf?: unknown[] } } }; $defs: { t: { anyOf?: unknown[] } }; enum: unknown[] };
    expect(out.properties.a.items.anyOf).toHaveLength(2);
    expect(out.$defs.t.anyOf).toHaveLength(2);
    expect(out.enum).toEqual([{ type: 'number', minimum: 0 }]);
  });
});
