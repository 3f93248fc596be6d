// Bounded integers and numbers under xgrammar: every value the grammar accepts lies within the bounds (the library's own ranges let 128 pass a maximum of 120), and values inside are still offered.
import { beforeAll, describe, expect, it } from 'vitest';
import { compileGrammar } from '../../runtime/grammar/grammarCache.ts';
import { ConstraintState, GrammarViolation } from '../../runtime/grammar/constraintState.ts';
import { integerRange } from '../../runtime/grammar/integerRange.ts';
import { folderVocabulary } from '../../runtime/grammar/modelVocabulary.ts';
import { schemaEbnf } from '../../runtime/grammar/schemaEbnf.ts';
import { loadXGrammar, type XGrammar } from '../../runtime/grammar/xgrammar.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';

let xg: XGrammar;
beforeAll(async () => {
  xg = await loadXGrammar();
}, 60_000);

async function acceptsEbnf(ebnf: string, text: string): Promise<boolean> {
  const g = await xg.lib.Grammar.fromEBNF(ebnf);
  try {
    return await xg.lib.Testings.isGrammarAcceptString(g, text);
  } finally {
    g.dispose();
  }
}

const accepts = (schema: unknown, text: string) => acceptsEbnf(schemaEbnf(xg, schema), text);

/** integerRange's EBNF subset (literals, classes, groups, `|`, `*`) read as a JS regex, to check every integer of a span quickly. */
const asRegex = (ebnf: string) =>
  new RegExp(
    `^(?:${ebnf
      .replace(/"([^"]*)"/g, '$1')
      .replace(/ /g, '')
      .replace(/\(/g, '(?:')})$`,
  );

describe('integerRange', () => {
  const ranges: [number | undefined, number | undefined][] = [
    [0, 120],
    [0, 127],
    [18, 65],
    [-50, 50],
    [-120, 0],
    [-128, -7],
    [1, undefined],
    [undefined, 100],
    [undefined, -13],
    [-999, undefined],
    [7, 7],
    [0, 0],
    [-1, -1],
    [10, 99],
    [99, 1001],
    [1, 9],
    [0, 10],
    [9, 10],
    [123, 456],
    [-1000, 1000],
    [100, 199],
    [1099, 1100],
  ];
  for (const [lo, hi] of ranges) {
    it(`matches exactly the integers of [${lo ?? '-∞'}, ${hi ?? '∞'}]`, () => {
      const re = asRegex(integerRange(lo === undefined ? undefined : BigInt(lo), hi === undefined ? undefined : BigInt(hi)));
      for (let v = -1500; v <= 1500; v++) expect(re.test(String(v)), `${v}`).toBe((lo === undefined || v >= lo) && (hi === undefined || v <= hi));
      for (const bad of ['-0', '01', '007', '', '-', '1.5']) expect(re.test(bad), bad).toBe(false);
      if (hi === undefined) expect(re.test('123456789012345678901234567890')).toBe(true);
    });
  }

  it('refuses an empty range naming the bounds', () => {
    expect(() => integerRange(5n, 3n)).toThrow(/no integer lies between minimum 5 and maximum 3/);
  });

  it('is read by xgrammar as it is by the regex', async () => {
    const ebnf = `root ::= ${integerRange(0n, 120n)}`;
    for (const [v, ok] of [
      ['0', true],
      ['120', true],
      ['99', true],
      ['121', false],
      ['128', false],
      ['129', false],
      ['1000', false],
      ['-1', false],
    ] as const)
      expect(await acceptsEbnf(ebnf, v), v).toBe(ok);
  });
});

const CANDIDATES = [
  '-129',
  '-121',
  '-41',
  '-40.5',
  '-40',
  '-39.5',
  '-2.25',
  '-1',
  '-0.5',
  '0',
  '0.25',
  '0.5',
  '0.999',
  '1',
  '1.5',
  '2',
  '2.25',
  '2.5',
  '9.75',
  '10',
  '10.5',
  '59.9',
  '60',
  '60.5',
  '119',
  '120',
  '120.5',
  '121',
  '125.5',
  '128',
  '129',
];

