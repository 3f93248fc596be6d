// Grammar masks in the ONNX runner (real-shaped qwen3-tiny, V = 151,936), in a worker thread and in the simulated runner: draws only allowed tokens, masked signals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { WorkerRunner } from '../../runtime/runner/workerRunner.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { allowedIds, allows, maskWords } from '../../runtime/runner/maskedRow.ts';
import type { ModelRunner, SamplingParams, StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS, type StepWants } from '../../shared/algorithm.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';
import { maskOf, randomMask } from './maskFixtures.ts';

const GREEDY: SamplingParams = { temperature: 0, topP: 1, topK: 0, seed: 1 };
const SAMPLED: SamplingParams[] = [
  { temperature: 0.8, topP: 1, topK: 0, seed: 1 },
  { temperature: 1, topP: 0.9, topK: 20, seed: 1 },
  { temperature: 0.7, topP: 1, topK: 0, minP: 0.1, seed: 1, penalties: { frequency: 0.5, presence: 0.2, outputFrom: 0, logitBias: [[5, 3]] } },
];
const WANTS: StepWants = { ...NO_WANTS, topK: 3 };
const PROMPTS = [
  [9707, 11, 1246, 525],
  [785, 3974, 13876],
  [40, 1079, 264, 1273, 13],
  [3838, 374],
];

interface Live {
  cacheId: number;
  tokens: number[];
  position: number;
}

/** Decodes the prompts together for `steps` steps; `row` shapes each step's row (its mask, sampling); returns every step's rows and outputs. */
async function decode(runner: ModelRunner, firstCache: number, steps: number, row: (i: number, step: number) => Partial<StepRow>) {
  const live: Live[] = PROMPTS.map((p, i) => ({ cacheId: firstCache + i, tokens: p, position: 0 }));
  const seen: { row: StepRow; token: number; entropy: number; maxProb: number; tokenProb: number; topIds: readonly number[]; topProbs: readonly number[] }[] =
    [];
  for (let s = 0; s < steps; s++) {
    const rows: StepRow[] = live.map((l, i) => ({
      cacheId: l.cacheId,
      requestId: `q${l.cacheId}`,
      tokens: l.tokens,
      position: l.position,
      sampling: GREEDY,
      wants: WANTS,
      ...row(i, s),
    }));
    const out = await runner.step(rows);
    live.forEach((l, i) => {
      l.position += l.tokens.length;
      l.tokens = [out.rows[i].token];
      seen.push({ row: rows[i], ...out.rows[i] });
    });
  }
  for (const l of live) runner.release(l.cacheId);
  return seen;
}

function expectAllowed(seen: Awaited<ReturnType<typeof decode>>): void {
  for (const s of seen) {
    if (!s.row.mask) continue;
    expect(allows(s.row.mask, s.token), `${s.row.requestId} drew ${s.token}`).toBe(true);
    for (const t of s.topIds) expect(allows(s.row.mask, t)).toBe(true);
  }
}

/** The properties every runner must show, over its vocabulary V. */
function maskCases(name: string, runner: () => ModelRunner, V: number): void {
  describe(name, () => {
    it('greedy and sampled draws only return allowed tokens (random dense and sparse masks, many seeds), unmasked rows beside them unchanged', async () => {
      let masked = 0;
      for (let seed = 1; seed <= 6; seed++) {
        const sampling = (i: number): SamplingParams => (i === 0 ? GREEDY : { ...SAMPLED[(i + seed) % SAMPLED.length], seed });
        const seen = await decode(runner(), 100 + seed * 10, 3, (i, s) =>
          i === 3 ? { sampling: sampling(i) } : { sampling: sampling(i), mask: randomMask(V, i === 1 ? 3 / V : 0.5, seed * 100 + s * 10 + i) },
        );
        expectAllowed(seen);
        masked += seen.filter((s) => s.row.mask).length;
        // the unmasked row decodes as it does alone in a batch of unmasked rows
        const plain = await decode(runner(), 300 + seed * 10, 3, (i) => ({ sampling: sampling(i) }));
        expect(seen.filter((_, k) => k % 4 === 3).map((s) => s.token)).toEqual(plain.filter((_, k) => k % 4 === 3).map((s) => s.token));
      }
      expect(masked).toBe(6 * 3 * 3);
    });

    it('a one-token mask always yields that token, with certain signals', async () => {
      const seen = await decode(runner(), 400, 3, (i, s) => ({
        sampling: i === 0 ? GREEDY : SAMPLED[(i + s) % 3],
        mask: maskOf(V, [(i * 7919 + s * 104729 + 11) % V]),
      }));
      for (const s of seen) {
        expect(s.token).toBe(allowedIds(s.row.mask!, V)[0]);
        expect(s).toMatchObject({ entropy: 0, maxProb: 1, tokenProb: 1 });
      }
    });

    it('a mask allowing nothing fails the step, naming the request', async () => {
      const rows: StepRow[] = [
        { cacheId: 500, requestId: 'req-empty-mask', tokens: PROMPTS[0], position: 0, sampling: GREEDY, wants: NO_WANTS, mask: new Int32Array(maskWords(V)) },
      ];
      await expect(Promise.resolve().then(() => runner().step(rows))).rejects.toThrow(/req-empty-mask.*allows no token/);
      runner().release(500);
    });
  });
}

