// The load-time rewrites: logits at the last position only, and signal nodes whose outputs equal the JavaScript reference on the same rows.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareGraph, type PreparedGraph } from '../../runtime/runner/graph/prepareGraph.ts';
import { MASKED, SIG } from '../../runtime/runner/graph/signalHead.ts';
import { kvNames, OnnxRunner, sessionOptions } from '../../runtime/runner/onnxRunner.ts';
import { concat, fields, GRAPH_INPUT, INT64, MODEL_GRAPH, valueInfo, wrap } from '../../runtime/runner/graph/onnxProto.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { analyzeRow } from '../../runtime/runner/sampling.ts';
import { GREEDY } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { soloGenerate } from './helpers.ts';
import { tinyModelDir } from '../support/tinyFamily.ts';

const folder = loadModelFolder(tinyModelDir('small'));
const { numKvHeads: kv, headDim: hd, vocabSize: V } = folder.config;
const [B, T, S] = [3, 4, 5];

function feeds(extra: Record<string, ort.Tensor> = {}): Record<string, ort.Tensor> {
  const f: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: B * S }, (_, i) => BigInt(3 + ((i * 7) % 20))),
      [B, S],
    ),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(B * (T + S)).fill(1n), [B, T + S]),
    position_ids: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: B * S }, (_, i) => BigInt(T + (i % S))),
      [B, S],
    ),
    ...extra,
  };
  for (const n of kvNames(folder.config.numLayers).past)
    f[n] = new ort.Tensor(
      'float32',
      Float32Array.from({ length: B * kv * T * hd }, (_, i) => Math.sin(i * 0.37)),
      [B, kv, T, hd],
    );
  return f;
}

