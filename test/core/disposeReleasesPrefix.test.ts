// An engine host that goes (a `begin` replacing it, a close) hands its prefix cache's KV back to the runner, which outlives it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { buildAlgorithm } from '../../runtime/registry/algorithmSource.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

describe('an engine host going away', () => {
  let runner: OnnxRunner;
  let tok: TextTokenizer;
  beforeAll(async () => {
    runner = await OnnxRunner.load(tinyModelDir('small'));
    tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
  }, 60_000);
  afterAll(async () => {
    await runner?.close();
  });

  it('releases the caches its prefix cache kept, so the next engine on the same runner starts from none', async () => {
    const make = () =>
      new Cluster({
        clock: createRealClock(),
        mode: 'async-immediate',
        prefixCache: true,
        models: [{ name: 'small', runner, maxBatch: 8, threshold: 1, kvCapacityTokens: Infinity }],
      });
    const algorithm = buildAlgorithm({ kind: 'single', model: 'small' });
    for (const round of [0, 1]) {
      const cluster = make();
      const done = await Promise.all(
        tinyQuestions(4).map(
          (q, i) => cluster.submit({ id: `r${round}-${i}`, prompt: tok.encodeChat([{ role: 'user', content: q }]), maxTokens: 8, algorithm }).done,
        ),
      );
      expect(done.map((d) => d.status)).toEqual(['done', 'done', 'done', 'done']);
      await expect.poll(() => cluster.laneStats()[0].prefixEntries, { timeout: 2000 }).toBeGreaterThan(0);
      // what the runner holds now is exactly what the prefix cache kept
      expect(runner.cachedTokens).toBeGreaterThan(0);
      await cluster.engine('small')!.close();
      expect(runner.cachedTokens).toBe(0);
    }
  });
});
