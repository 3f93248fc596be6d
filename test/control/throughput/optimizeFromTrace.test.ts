// `tokenrouter optimize`: thresholds from a recorded trace, the CLI's edges, and profiling a runner's step latency.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../runtime/cli/main.ts';
import { TokenRouterError } from '../../../runtime/errors.ts';
import type { ModelRunner, StepRow } from '../../../runtime/runner/modelRunner.ts';
import { profileStepLatency } from '../../../runtime/runner/profileStepLatency.ts';
import { SimRunner } from '../../../runtime/runner/simRunner.ts';
import { thresholdsFromTrace } from '../../../runtime/control/thresholdsFromTrace.ts';
import { PAPER_R2R_PROFILE } from '../../../runtime/sim/paperProfile.ts';
import { recordR2r } from '../../sim/recordR2r.ts';
import { optimiseThresholds } from '../../../runtime/control/throughput/index.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-optimize-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const recordedRun = (concurrency: number) => recordR2r({ concurrency, requests: concurrency * 6, promptLength: 32, maxTokens: 256, maxWaitMs: 100 }).events;

describe('thresholdsFromTrace', () => {
  const events = recordedRun(8);

  it('recovers routing and step latency from the trace and picks what the model picks for the true inputs', () => {
    const r = thresholdsFromTrace(events, { concurrency: 8, fixed: { small: 1 } });
    expect(r.models).toEqual(['small', 'large']);
    expect(r.estimate.P[0][1]).toBeGreaterThan(0.32);
    expect(r.estimate.P[0][1]).toBeLessThan(0.38);
    expect(r.estimate.C[0][1]).toBe(0); // R2R discards the small token it hands off
    expect(r.estimate.latency[0][0]).toBeCloseTo(PAPER_R2R_PROFILE.stepMs.small, 6);
    const truth = optimiseThresholds(
      {
        N: 8,
        P: [
          [0.65, 0.35],
          [1, 0],
        ],
        C: [
          [1, 0],
          [1, 0],
        ],
        latency: (i) => (i === 0 ? 6.0 : 27.9),
        maxBatch: [8, 8],
      },
      { fixed: { 0: 1 } },
    );
    const truthLarge = truth.best[1];
    expect(Math.abs(r.best.large - truthLarge)).toBeLessThanOrEqual(1);
    expect(r.predictedBest).toBeGreaterThanOrEqual(r.predictedOnes);
    expect(r.gainOverOnes).toBeCloseTo(r.predictedBest / r.predictedOnes - 1, 12);
    expect(r.inForce?.thresholds).toEqual({ small: 1, large: 1 });
    expect(r.inForce?.predicted).toBeCloseTo(r.predictedOnes, 9);
  });

  it('estimates N from the finished requests when not given', () => {
    const r = thresholdsFromTrace(events, {});
    expect(r.nSource).toBe('trace');
    expect(r.N).toBeGreaterThanOrEqual(6);
    expect(r.N).toBeLessThanOrEqual(8);
  });

  it('refuses a trace it cannot estimate from, saying why', () => {
    expect(() => thresholdsFromTrace([])).toThrow(/no batch events/);
    const noEnds = events.filter((e) => e.type !== 'request-end');
    expect(() => thresholdsFromTrace(noEnds)).toThrow(TokenRouterError);
    expect(() => thresholdsFromTrace(noEnds)).toThrow(/--concurrency/);
  });
});

describe('tokenrouter optimize', () => {
  const run = async (args: string[]) => {
    const out: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
    const err = vi.spyOn(console, 'error').mockImplementation((...a) => void out.push(a.join(' ')));
    try {
      return { code: await main(['optimize', ...args]), text: out.join('\n') };
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  };

  it('prints the thresholds and the predicted gain over thresholds of 1, and writes JSON', async () => {
    const file = path.join(tmp, 'trace.jsonl');
    fs.writeFileSync(
      file,
      recordedRun(8)
        .map((e) => JSON.stringify(e))
        .join('\n') + '\n{"type":"nonsense"}\n',
    );
    const json = path.join(tmp, 'opt.json');
    const { code, text } = await run(['--trace', file, '--concurrency', '8', '--fixed', 'small=1', '--json', json]);
    expect(code).toBe(0);
    expect(text).toMatch(/skipped 1 invalid trace line/);
    expect(text).toMatch(/thresholds small=1,large=\d+: predicted [\d.]+ tok\/s, [+-][\d.]+% over thresholds of 1/);
    const written = JSON.parse(fs.readFileSync(json, 'utf8'));
    expect(written.best.small).toBe(1);
    expect(written.N).toBe(8);
    expect(text).toContain(`large=${written.best.large}`);
  });

  it('answers bad input with a clear error and exit code 2', async () => {
    expect((await run([])).text).toMatch(/--trace FILE is required/);
    const missing = await run(['--trace', path.join(tmp, 'nope.jsonl')]);
    expect(missing.code).toBe(2);
    expect(missing.text).toMatch(/cannot read --trace/);
    const file = path.join(tmp, 'empty.jsonl');
    fs.writeFileSync(file, '');
    expect((await run(['--trace', file])).text).toMatch(/no batch events/);
    expect((await run(['--trace', file, '--concurrency', '0'])).text).toMatch(/--concurrency must be an integer/);
    expect((await run(['--trace', file, '--fixed', 'small'])).code).toBe(2);
  });
});

describe('profileStepLatency', () => {
  it('times decode steps per batch size on the runner, after prefilling, and frees every cache', async () => {
    let t = 0;
    const sim = new SimRunner({ name: 'm', vocabSize: 50, eosTokenIds: [0], maxContext: 64, latency: (b) => 2 + 0.5 * b });
    const open = new Set<number>();
    const positions: number[] = [];
    // Advances a virtual clock by each step's simulated duration, as the sub-server would wait for it.
    const runner: ModelRunner = {
      info: sim.info,
      step: (rows: readonly StepRow[]) => {
        for (const r of rows) {
          open.add(r.cacheId);
          positions.push(r.position);
        }
        const out = sim.step(rows);
        t += out.durationMs;
        return out;
      },
      release: (id) => {
        open.delete(id);
        sim.release(id);
      },
      fork: () => false,
    };
    const ms = await profileStepLatency(runner, 5, { now: () => t, promptLength: 8, steps: 4 });
    expect(ms).toEqual([2.5, 3, 3.5, 4, 4.5]);
    expect(open.size).toBe(0);
    expect(positions).toContain(0); // each size starts with a prefill
    expect(Math.max(...positions)).toBe(8 + 3); // then 4 decode steps, one token each
  });
});
