// OnnxRunner.fork: a cache started from a copied prefix (of a batch row or of own storage) decodes exactly as a full prefill does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { GREEDY, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { soloGenerate } from './helpers.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

const row = (cacheId: number, tokens: readonly number[], position: number): StepRow => ({
  cacheId,
  requestId: `r${cacheId}`,
  tokens,
  position,
  sampling: GREEDY,
  wants: NO_WANTS,
});

/** Greedy from a cache already holding `from` tokens of `prompt`. */
async function continueFrom(runner: OnnxRunner, cacheId: number, prompt: readonly number[], from: number, maxNew: number): Promise<number[]> {
  const out: number[] = [];
  let toks = prompt.slice(from);
  let pos = from;
  for (let i = 0; i < maxNew; i++) {
    const res = await runner.step([row(cacheId, toks, pos)]);
    pos += toks.length;
    const t = res.rows[0].token;
    out.push(t);
    toks = [t];
    if (runner.info.eosTokenIds.includes(t)) break;
  }
  runner.release(cacheId);
  return out;
}

describe('OnnxRunner.fork (small)', () => {
  let runner: OnnxRunner;
  let prompts: number[][];
  beforeAll(async () => {
    runner = await OnnxRunner.load(tinyModelDir('small'));
    const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
    // two questions after one shared turn: the second prompt shares the first's opening
    const [q1, q2, q3] = tinyQuestions(3);
    const shared = [
      { role: 'user' as const, content: q1 },
      { role: 'assistant' as const, content: q1.split('*')[0] },
    ];
    prompts = [q2, q3].map((q) => tok.encodeChat([...shared, { role: 'user', content: q }]));
  }, 60_000);
  afterAll(async () => runner?.close());

  it('decodes from a prefix copied out of a batch row as from a full prefill', async () => {
    const [p, other] = prompts;
    let common = 0;
    while (p[common] === other[common]) common++;
    expect(common).toBeGreaterThan(8);
    const want = await soloGenerate(runner, 1, p, 24);
    // cache 2 holds `other` (its batch row, with a decoded token after it); the fork takes the shared part
    await runner.step([row(2, other, 0)]);
    expect(runner.fork(2, 3, common)).toBe(true);
    expect(runner.cacheLength(3)).toBe(common);
    expect(await continueFrom(runner, 3, p, common, 24)).toEqual(want);
    // the source is as it was: it decodes on as if nothing happened
    const next = await runner.step([row(2, [5], other.length)]);
    const fresh = await soloGenerate(runner, 9, [...other, 5], 1);
    expect(next.rows[0].token).toBe(fresh[0]);
    runner.release(2);
  });

  it('forks a fork (own storage), and refuses what it does not hold', async () => {
    const [p] = prompts;
    const want = await soloGenerate(runner, 1, p, 16);
    await runner.step([row(4, p.slice(0, 20), 0)]);
    expect(runner.fork(4, 5, 20)).toBe(true);
    runner.release(4);
    expect(runner.fork(5, 6, 12)).toBe(true);
    runner.release(5);
    expect(await continueFrom(runner, 6, p, 12, 16)).toEqual(want);
    expect(runner.fork(77, 8, 3)).toBe(false);
    await runner.step([row(7, p.slice(0, 5), 0)]);
    expect(runner.fork(7, 8, 6)).toBe(false);
    runner.release(7);
    expect(runner.cachedTokens).toBe(0);
  });
});
