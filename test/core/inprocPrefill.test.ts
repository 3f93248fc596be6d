// Batched prefill in the in-process placement: requests reaching the entry in one turn of its event loop are prefilled in one runner call, prefix-cache hits feeding only their suffix, with the tokens of one-at-a-time runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../shared/trace.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { buildAlgorithm } from '../../runtime/registry/algorithmSource.ts';
import type { ModelRunner, StepRow } from '../../runtime/runner/modelRunner.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { soloGenerate } from '../runner/helpers.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

const MAX_NEW = 16;
type BatchEvent = Extract<TraceEvent, { type: 'batch' }>;

describe('batched prefill in the in-process placement (small)', () => {
  let runner: OnnxRunner;
  let reference: OnnxRunner;
  let tok: TextTokenizer;
  beforeAll(async () => {
    [runner, reference] = await Promise.all([OnnxRunner.load(tinyModelDir('small')), OnnxRunner.load(tinyModelDir('small'))]);
    tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
  }, 60_000);
  afterAll(async () => {
    await runner?.close();
    await reference?.close();
  });

  it('requests submitted in one turn (each from its own callback, as HTTP requests come) go through one runner call', async () => {
    // every runner call, with the rows it was handed
    const calls: StepRow[][] = [];
    const counted: ModelRunner = new Proxy(runner, {
      get(target, key, receiver) {
        if (key === 'step') return (rows: StepRow[]) => (calls.push(rows), target.step(rows));
        const v = Reflect.get(target, key, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const batches: BatchEvent[] = [];
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-immediate',
      prefixCache: true,
      checkInvariants: true,
      trace: { emit: (e) => void (e.type === 'batch' && batches.push(e)) },
      models: [{ name: 'small', runner: counted, maxBatch: 16, threshold: 1, kvCapacityTokens: Infinity }],
    });
    expect(cluster.engine('small')?.core, 'in-process placement').toBeDefined();
    const algorithm = buildAlgorithm({ kind: 'single', model: 'small' });
    const run = (id: string, prompt: number[]) => cluster.submit({ id, prompt, maxTokens: MAX_NEW, algorithm }).done;

    const qs = tinyQuestions(5);
    const chat = (q: string) => tok.encodeChat([{ role: 'user', content: q }]);
    const warm = chat(qs[0]);
    const w = await run('warm', warm);
    expect(w.status).toBe('done');
    await expect.poll(() => cluster.laneStats()[0].prefixEntries, { timeout: 2000 }).toBeGreaterThan(0);
    const hitsBefore = cluster.laneStats()[0].prefixHits;
    calls.length = 0;
    batches.length = 0;

    // two hits (the warm prompt itself, and it extended) and three misses (no chat frame, so no cached BOS start)
    const prompts = [
      warm.slice(),
      tok.encode(qs[1], false),
      [...warm, ...tok.encode(qs[2].slice(0, 3), false)],
      tok.encode(qs[3], false),
      tok.encode(qs[4], false),
    ];
    const ids = prompts.map((_, i) => `burst-${i}`);
    // one setImmediate callback per request, all run in the same turn: the way a burst of HTTP requests reaches the entry
    const results = await Promise.all(
      prompts.map((p, i) => new Promise<Awaited<ReturnType<typeof run>>>((resolve) => setImmediate(() => void run(ids[i], p).then(resolve)))),
    );

    // the first runner call prefilled every one of them; every later call decodes one token per row
    expect(calls[0].length).toBe(prompts.length);
    expect(batches[0].requestIds.slice().sort()).toEqual(ids.slice().sort());
    expect(batches[0].phase).toBe('prefill');
    expect(batches.slice(1).every((b) => b.phase === 'decode')).toBe(true);
    // the prefix cache was still read: the hits fed only what it lacked
    expect(batches[0].cachedTokens).toBeGreaterThan(warm.length);
    expect(cluster.laneStats()[0].prefixHits - hitsBefore).toBe(batches[0].cachedTokens);

    for (const [i, p] of prompts.entries()) {
      const solo = await soloGenerate(reference, 700 + i, p, MAX_NEW);
      const eos = solo.findIndex((t) => reference.info.eosTokenIds.includes(t));
      expect(results[i].status).toBe('done');
      expect(results[i].tokens, `prompt ${i}`).toEqual(eos >= 0 ? solo.slice(0, eos) : solo);
    }
  }, 60_000);
});
