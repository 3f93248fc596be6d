// Batched steps (mixed prefill/extend/decode, joining and leaving) give each request its unbatched result.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxRunner, StepError } from '../../runtime/runner/onnxRunner.ts';
import { GREEDY, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { generateGreedy } from '../../runtime/runner/onnxAccuracy.ts';
import { soloGenerate } from './helpers.ts';
import { TINY_MODEL_NAMES, tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

const row = (cacheId: number, tokens: readonly number[], position: number): StepRow => ({
  cacheId,
  requestId: `r${cacheId}`,
  tokens,
  position,
  sampling: GREEDY,
  wants: NO_WANTS,
});

describe.each(TINY_MODEL_NAMES.filter((m) => m !== 'medium'))('batched decoding: %s', (name) => {
  let runner: OnnxRunner;
  let prompts: number[][];
  let solo: number[][];
  beforeAll(async () => {
    runner = await OnnxRunner.load(tinyModelDir(name));
    const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir(name)));
    const qs = tinyQuestions(16);
    // mixed prompt lengths: plain questions, plus questions followed by a chunk of a worked answer
    prompts = qs.map((q, i) => {
      const base = tok.encodeChat([{ role: 'user', content: q }]);
      const [a, b] = q.split('*');
      return i % 3 === 2 ? [...base, ...tok.encode(`${a}*${b.slice(-1)}=`, false)] : base;
    });
    solo = [];
    for (const [i, p] of prompts.entries()) solo.push(await soloGenerate(runner, 1000 + i, p, 48));
  }, 60_000);
  afterAll(async () => runner?.close());

  it.each([1, 4, 16])('batch %i with requests joining and leaving equals solo runs', async (batch) => {
    const outs = await generateGreedy(runner, prompts, { batch, maxNew: 48 });
    expect(outs).toEqual(solo);
    expect(runner.cachedTokens).toBe(0);
  });

  it('reuses the batch KV while membership is unchanged and re-packs when it changes', async () => {
    const before = { ...runner.stats };
    await generateGreedy(runner, prompts.slice(0, 8), { batch: 8, maxNew: 48 });
    const reused = runner.stats.reused - before.reused;
    const repacks = runner.stats.repacks - before.repacks;
    expect(reused).toBeGreaterThan(repacks);
    expect(repacks).toBeGreaterThanOrEqual(1);
  });

  it('extend (k tokens at once, next to decoding peers) equals feeding them one by one', async () => {
    const p = prompts[0];
    const suffix = solo[0].slice(0, 6);
    // one-by-one reference
    let r = await runner.step([row(1, p, 0)]);
    for (let i = 0; i < suffix.length; i++) r = await runner.step([row(1, [suffix[i]], p.length + i)]);
    const ref = r.rows[0];
    const refNext = await runner.step([row(1, [ref.token], p.length + suffix.length)]);
    // extend path: the same suffix in one row while two peers decode in the same steps
    await runner.step([row(2, p, 0), row(3, prompts[1], 0), row(4, prompts[2], 0)]);
    const mixed = await runner.step([row(2, suffix, p.length), row(3, [solo[1][0]], prompts[1].length), row(4, [solo[2][0]], prompts[2].length)]);
    const ext = mixed.rows[0];
    expect(ext.token).toBe(ref.token);
    expect(ext.entropy).toBeCloseTo(ref.entropy, 4);
    expect(ext.maxProb).toBeCloseTo(ref.maxProb, 4);
    // the peers decoded correctly despite the padding holes in their cache
    expect(mixed.rows[1].token).toBe(solo[1][1]);
    expect(mixed.rows[2].token).toBe(solo[2][1]);
    const next = await runner.step([
      row(2, [ext.token], p.length + suffix.length),
      row(3, [solo[1][1]], prompts[1].length + 1),
      row(4, [solo[2][1]], prompts[2].length + 1),
    ]);
    expect(next.rows[0].token).toBe(refNext.rows[0].token);
    expect(next.rows[1].token).toBe(solo[1][2]);
    expect(next.rows[2].token).toBe(solo[2][2]);
    for (const id of [1, 2, 3, 4]) runner.release(id);
  });

  it('a peer away (not stepping) keeps its cache and resumes with an extend', async () => {
    const [p0, p1] = prompts;
    await runner.step([row(10, p0, 0), row(11, p1, 0)]);
    // 11 leaves (as if handed off); 10 decodes alone for 4 steps
    for (let i = 0; i < 4; i++) await runner.step([row(10, [solo[0][i]], p0.length + i)]);
    // 11 returns with 3 tokens written elsewhere, in one extend, beside 10's decode
    const back = await runner.step([row(10, [solo[0][4]], p0.length + 4), row(11, [solo[1][0], solo[1][1], solo[1][2]], p1.length)]);
    expect(back.rows[0].token).toBe(solo[0][5]);
    expect(back.rows[1].token).toBe(solo[1][3]);
    runner.release(10);
    runner.release(11);
  });

  it('a request left behind stays in the earlier batch tensors without a copy, unless they would pin twice what it uses', async () => {
    const per = runner.info.kvBytesPerToken;
    const long = prompts.find((p) => p.length > prompts[0].length + 4)!;
    const short = prompts[0];
    // 40 and 41 hold the same length: 41 left behind uses half of that batch, so it is kept in place
    await runner.step([row(40, short, 0), row(41, short, 0)]);
    let moves = runner.stats.staleMoves;
    let bytes = runner.stats.copiedBytes;
    await runner.step([row(40, [solo[0][0]], short.length), row(42, long, 0)]);
    expect(runner.stats.staleMoves - moves).toBe(0);
    expect(runner.stats.copiedBytes - bytes).toBe(short.length * per); // 40 only (42 is a prefill)
    // 43 (short) beside 42 (long), then 43 left behind: that batch is padded to the long row, so 43 moves out
    await runner.step([row(43, short, 0), row(42, [solo[prompts.indexOf(long)][0]], long.length)]);
    moves = runner.stats.staleMoves;
    bytes = runner.stats.copiedBytes;
    await runner.step([row(40, [solo[0][1]], short.length + 1), row(42, [solo[prompts.indexOf(long)][1]], long.length + 1)]);
    expect(runner.stats.staleMoves - moves).toBe(1);
    expect(runner.stats.copiedBytes - bytes).toBe((short.length + 1 + long.length + 1 + short.length) * per);
    // both come back to the tokens a solo run gives
    const back = await runner.step([row(41, [solo[0][0]], short.length), row(43, [solo[0][0]], short.length)]);
    expect(back.rows.map((r) => r.token)).toEqual([solo[0][1], solo[0][1]]);
    for (const id of [40, 41, 42, 43]) runner.release(id);
    expect(runner.cachedTokens).toBe(0);
  });

  it('rejects a position that does not match the cache, and position 0 starts afresh', async () => {
    await runner.step([row(20, prompts[0], 0)]);
    await expect(runner.step([row(20, [5], prompts[0].length + 1)])).rejects.toThrow(StepError);
    await expect(runner.step([row(21, [5], 3)])).rejects.toThrow(/cache holds 0 tokens/);
    // the failed step left the cache untouched
    const ok = await runner.step([row(20, [solo[0][0]], prompts[0].length)]);
    expect(ok.rows[0].token).toBe(solo[0][1]);
    // below what the cache holds is refused too: nothing is ever rolled back
    await expect(runner.step([row(20, [5], prompts[0].length)])).rejects.toThrow(/cache holds/);
    const fresh = await runner.step([row(20, prompts[0], 0)]);
    expect(fresh.rows[0].token).toBe(solo[0][0]);
    runner.release(20);
    expect(runner.cachedTokens).toBe(0);
  });
});

