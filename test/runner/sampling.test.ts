// Signals and seeded sampling: exact formulas, reproducible draws, no dependence on batch composition.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeRow, drawUniform, sampleToken, topIndices } from '../../runtime/runner/sampling.ts';
import { GREEDY, type SamplingParams, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

const base = { position: 5, model: 'm', topK: 3 };

describe('analyzeRow', () => {
  it('uniform logits: entropy 1, margin 0', () => {
    const a = analyzeRow(new Float32Array(10).fill(2), { ...base, sampling: GREEDY });
    expect(a.entropy).toBeCloseTo(1, 10);
    expect(a.maxProb).toBeCloseTo(0.1, 10);
    expect(a.margin).toBeCloseTo(0, 10);
  });

  it('computes entropy, margin, top-k and greedy token from one softmax', () => {
    const logits = new Float32Array([0, Math.log(6), Math.log(3), 0]);
    // probs 1/11, 6/11, 3/11, 1/11
    const a = analyzeRow(logits, { ...base, sampling: GREEDY, topLogitsK: 2 });
    const p = [1, 6, 3, 1].map((x) => x / 11);
    const h = -p.reduce((s, q) => s + q * Math.log(q), 0) / Math.log(4);
    expect(a.token).toBe(1);
    expect(a.entropy).toBeCloseTo(h, 6);
    expect(a.maxProb).toBeCloseTo(6 / 11, 6);
    expect(a.margin).toBeCloseTo(3 / 11, 6);
    expect(a.tokenProb).toBeCloseTo(6 / 11, 6);
    expect(a.topIds).toEqual([1, 2, 0]);
    expect(a.topProbs[1]).toBeCloseTo(3 / 11, 6);
    expect(a.topLogits).toEqual([Math.fround(Math.log(6)), Math.fround(Math.log(3))]);
  });

  it('suppressEos leaves EOS out of the draw, greedy and sampled, and nothing else changes', () => {
    const logits = new Float32Array([0, Math.log(6), Math.log(3), 0]);
    const eos = 1;
    const free = analyzeRow(logits, { ...base, sampling: GREEDY, eosTokenIds: [eos] });
    const banned = analyzeRow(logits, { ...base, sampling: { ...GREEDY, suppressEos: true }, eosTokenIds: [eos] });
    expect(free.token).toBe(1);
    expect(banned.token).toBe(2);
    // The signals describe the model's distribution, EOS included; the logits are left as they were.
    expect({ ...banned, token: 0, tokenProb: 0 }).toEqual({ ...free, token: 0, tokenProb: 0 });
    expect(banned.tokenProb).toBeCloseTo(3 / 11, 6);
    expect(Array.from(logits)).toEqual(Array.from(new Float32Array([0, Math.log(6), Math.log(3), 0])));
    const counts = [0, 0, 0, 0];
    for (let seed = 0; seed < 4000; seed++) {
      counts[
        analyzeRow(logits, { ...base, position: seed, sampling: { temperature: 1, topP: 1, topK: 0, seed, suppressEos: true }, eosTokenIds: [eos] }).token
      ]++;
    }
    expect(counts[eos]).toBe(0);
    // What is left is drawn as renormalised: 1/5, 3/5, 1/5.
    expect(counts[2] / 4000).toBeGreaterThan(0.55);
    expect(counts[2] / 4000).toBeLessThan(0.65);
    expect(counts[0] / 4000).toBeGreaterThan(0.17);
    expect(counts[0] / 4000).toBeLessThan(0.23);
  });

  it('topIndices keeps the best k in order', () => {
    expect(topIndices(new Float32Array([3, 9, 1, 9, 4]), 3)).toEqual([1, 3, 4]);
  });
});

describe('seeded draws', () => {
  it('are a pure function of (seed, position, model, stream)', () => {
    expect(drawUniform(42, 7, 'small')).toBe(drawUniform(42, 7, 'small'));
    expect(drawUniform(42, 7, 'small')).not.toBe(drawUniform(42, 8, 'small'));
    expect(drawUniform(42, 7, 'small')).not.toBe(drawUniform(42, 7, 'large'));
    expect(drawUniform(42, 7, 'small')).not.toBe(drawUniform(43, 7, 'small'));
    expect(drawUniform(42, 7, 'small', 1)).not.toBe(drawUniform(42, 7, 'small', 2));
  });

  it('look uniform', () => {
    const n = 20000;
    const bins = new Array(10).fill(0);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const u = drawUniform(i % 97, Math.floor(i / 97), 'x');
      expect(u).toBeGreaterThanOrEqual(0);
      expect(u).toBeLessThan(1);
      bins[Math.floor(u * 10)]++;
      sum += u;
    }
    expect(sum / n).toBeCloseTo(0.5, 1);
    for (const b of bins) expect(Math.abs(b - n / 10)).toBeLessThan((n / 10) * 0.1);
  });

  it('top-k 1 is greedy; top-p keeps the nucleus; temperature sampling follows the distribution', () => {
    const logits = new Float32Array([1, 3, 2, 0]);
    const s = (p: Partial<SamplingParams>): SamplingParams => ({ temperature: 1, topP: 1, topK: 0, seed: 0, ...p });
    for (const u of [0, 0.3, 0.99]) expect(sampleToken(logits, 3, s({ topK: 1 }), u)).toBe(1);
    for (const u of [0, 0.5, 0.999]) expect([1, 2]).toContain(sampleToken(logits, 3, s({ topP: 0.8 }), u));
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[sampleToken(logits, 3, s({}), (i + 0.5) / 4000)]++;
    const z = [1, 3, 2, 0].reduce((a, x) => a + Math.exp(x), 0);
    counts.forEach((c, i) => expect(c / 4000).toBeCloseTo(Math.exp([1, 3, 2, 0][i]) / z, 2));
  });
});

