// Batched prefill: requests reaching an engine thread together are prefilled in one runner call (prefix-cache hits feeding only their suffix), with the tokens of one-at-a-time runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../shared/trace.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import { buildAlgorithm } from '../../runtime/registry/algorithmSource.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { soloGenerate } from './helpers.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

const MAX_NEW = 24;
type BatchEvent = Extract<TraceEvent, { type: 'batch' }>;

describe('batched prefill on an engine thread (small)', () => {
  let thread: ThreadEngine;
  let reference: OnnxRunner;
  let tok: TextTokenizer;
  beforeAll(async () => {
    [thread, reference] = await Promise.all([
      ThreadEngine.start('small', { kind: 'onnx', folder: tinyModelDir('small') }),
      OnnxRunner.load(tinyModelDir('small')),
    ]);
    tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
  }, 60_000);
  afterAll(async () => {
    await thread?.close();
    await reference?.close();
  });

  it('N simultaneous arrivals, some starting from a cached prefix, go through one prefill step and give the solo tokens', async () => {
    const batches: BatchEvent[] = [];
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-immediate',
      prefixCache: true,
      checkInvariants: true,
      trace: { emit: (e) => void (e.type === 'batch' && batches.push(e)) },
      models: [{ name: 'small', thread, maxBatch: 16, threshold: 1, kvCapacityTokens: Infinity }],
    });
    const algorithm = buildAlgorithm({ kind: 'single', model: 'small' });
    const algorithmRef = { key: 'single:small', source: { kind: 'single' as const, model: 'small' } };
    const run = (id: string, prompt: number[]) => cluster.submit({ id, prompt, maxTokens: MAX_NEW, algorithm, algorithmRef }).done;

    const qs = tinyQuestions(6);
    const chat = (q: string) => tok.encodeChat([{ role: 'user', content: q }]);
    const warm = chat(qs[0]);
    // Hits: the warm prompt extended by a worked-answer chunk, and the warm prompt itself (all but its last token).
    // Misses: questions without the chat frame (no BOS, so nothing cached starts them). Lengths all differ.
    const [a, b] = qs[0].split('*');
    const prompts = [
      [...warm, ...tok.encode(`${a}*${b.slice(-1)}=`, false)],
      tok.encode(qs[1], false),
      warm.slice(),
      tok.encode(`${qs[2]} ${qs[3]}`, false),
      [...warm, ...tok.encode(`${a}*`, false)],
      tok.encode(qs[4], false),
    ];
    expect(new Set(prompts.map((p) => p.length)).size).toBe(prompts.length);

    // the warm request ends first, so its cache is in the prefix cache when the others come
    const w = await run('warm', warm);
    expect(w.status).toBe('done');
    // what its cache held: the prompt and every committed token fed back (the one reaching the length limit never is)
    const cached = [...warm, ...w.tokens].slice(0, warm.length + w.tokens.length - (w.finishReason === 'length' ? 1 : 0));
    await expect.poll(() => cluster.laneStats()[0].prefixEntries, { timeout: 2000 }).toBeGreaterThan(0);
    const hitsBefore = cluster.laneStats()[0].prefixHits;
    batches.length = 0;

    // one turn of the entry's event loop: the engine thread admits them together
    const results = await Promise.all(prompts.map((p, i) => run(`burst-${i}`, p)));

    const ids = prompts.map((_, i) => `burst-${i}`);
    const first = batches[0];
    expect(first.requestIds.slice().sort()).toEqual(ids.slice().sort());
    expect(first.phase).toBe('prefill');
    // every later step decodes one token per row: the prompts were all fed in the first runner call
    expect(batches.slice(1).every((x) => x.phase === 'decode')).toBe(true);
    // the hits fed only what the cache lacked (at least their last token); the misses all of theirs
    const common = (p: number[]) => p.findIndex((t, i) => t !== cached[i]);
    const hit = prompts.map((p) => Math.min(common(p) < 0 ? p.length : common(p), p.length - 1));
    expect(hit.map((n) => n > warm.length / 2)).toEqual([true, false, true, false, true, false]);
    expect(first.cachedTokens).toBe(hit.reduce((s, n) => s + n, 0));
    expect(first.tokens).toBe(prompts.reduce((s, p) => s + p.length, 0) - first.cachedTokens!);
    expect(cluster.laneStats()[0].prefixHits - hitsBefore).toBe(first.cachedTokens);

    // the tokens of one request at a time, prefilled alone and decoded alone on a runner of its own
    for (const [i, p] of prompts.entries()) {
      const solo = await soloGenerate(reference, 500 + i, p, MAX_NEW);
      const eos = solo.findIndex((t) => reference.info.eosTokenIds.includes(t));
      expect(results[i].status).toBe('done');
      expect(results[i].tokens, `prompt ${i}`).toEqual(eos >= 0 ? solo.slice(0, eos) : solo);
    }
  }, 60_000);
});