describe('grammar masks', () => {
  let onnx: OnnxRunner;
  let worker: WorkerRunner;
  let V = 0;
  beforeAll(async () => {
    const dir = realShapeFolder('qwen3-tiny').dir;
    [onnx, worker] = await Promise.all([OnnxRunner.load(dir), WorkerRunner.start(dir)]);
    V = onnx.info.vocabSize;
  }, 120_000);
  afterAll(async () => {
    await onnx?.close();
    await worker?.close();
  });

  maskCases('OnnxRunner', () => onnx, 151936);
  maskCases('WorkerRunner', () => worker, 151936);
  maskCases('SimRunner', () => sim, 1000);
  const sim = new SimRunner({ name: 'sim', vocabSize: 1000, eosTokenIds: [2] });

  it('masked signals are the softmax renormalised over the allowed tokens: an all-allowed mask gives the unmasked signals; a two-token mask two probabilities summing to 1', async () => {
    expect(V).toBe(151936);
    const all = new Int32Array(maskWords(V)).fill(-1);
    const plain = await decode(onnx, 600, 3, () => ({ wants: { ...WANTS, topK: 4 } }));
    const full = await decode(onnx, 610, 3, () => ({ wants: { ...WANTS, topK: 4 }, mask: all }));
    full.forEach((f, k) => {
      const p = plain[k];
      expect(f.token).toBe(p.token);
      expect(f.topIds).toEqual(p.topIds);
      for (const key of ['entropy', 'maxProb', 'tokenProb'] as const) expect(f[key]).toBeCloseTo(p[key], 5);
    });
    // two allowed tokens: the pair's raw probabilities, renormalised
    const pair = await decode(onnx, 620, 1, (i) => ({ wants: { ...WANTS, topK: 4 }, mask: maskOf(V, plain[i].topIds.slice(1, 3) as number[]) }));
    pair.forEach((m, i) => {
      const [p1, p2] = plain[i].topProbs.slice(1, 3);
      expect(m.topIds).toEqual(plain[i].topIds.slice(1, 3));
      expect(m.topProbs[0]).toBeCloseTo(p1 / (p1 + p2), 4);
      expect(m.topProbs[0] + m.topProbs[1]).toBeCloseTo(1, 6);
      expect(m.maxProb).toBeCloseTo(p1 / (p1 + p2), 4);
      expect(m.entropy).toBeGreaterThan(0);
    });
  });

  it("the graph's masked group and analyzeMasked agree: same tokens, signals within 1e-4 (random masks, every sampling, a banned EOS)", async () => {
    const js = await OnnxRunner.load(realShapeFolder('qwen3-tiny').dir, { masks: 'js' });
    try {
      const eos = onnx.info.eosTokenIds[0];
      const samplings: SamplingParams[] = [
        GREEDY,
        ...SAMPLED,
        { temperature: 0.9, topP: 0.8, topK: 0, seed: 1 },
        { temperature: 1.1, topP: 1, topK: 7, seed: 1 },
        { temperature: 1, topP: 1, topK: 0, minP: 0.2, seed: 1 },
        { ...GREEDY, suppressEos: true },
        { temperature: 0.8, topP: 0.95, topK: 0, seed: 1, suppressEos: true },
      ];
      const densities = [0.5, 0.02, 3 / V, 1 / V];
      let rows = 0;
      for (let seed = 1; seed <= 8; seed++) {
        const row = (i: number, s: number): Partial<StepRow> => {
          const mask = randomMask(V, densities[(i + seed) % 4], seed * 1000 + s * 10 + i);
          // EOS allowed now and then: with suppressEos the draw leaves it out, unless it is all the grammar allows
          if ((seed + s) % 3 === 0) mask[eos >>> 5] |= 1 << (eos & 31);
          return { sampling: { ...samplings[(i * 3 + seed + s) % samplings.length], seed }, mask, wants: { ...WANTS, topK: 4 } };
        };
        const g = await decode(onnx, 800 + seed * 10, 3, row);
        const j = await decode(js, 800 + seed * 10, 3, row);
        expect(g.map((x) => x.token)).toEqual(j.map((x) => x.token));
        g.forEach((x, k) => {
          const y = j[k];
          expect(x.topIds).toEqual(y.topIds);
          for (const key of ['entropy', 'maxProb', 'tokenProb'] as const) expect(Math.abs(x[key] - y[key]), `${key} of ${x.row.requestId}`).toBeLessThan(1e-4);
          x.topProbs.forEach((p, m) => expect(Math.abs(p - y.topProbs[m])).toBeLessThan(1e-4));
        });
        expectAllowed(g);
        rows += g.length;
      }
      expect(rows).toBe(8 * 3 * PROMPTS.length);
      // a grammar allowing only the banned EOS wins over the ban, on both paths
      const only = (): Partial<StepRow> => ({ sampling: { temperature: 0.7, topP: 0.9, topK: 0, seed: 5, suppressEos: true }, mask: maskOf(V, [eos]) });
      for (const r of [onnx, js]) expect((await decode(r, 900, 1, only)).map((x) => x.token)).toEqual(PROMPTS.map(() => eos));
    } finally {
      await js.close();
    }
  });

  it('the worker runner draws the same masked tokens as the in-thread runner', async () => {
    const row = (i: number, s: number): Partial<StepRow> => ({
      sampling: i % 2 ? { ...SAMPLED[i % 3], seed: 7 } : GREEDY,
      mask: randomMask(V, i === 1 ? 3 / V : 0.5, 40 + s * 4 + i),
    });
    const a = await decode(onnx, 700, 3, row);
    const b = await decode(worker, 700, 3, row);
    expect(b.map((s) => s.token)).toEqual(a.map((s) => s.token));
    expectAllowed(b);
  });
});