const ALL = [0, 1, 2];
const rowList = (rows: number[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(rows, BigInt), [rows.length]);
const signalFeeds = (
  k: number,
  invT: number[],
  u: number[],
  groups: { sig?: number[]; draw?: number[]; cut?: number[]; ban?: number[] } = {},
): Record<string, ort.Tensor> => ({
  [SIG.k]: new ort.Tensor('int64', BigInt64Array.from([BigInt(k)]), [1]),
  [SIG.invT]: new ort.Tensor('float32', Float32Array.from(invT), [B, 1, 1]),
  [SIG.u]: new ort.Tensor('float32', Float32Array.from(u), [B, 1, 1]),
  [SIG.sigRows]: rowList(groups.sig ?? ALL),
  [SIG.drawRows]: rowList(groups.draw ?? ALL),
  [SIG.cutRows]: rowList(groups.cut ?? ALL),
  [SIG.banIds]: new ort.Tensor('int64', BigInt64Array.from(groups.ban ?? [0, 0, 0], BigInt), [B, 1, 1]),
  [SIG.banOn]: new ort.Tensor('bool', Uint8Array.from((groups.ban ?? [-1, -1, -1]).map((t) => (t >= 0 ? 1 : 0))), [B, 1, 1]),
  // no masked rows (the runner's tests drive the masked group): row 0 stands in, as ORT's TopK crashes over none
  [SIG.maskRows]: rowList([0]),
  [SIG.allowed]: new ort.Tensor('bool', new Uint8Array(V).fill(1), [1, 1, V]),
  [MASKED.sigRows]: rowList([]),
  [MASKED.drawRows]: rowList([]),
  [MASKED.cutRows]: rowList([]),
});

describe('prepareGraph (small)', () => {
  let asIs: ort.InferenceSession;
  let prepared: PreparedGraph;
  let rewritten: ort.InferenceSession;
  let full: ort.InferenceSession;
  beforeAll(async () => {
    const bytes = fs.readFileSync(folder.onnxPath);
    prepared = prepareGraph(bytes, { present: kvNames(folder.config.numLayers).present, newKv: true, vocab: V });
    asIs = await ort.InferenceSession.create(folder.onnxPath, sessionOptions(1));
    rewritten = await ort.InferenceSession.create(prepared.model, sessionOptions(1));
    // signal nodes over [B, S, V] logits: they take the last position themselves
    full = await ort.InferenceSession.create(prepareGraph(bytes, { present: [], newKv: false, vocab: V, lastPosition: false }).model, sessionOptions(1));
  });
  afterAll(async () => {
    for (const s of [asIs, rewritten, full]) await s?.release();
  });

  it('slices the LM head to the last position: logits [B, 1, V] equal the last row of the graph as exported; hidden states untouched', async () => {
    expect(prepared.logits).toBe('sliced');
    const a = await asIs.run(feeds(), ['logits', 'hidden_states']);
    const b = await rewritten.run(feeds(signalFeeds(2, [1, 1, 1], [0, 0, 0])), ['logits', 'hidden_states']);
    expect(b.logits.dims).toEqual([B, 1, V]);
    expect(b.hidden_states.dims).toEqual(a.hidden_states.dims);
    const la = a.logits.data as Float32Array;
    const lb = b.logits.data as Float32Array;
    for (let r = 0; r < B; r++) {
      const last = la.subarray((r * S + S - 1) * V, (r * S + S) * V);
      const mine = lb.subarray(r * V, (r + 1) * V);
      for (let i = 0; i < V; i++) expect(mine[i]).toBeCloseTo(last[i], 4);
    }
  });

  it('signal outputs equal the JavaScript reference over the same rows, sliced or not', async () => {
    const k = 7;
    const a = await asIs.run(feeds(), ['logits']);
    for (const s of [rewritten, full]) {
      const o = await s.run(feeds(signalFeeds(k, [1, 1, 1], [0.5, 0.5, 0.5])), [SIG.topIds, SIG.topLogits, SIG.lse, SIG.entropy]);
      for (let r = 0; r < B; r++) {
        const row = (a.logits.data as Float32Array).slice((r * S + S - 1) * V, (r * S + S) * V);
        const ref = analyzeRow(row, { sampling: GREEDY, position: 0, model: 'm', topK: k });
        const ids = Array.from((o[SIG.topIds].data as BigInt64Array).subarray(r * k, r * k + k), Number);
        expect(ids).toEqual(ref.topIds);
        const lse = (o[SIG.lse].data as Float32Array)[r];
        const top = (o[SIG.topLogits].data as Float32Array)[r * k];
        expect(Math.exp(top - lse)).toBeCloseTo(ref.maxProb, 5);
        expect((o[SIG.entropy].data as Float32Array)[r] / Math.log(V)).toBeCloseTo(ref.entropy, 5);
      }
    }
  });

  it("ORT's draw is the inverse CDF in id order over the tempered probabilities, for every u", async () => {
    const invT = [1, 1 / 0.7, 1 / 1.5];
    for (const u of [0, 0.013, 0.25, 0.5, 0.77, 0.999]) {
      const o = await rewritten.run(feeds(signalFeeds(2, invT, [u, u, u])), [SIG.draw, SIG.weights, SIG.weightSum, SIG.drawLogit, 'logits']);
      const w = o[SIG.weights].data as Float32Array;
      for (let r = 0; r < B; r++) {
        let z = 0;
        for (let i = 0; i < V; i++) z += w[r * V + i];
        let acc = 0;
        let want = V - 1;
        for (let i = 0; i < V; i++) {
          acc += w[r * V + i];
          if (acc > u * z) {
            want = i;
            break;
          }
        }
        const got = Number((o[SIG.draw].data as BigInt64Array)[r]);
        expect(got).toBe(want);
        expect((o[SIG.drawLogit].data as Float32Array)[r]).toBe((o.logits.data as Float32Array)[r * V + got]);
        expect((o[SIG.weightSum].data as Float32Array)[r]).toBeCloseTo(1, 5);
      }
    }
  });

  it('runs each group of nodes over the rows named for it only: a group of none yields empty outputs', async () => {
    const all = await rewritten.run(feeds(signalFeeds(3, [1, 2, 0.5], [0.3, 0.6, 0.9])), [SIG.topIds, SIG.lse, SIG.entropy, SIG.draw, SIG.weights]);
    const none = await rewritten.run(feeds(signalFeeds(3, [1, 2, 0.5], [0.3, 0.6, 0.9], { sig: [], draw: [], cut: [] })), [
      SIG.topIds,
      SIG.lse,
      SIG.draw,
      SIG.weights,
    ]);
    expect(none[SIG.topIds].data).toEqual(all[SIG.topIds].data);
    // ORT may shape an empty group's outputs loosely; it holds no row
    for (const o of [SIG.lse, SIG.draw, SIG.weights]) expect(none[o].dims[0]).toBe(0);
    const some = await rewritten.run(feeds(signalFeeds(3, [1, 2, 0.5], [0.3, 0.6, 0.9], { sig: [2], draw: [0, 2], cut: [1] })), [
      SIG.lse,
      SIG.entropy,
      SIG.draw,
      SIG.weights,
    ]);
    expect(Array.from(some[SIG.lse].data as Float32Array)).toEqual([(all[SIG.lse].data as Float32Array)[2]]);
    expect(Array.from(some[SIG.entropy].data as Float32Array)).toEqual([(all[SIG.entropy].data as Float32Array)[2]]);
    expect(Array.from(some[SIG.draw].data as BigInt64Array)).toEqual([(all[SIG.draw].data as BigInt64Array)[0], (all[SIG.draw].data as BigInt64Array)[2]]);
    expect(Array.from(some[SIG.weights].data as Float32Array)).toEqual(Array.from((all[SIG.weights].data as Float32Array).subarray(V, 2 * V)));
  });

  it("leaves each row's banned id out of its draws (probability 0, the rest redrawn), not out of its signals", async () => {
    const plain = await rewritten.run(feeds(signalFeeds(3, [1, 1, 1], [0.5, 0.5, 0.5])), [SIG.topIds, SIG.draw, SIG.weights, SIG.lse]);
    // each row bans the token its unbanned draw picked; row 1 bans nothing (-1)
    const picked = Array.from(plain[SIG.draw].data as BigInt64Array, Number);
    const ban = [picked[0], -1, picked[2]];
    const o = await rewritten.run(feeds(signalFeeds(3, [1, 1, 1], [0.5, 0.5, 0.5], { ban: ban.map((t) => Math.max(t, 0)) })), [
      SIG.topIds,
      SIG.draw,
      SIG.weights,
      SIG.lse,
    ]);
    const fix = (t: number) => (t < 0 ? -1 : t);
    const on = await rewritten.run(
      feeds({
        ...signalFeeds(3, [1, 1, 1], [0.5, 0.5, 0.5]),
        [SIG.banIds]: new ort.Tensor('int64', BigInt64Array.from(ban.map((t) => BigInt(Math.max(t, 0)))), [B, 1, 1]),
        [SIG.banOn]: new ort.Tensor('bool', Uint8Array.from(ban.map((t) => (fix(t) >= 0 ? 1 : 0))), [B, 1, 1]),
      }),
      [SIG.topIds, SIG.draw, SIG.weights, SIG.lse],
    );
    expect(on[SIG.lse].data).toEqual(plain[SIG.lse].data);
    expect(on[SIG.topIds].data).toEqual(plain[SIG.topIds].data);
    const w = on[SIG.weights].data as Float32Array;
    for (let r = 0; r < B; r++) {
      const got = Number((on[SIG.draw].data as BigInt64Array)[r]);
      if (ban[r] < 0) {
        expect(got).toBe(picked[r]);
        continue;
      }
      expect(w[r * V + ban[r]]).toBe(0);
      expect(got).not.toBe(ban[r]);
      let z = 0;
      for (let i = 0; i < V; i++) z += w[r * V + i];
      let acc = 0;
      let want = V - 1;
      for (let i = 0; i < V; i++) {
        acc += w[r * V + i];
        if (acc > 0.5 * z) {
          want = i;
          break;
        }
      }
      expect(got).toBe(want);
    }
    expect(o[SIG.draw].dims).toEqual(on[SIG.draw].dims);
  });

  it('leaves a graph whose logits no MatMul makes as it is, saying why', () => {
    const head = Object.values(folder.routers)[0];
    const other = prepareGraph(fs.readFileSync(head.file), { present: [], newKv: false, vocab: V, signals: false });
    expect(other.logits).toBe('full');
    expect(other.logitsNote).toMatch(/logits are made by no node found/);
  });
});

describe('rows that read no signal (StepWants.signals false)', () => {
  it('get the same tokens, their signals left 0, unless they ask for logprobs or top-k pairs', async () => {
    const runner = await OnnxRunner.load(tinyModelDir('small'));
    const prompt = [5, 9, 12, 4, 7, 3];
    const quiet = { topK: 0, hidden: false, heads: [], signals: false };
    const step = async (cacheId: number, sampling: typeof GREEDY, wants: typeof quiet | typeof NO_WANTS) =>
      (await runner.step([{ cacheId, requestId: `q${cacheId}`, tokens: prompt, position: 0, sampling, wants }])).rows[0];
    try {
      for (const sampling of [GREEDY, { temperature: 0.8, topP: 1, topK: 0, seed: 3 }, { temperature: 0.8, topP: 0.9, topK: 0, seed: 3 }]) {
        const read = await step(1, sampling, NO_WANTS);
        const unread = await step(2, sampling, quiet);
        expect(unread.token).toBe(read.token);
        expect(read.entropy).toBeGreaterThan(0);
        expect(read.maxProb).toBeGreaterThan(0);
        expect([unread.entropy, unread.maxProb, unread.margin, unread.tokenProb]).toEqual([0, 0, 0, 0]);
        const logprobs = await step(3, { ...sampling, topLogprobs: 2 }, quiet);
        expect(logprobs.tokenProb).toBeCloseTo(read.tokenProb, 6);
        expect(logprobs.entropy).toBeCloseTo(read.entropy, 6);
        const pairs = await step(4, sampling, { ...quiet, topK: 3 });
        const readPairs = await step(5, sampling, { ...NO_WANTS, topK: 3 });
        expect(pairs.topProbs).toHaveLength(3);
        pairs.topProbs.forEach((p, j) => expect(p).toBeCloseTo(readPairs.topProbs[j], 6));
      }
    } finally {
      await runner.close();
    }
  });
});

describe('an export with its own num_logits_to_keep input', () => {
  let dir: string;
  beforeAll(() => {
    // the small model with one more (unused) input of that name: the runner feeds it and still reads the last position
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keep-'));
    fs.cpSync(tinyModelDir('small'), dir, { recursive: true });
    const top = fields(fs.readFileSync(folder.onnxPath));
    const parts = top.map((f) =>
      f.field === MODEL_GRAPH ? wrap(MODEL_GRAPH, concat([f.bytes!, valueInfo(GRAPH_INPUT, 'num_logits_to_keep', INT64)])) : f.raw,
    );
    fs.writeFileSync(path.join(dir, 'onnx', 'model.onnx'), concat(parts));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is fed 1 instead of rewritten, and decodes as the bundled model does', async () => {
    const [mine, bundled] = await Promise.all([OnnxRunner.load(dir, { name: 'small' }), OnnxRunner.load(tinyModelDir('small'))]);
    expect(mine.logitsMode).toEqual({ input: 'num_logits_to_keep' });
    expect(bundled.logitsMode).toBe('sliced');
    const prompt = [5, 9, 12, 4, 7, 3];
    const sampling = { temperature: 0.8, topP: 0.9, topK: 0, seed: 11 };
    expect(await soloGenerate(mine, 1, prompt, 12, sampling)).toEqual(await soloGenerate(bundled, 1, prompt, 12, sampling));
    await Promise.all([mine.close(), bundled.close()]);
  });
});