describe('bounded numbers and integers in a schema', () => {
  it('shows the converter bugs worked around: 128 passes a maximum of 120, 1.5 a maximum of 1', async () => {
    const raw = async (schema: unknown, text: string) => {
      const g = await xg.lib.Grammar.fromJSONSchema(JSON.stringify(schema), false);
      try {
        return await xg.lib.Testings.isGrammarAcceptString(g, text);
      } finally {
        g.dispose();
      }
    };
    expect(await raw({ type: 'integer', minimum: 0, maximum: 120 }, '128')).toBe(true);
    expect(await accepts({ type: 'integer', minimum: 0, maximum: 120 }, '128')).toBe(false);
    expect(await raw({ type: 'number', minimum: 0, maximum: 1 }, '1.5')).toBe(true);
    expect(await accepts({ type: 'number', minimum: 0, maximum: 1 }, '1.5')).toBe(false);
  });

  const cases: [string, Record<string, unknown>][] = [
    ['number', { minimum: 0, maximum: 1 }],
    ['number', { minimum: -40, maximum: 60 }],
    ['number', { minimum: 0.5, maximum: 2.25 }],
    ['number', { exclusiveMinimum: 0, exclusiveMaximum: 10 }],
    ['number', { minimum: -2.25, maximum: -0.5 }],
    ['number', { maximum: 2 }],
    ['number', { minimum: -1 }],
    ['number', { minimum: 0, maximum: 120 }],
    ['integer', { minimum: 0, maximum: 120 }],
    ['integer', { minimum: -128, maximum: 127 }],
    ['integer', { exclusiveMinimum: 0, exclusiveMaximum: 10 }],
    ['integer', { minimum: 0.5, maximum: 9.5 }],
    ['integer', { minimum: 0, exclusiveMaximum: 119 }],
    ['integer', { maximum: 60 }],
  ];
  for (const [type, bounds] of cases) {
    it(`a ${type} accepts only values within ${JSON.stringify(bounds)}, and some inside`, async () => {
      const schema = { type, ...bounds };
      const lo = (bounds.minimum ?? bounds.exclusiveMinimum) as number | undefined;
      const hi = (bounds.maximum ?? bounds.exclusiveMaximum) as number | undefined;
      const inside = (x: number) =>
        (type === 'number' || Number.isInteger(x)) &&
        (lo === undefined || (bounds.exclusiveMinimum !== undefined ? x > lo : x >= lo)) &&
        (hi === undefined || (bounds.exclusiveMaximum !== undefined ? x < hi : x <= hi));
      let offered = 0;
      for (const c of CANDIDATES) {
        const ok = await accepts(schema, c);
        expect(ok && !inside(Number(c)), `${c} accepted under ${JSON.stringify(schema)}`).toBe(false);
        if (ok) offered++;
      }
      expect(offered).toBeGreaterThan(0);
    });
  }

  it('rewrites bounds nested in objects, arrays and $defs, and leaves enum values alone', async () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 120 } }, t: { $ref: '#/$defs/t' }, e: { enum: [128, 5] } },
      required: ['a', 't', 'e'],
      $defs: { t: { type: 'number', maximum: 5 } },
    };
    expect(await accepts(schema, '{"a":[1,120],"t":4.5,"e":128}')).toBe(true);
    expect(await accepts(schema, '{"a":[1,128],"t":4.5,"e":128}')).toBe(false);
    expect(await accepts(schema, '{"a":[1],"t":5.5,"e":5}')).toBe(false);
    expect(await accepts(schema, '{"a":[1],"t":5,"e":6}')).toBe(false);
  });

  it('a schema already holding the marker text still gets its own ranges', async () => {
    const schema = {
      type: 'object',
      properties: { m: { const: '__tokenrouter_range_0__' }, n: { type: 'integer', minimum: 1, maximum: 3 } },
      required: ['m', 'n'],
    };
    expect(await accepts(schema, '{"m":"__tokenrouter_range_0__","n":2}')).toBe(true);
    expect(await accepts(schema, '{"m":"__tokenrouter_range_0__","n":4}')).toBe(false);
  });
});

describe('the matcher on a real vocabulary', () => {
  it('walks {"age": 12… and refuses 8 (128 > 120), takes 0, and a committed 128 is a violation', async () => {
    const folder = loadModelFolder(realShapeFolder('qwen3-tiny').dir);
    const tok = TextTokenizer.fromFolder(folder);
    const vocab = folderVocabulary(folder);
    const schema = JSON.stringify({ type: 'object', properties: { age: { type: 'integer', minimum: 0, maximum: 120 } }, required: ['age'] });
    const compiled = await compileGrammar({ kind: 'json_schema', schema }, vocab);
    const prompt = [1, 2, 3];
    const allowed = (mask: Int32Array, id: number) => ((mask[id >>> 5] >>> (id & 31)) & 1) === 1;
    const s = new ConstraintState(xg, compiled, prompt.length, undefined);
    const head = tok.encode('{"age":12', false);
    const m = s.mask([...prompt, ...head])!;
    const [eight] = tok.encode('8', false);
    const [zero] = tok.encode('0', false);
    const [close] = tok.encode('}', false);
    expect(allowed(m, eight)).toBe(false);
    expect(allowed(m, zero)).toBe(true);
    expect(allowed(m, close)).toBe(true);
    expect(() => s.sync([...prompt, ...tok.encode('{"age":128}', false)])).toThrow(GrammarViolation);
    s.dispose();
  }, 120_000);
});