describe('sampling through the runner', () => {
  let runner: OnnxRunner;
  let prompts: number[][];
  beforeAll(async () => {
    runner = await OnnxRunner.load(tinyModelDir('small'));
    const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
    prompts = tinyQuestions(6).map((q) => tok.encodeChat([{ role: 'user', content: q }]));
  });
  afterAll(async () => runner?.close());

  // hot enough that the confident tiny model actually branches
  const sampling = (seed: number): SamplingParams => ({ temperature: 3, topP: 0.98, topK: 0, seed });

  /** Runs the given requests together (all decode in lock-step) and returns each one's tokens. */
  async function together(reqs: { id: number; prompt: number[]; seed: number }[], steps: number): Promise<number[][]> {
    const out = reqs.map(() => [] as number[]);
    const next = reqs.map((r) => r.prompt);
    const pos = reqs.map(() => 0);
    for (let s = 0; s < steps; s++) {
      const rows: StepRow[] = reqs.map((r, i) => ({
        cacheId: r.id,
        requestId: `s${r.id}`,
        tokens: next[i],
        position: pos[i],
        sampling: sampling(r.seed),
        wants: NO_WANTS,
      }));
      const res = await runner.step(rows);
      res.rows.forEach((t, i) => {
        pos[i] += next[i].length;
        out[i].push(t.token);
        next[i] = [t.token];
      });
    }
    reqs.forEach((r) => runner.release(r.id));
    return out;
  }

  it('is reproducible for a seed and independent of batch composition', async () => {
    const alone = await together([{ id: 1, prompt: prompts[0], seed: 7 }], 16);
    const again = await together([{ id: 2, prompt: prompts[0], seed: 7 }], 16);
    expect(again).toEqual(alone);
    const crowd = await together(
      [
        { id: 3, prompt: prompts[1], seed: 1 },
        { id: 4, prompt: prompts[0], seed: 7 },
        { id: 5, prompt: prompts[2], seed: 9 },
        { id: 6, prompt: prompts[3], seed: 7 },
      ],
      16,
    );
    expect(crowd[1]).toEqual(alone[0]);
    // other seeds give other continuations
    const others = await together(
      [8, 9, 10, 11].map((seed, i) => ({ id: 20 + i, prompt: prompts[0], seed })),
      16,
    );
    expect(others.some((o) => JSON.stringify(o) !== JSON.stringify(alone[0]))).toBe(true);
  });

  it('suppressEos: the real model never samples its EOS, greedy or hot, while it does without', async () => {
    const [eos] = runner.info.eosTokenIds;
    const decode = async (id: number, sampling: SamplingParams, steps: number): Promise<number[]> => {
      const out: number[] = [];
      let next = prompts[0];
      let pos = 0;
      for (let s = 0; s < steps; s++) {
        const [t] = (await runner.step([{ cacheId: id, requestId: `e${id}`, tokens: next, position: pos, sampling, wants: NO_WANTS }])).rows;
        pos += next.length;
        out.push(t.token);
        next = [t.token];
      }
      runner.release(id);
      return out;
    };
    // Greedy, the small model answers and ends: its EOS comes within the first 60 tokens.
    const free = await decode(40, GREEDY, 60);
    const cut = free.indexOf(eos);
    expect(cut).toBeGreaterThan(0);
    const held = await decode(41, { ...GREEDY, suppressEos: true }, 60);
    expect(held).not.toContain(eos);
    expect(held.slice(0, cut)).toEqual(free.slice(0, cut));
    for (const seed of [1, 2, 3]) expect(await decode(50 + seed, { ...sampling(seed), suppressEos: true }, 60)).not.toContain(eos);
  });
});
