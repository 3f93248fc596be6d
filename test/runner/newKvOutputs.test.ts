// A step that hands back only its new KV slots (the rewritten graph, written into the runner's own buffers) decodes as the graph as exported does.
import fs from 'node:fs';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kvNames, OnnxRunner, sessionOptions } from '../../runtime/runner/onnxRunner.ts';
import { prepareGraph } from '../../runtime/runner/graph/prepareGraph.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { GREEDY, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { tinyModelDir } from '../support/tinyFamily.ts';

/** The new-KV rewrite alone: logits and signals as exported. */
const newKvOnly = (model: Uint8Array, present: readonly string[], vocab: number) =>
  prepareGraph(model, { present, newKv: true, vocab, lastPosition: false, signals: false });

describe('the new-KV rewrite (prepareGraph)', () => {
  it('adds one output per present tensor: the slots the step appended, equal to the last slots of present', async () => {
    const folder = loadModelFolder(tinyModelDir('small'));
    const names = kvNames(folder.config.numLayers).present;
    const r = newKvOnly(fs.readFileSync(folder.onnxPath), names, folder.config.vocabSize);
    expect(r.newNames).toHaveLength(names.length);
    const rewritten = await ort.InferenceSession.create(r.model, sessionOptions(1));
    const { numKvHeads: kv, headDim: hd } = folder.config;
    const [B, T, S] = [3, 7, 2];
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: B * S }, (_, i) => BigInt(4 + (i % 9))),
        [B, S],
      ),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(B * (T + S)).fill(1n), [B, T + S]),
      position_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: B * S }, (_, i) => BigInt(T + (i % S))),
        [B, S],
      ),
    };
    for (const n of rewritten.inputNames)
      if (n.startsWith('past_key_values.'))
        feeds[n] = new ort.Tensor(
          'float32',
          Float32Array.from({ length: B * kv * T * hd }, (_, i) => Math.sin(i)),
          [B, kv, T, hd],
        );
    const out = await rewritten.run(feeds, [...names, ...r.newNames!]);
    names.forEach((p, i) => {
      const full = out[p].data as Float32Array;
      const added = out[r.newNames![i]];
      expect(added.dims).toEqual([B, kv, S, hd]);
      const mine = added.data as Float32Array;
      for (let row = 0; row < B * kv; row++)
        expect(mine.subarray(row * S * hd, (row + 1) * S * hd)).toEqual(full.subarray((row * (T + S) + T) * hd, (row + 1) * (T + S) * hd));
    });
    await rewritten.release();
  });

  it('leaves a graph alone whose present tensors it cannot find (a router head has none)', () => {
    const folder = loadModelFolder(tinyModelDir('small'));
    const head = Object.values(folder.routers)[0];
    expect(newKvOnly(fs.readFileSync(head.file), kvNames(folder.config.numLayers).present, folder.config.vocabSize).newNames).toBeUndefined();
  });
});

describe('OnnxRunner with new KV slots only (small)', () => {
  let own: OnnxRunner;
  let whole: OnnxRunner;
  beforeAll(async () => {
    [own, whole] = await Promise.all([OnnxRunner.load(tinyModelDir('small')), OnnxRunner.load(tinyModelDir('small'), { kvOutputs: 'present' })]);
  }, 60_000);
  afterAll(async () => Promise.all([own?.close(), whole?.close()]));

  it('loads the bundled model with the rewritten graph, and the other on request', () => {
    expect(own.kvOutputs).toBe('new');
    expect(whole.kvOutputs).toBe('present');
  });

  it('gives the same tokens and signals over steps that join, leave, grow past the headroom and fork, on recycled buffers', async () => {
    // six requests; each step a changing subset steps (re-packs), one decodes 40 steps alone (grows in place), one forks
    const prompt = (i: number) => Array.from({ length: 5 + 3 * i }, (_, k) => 4 + ((k * 7 + i * 5) % 20));
    const state = Array.from({ length: 6 }, (_, i) => ({ id: 100 + i, toks: prompt(i), pos: 0 }));
    const seq: number[][] = [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5], [0, 2, 4], [1, 3, 5], [0, 1, 2, 3, 4, 5], [0, 1], [0, 1], [5], [2, 3, 4, 5]];
    for (let k = 0; k < 40; k++) seq.push([0]);
    seq.push([0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5]);
    let steps = 0;
    for (const which of seq) {
      const rows: StepRow[] = which.map((i) => ({
        cacheId: state[i].id,
        requestId: `r${i}`,
        tokens: state[i].toks,
        position: state[i].pos,
        sampling: GREEDY,
        wants: { ...NO_WANTS, topK: 3 },
      }));
      const [a, b] = [await own.step(rows), await whole.step(rows)];
      which.forEach((i, k) => {
        const [x, y] = [a.rows[k], b.rows[k]];
        expect(x.token, `step ${steps} request ${i}`).toBe(y.token);
        expect(x.entropy).toBeCloseTo(y.entropy, 4);
        expect(x.topIds).toEqual(y.topIds);
        state[i].pos += state[i].toks.length;
        state[i].toks = [x.token];
      });
      steps++;
      if (steps === 6) {
        // request 1's first 6 tokens become request 6's cache, which then decodes beside the rest
        expect(own.fork(state[1].id, 200, 6)).toBe(true);
        expect(whole.fork(state[1].id, 200, 6)).toBe(true);
        state.push({ id: 200, toks: [7], pos: 6 });
        seq.splice(steps, 0, [6, 0, 3], [6]);
      }
    }
    expect(own.stats.repacks).toBeGreaterThan(3);
    // re-packs ran on buffers an earlier batch left (their stale slots masked), and the results above still matched
    expect(own.buffersReused).toBeGreaterThan(4);
    expect(whole.buffersReused).toBe(0);
    expect(own.cachedTokens).toBe(whole.cachedTokens);
  }, 60_000);
});
