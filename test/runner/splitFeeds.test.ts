// A step mixing a prefill with decoding peers runs as two passes, and each row still gets its unbatched result.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { splitFeeds } from '../../runtime/runner/splitFeeds.ts';
import { GREEDY, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { soloGenerate } from './helpers.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

const feeds = (...lengths: number[]) => lengths.map((n) => ({ tokens: new Array<number>(n).fill(1) }));

describe('splitFeeds', () => {
  it.each([
    { lengths: [1, 1, 1], passes: [[0, 1, 2]], why: 'decode only' },
    { lengths: [20, 18], passes: [[0, 1]], why: 'prefills of about one length' },
    { lengths: [20, 1, 1, 1, 1, 1, 1, 1], passes: [[1, 2, 3, 4, 5, 6, 7], [0]], why: '160 slots in one pass, 43 in two' },
    { lengths: [1, 1, 6], passes: [[0, 1, 2]], why: 'a short extend beside two decodes: 18 slots in one pass, 24 in two' },
    {
      lengths: [1, 30, 1, 25],
      passes: [
        [0, 2],
        [1, 3],
      ],
      why: 'order kept within each pass',
    },
    { lengths: [1, 3], passes: [[0, 1]], why: 'padding saved is less than a pass' },
    { lengths: [3, 40, 8, 12, 9], passes: [[0, 2, 3, 4], [1]], why: 'a long catch-up apart from four short ones: 200 slots in one pass, 88 in two' },
    {
      lengths: [1, 64, 1, 24, 20, 60],
      passes: [
        [0, 2],
        [3, 4],
        [1, 5],
      ],
      why: 'three lengths, three passes',
    },
    { lengths: [], passes: [], why: 'no rows' },
  ])('$why', ({ lengths, passes }) => {
    expect(splitFeeds(feeds(...lengths))).toEqual(passes);
  });
});

describe('a prefill beside decoding peers (bundled small model)', () => {
  let runner: OnnxRunner;
  let prompts: number[][];
  let solo: number[][];
  const row = (cacheId: number, tokens: readonly number[], position: number): StepRow => ({
    cacheId,
    requestId: `r${cacheId}`,
    tokens,
    position,
    sampling: GREEDY,
    wants: NO_WANTS,
  });
  beforeAll(async () => {
    runner = await OnnxRunner.load(tinyModelDir('small'));
    const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
    prompts = tinyQuestions(8).map((q) => tok.encodeChat([{ role: 'user', content: q }]));
    solo = [];
    for (const [i, p] of prompts.entries()) solo.push(await soloGenerate(runner, 500 + i, p, 6));
  }, 60_000);
  afterAll(async () => runner?.close());

  it('runs split, equals the solo runs, and the next step merges both groups', async () => {
    // seven requests decode together; then the eighth's prefill joins them
    await runner.step(prompts.slice(0, 7).map((p, i) => row(i + 1, p, 0)));
    const before = { ...runner.stats };
    const mixed = await runner.step([...prompts.slice(0, 7).map((p, i) => row(i + 1, [solo[i][0]], p.length)), row(8, prompts[7], 0)]);
    expect(runner.stats.splits - before.splits).toBe(1);
    // the decode group kept its batch as is: only the prefill group was packed
    expect(runner.stats.reused - before.reused).toBe(1);
    expect(mixed.rows.map((r) => r.token)).toEqual([...solo.slice(0, 7).map((s) => s[1]), solo[7][0]]);
    // the breakdowns (bench prefix) read each pass: the decode group first, then the prefill
    expect(mixed.passes?.map(({ rows, tokens, longest }) => ({ rows, tokens, longest }))).toEqual([
      { rows: 7, tokens: 7, longest: 1 },
      { rows: 1, tokens: prompts[7].length, longest: prompts[7].length },
    ]);
    expect(mixed.passes!.reduce((a, p) => a + p.modelMs, 0)).toBeCloseTo(mixed.modelMs!, 6);
    const next = await runner.step(prompts.map((p, i) => row(i + 1, [i < 7 ? solo[i][1] : solo[7][0]], p.length + (i < 7 ? 1 : 0))));
    expect(next.passes?.map((p) => p.rows)).toEqual([8]);
    expect(next.rows.map((r) => r.token)).toEqual([...solo.slice(0, 7).map((s) => s[2]), solo[7][1]]);
    for (let i = 1; i <= 8; i++) runner.release(i);
    expect(runner.cachedTokens).toBe(0);
  });
});