describe('router heads and hidden state (small)', () => {
  let runner: OnnxRunner;
  let prompts: number[][];
  beforeAll(async () => {
    runner = await OnnxRunner.load(tinyModelDir('small'));
    const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
    prompts = tinyQuestions(6).map((q) => tok.encodeChat([{ role: 'user', content: q }]));
  });
  afterAll(async () => runner?.close());

  it('scores every asked head once per step, batched, equal to one-row steps', async () => {
    const wants = { topK: 8, hidden: true, heads: ['citer', 'r2r', 'colm'] };
    const rows = prompts.map((p, i): StepRow => ({ ...row(100 + i, p, 0), wants: i % 2 ? wants : NO_WANTS }));
    const batched = await runner.step(rows);
    for (const [i, r] of rows.entries()) {
      const got = batched.rows[i];
      if (i % 2 === 0) {
        expect(got.heads).toEqual({});
        expect(got.hidden).toBeUndefined();
        expect(got.topIds).toHaveLength(0);
        continue;
      }
      expect(got.hidden).toHaveLength(runner.info.hiddenSize);
      expect(got.topIds).toHaveLength(8);
      const solo = (await runner.step([{ ...r, cacheId: 200 + i }])).rows[0];
      for (const h of ['citer', 'r2r', 'colm']) {
        expect(got.heads[h]).toBeGreaterThanOrEqual(0);
        expect(got.heads[h]).toBeLessThanOrEqual(1);
        expect(got.heads[h]).toBeCloseTo(solo.heads[h], 5);
      }
      runner.release(200 + i);
    }
    rows.forEach((r) => runner.release(r.cacheId));
  });

  it('rejects a head the model does not ship', async () => {
    await expect(runner.step([{ ...row(300, prompts[0], 0), wants: { topK: 0, hidden: false, heads: ['nope'] } }])).rejects.toThrow(/router head "nope"/);
  });
});
