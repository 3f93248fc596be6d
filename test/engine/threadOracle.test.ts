// Property test in thread placement: each model's engine and simulated runner in its own worker thread commit what the sequential oracle does.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/engine/cluster.ts';
import { ThreadEngine } from '../../runtime/engine/threadEngine.ts';
import type { RequestResult } from '../../runtime/engine/requestState.ts';
import { runOracle } from '../../runtime/oracle/sequentialOracle.ts';
import { SCHEDULING_MODES } from '../../runtime/scheduler/schedulingMode.ts';
import { draw3 } from '../../runtime/util/hash.ts';
import { randomAlgorithm } from '../core/randomAlgorithm.ts';
import { caseRunner } from './threadSim.ts';

const CASES_PER_SETTING = 8; // × 8 settings = 64 cases
const SIM = fileURLToPath(new URL('./threadSim.ts', import.meta.url));
const RANDOM = fileURLToPath(new URL('../core/randomAlgorithm.ts', import.meta.url));

function pick(seed: number, salt: number, lo: number, hi: number): number {
  return lo + Math.floor(draw3(seed, salt, 99) * (hi - lo + 1));
}

describe.each(SCHEDULING_MODES.flatMap((mode) => [true, false].map((retain) => ({ mode, retain }))))('thread placement, mode $mode, retainState $retain', ({ mode, retain }) => {
  it(`matches the oracle on ${CASES_PER_SETTING} random cases`, async () => {
    let checked = 0;
    for (let c = 0; c < CASES_PER_SETTING; c++) {
      const seed = (c * 6007 + (retain ? 3 : 5) * 104729 + SCHEDULING_MODES.indexOf(mode) * 7919) >>> 0;
      const k = pick(seed, 1, 1, 3);
      const names = ['small', 'medium', 'large'].slice(0, k);
      const eos = pick(seed, 2, 0, 1) === 1 ? 3 : -1;
      const maxAhead = mode.startsWith('async') && pick(seed, 8, 0, 1) === 1 ? pick(seed, 9, 1, 4) : 0;
      const concurrency = pick(seed, 3, 1, 24);
      const requests = Array.from({ length: pick(seed, 4, 1, 24) }, (_, r) => ({
        id: `r${r}`,
        prompt: Array.from({ length: pick(seed, 100 + r, 1, 12) }, (_, j) => pick(seed, 1000 * r + j, 4, 40)),
        maxTokens: pick(seed, 200 + r, 1, 24),
        sampling: { seed: pick(seed, 300 + r, 0, 1 << 20) },
      }));
      const maxLen = Math.max(...requests.map((r) => r.prompt.length + r.maxTokens));
      const tightMemory = pick(seed, 5, 0, 2) === 0;
      const maxBatch = names.map((_, i) => pick(seed, 20 + i, 1, 8));
      const thresholds = names.map((_, i) => (mode === 'async-delayed' ? Math.min(maxBatch[i], pick(seed, 10 + i, 1, 4)) : 1));
      while (thresholds.reduce((s, t) => s + t - 1, 0) >= concurrency) thresholds[thresholds.indexOf(Math.max(...thresholds))]--;
      const threads = await Promise.all(names.map((n, i) => ThreadEngine.start(n, { kind: 'module', module: SIM, export: 'caseRunner', args: [n, i, eos, maxAhead] })));
      const cluster = new Cluster({
        clock: createRealClock(),
        mode,
        retainState: retain,
        maxConcurrency: concurrency,
        checkInvariants: true,
        lookahead: maxAhead > 0 ? pick(seed, 7, 1, 8) : 0,
        maxWaitMs: pick(seed, 6, 1, 10),
        models: names.map((name, i) => ({ name, thread: threads[i], maxBatch: maxBatch[i], threshold: thresholds[i], kvCapacityTokens: tightMemory ? maxLen + pick(seed, 30 + i, 0, maxLen) : Infinity })),
      });
      try {
        const alg = randomAlgorithm(seed, names);
        const algorithmRef = { key: alg.name, source: { kind: 'module' as const, module: RANDOM, export: 'randomAlgorithm', args: [seed, names] } };
        const results: RequestResult[] = await Promise.all(requests.map((r) => cluster.submit({ ...r, algorithm: alg, algorithmRef }).done));
        const oracleRunners = Object.fromEntries(names.map((n, i) => [n, caseRunner(n, i, eos, 0)]));
        for (const [i, req] of requests.entries()) {
          const got = results[i];
          const want = await runOracle(alg, oracleRunners, req);
          const ctx = `case ${c} seed ${seed} ${req.id} k=${k} N=${concurrency}`;
          expect(got.status, `${ctx}: ${got.error?.message}`).toBe('done');
          expect(got.tokens, ctx).toEqual(want.tokens);
          expect(got.producedBy, ctx).toEqual(want.producedBy);
          expect(got.handoffs, ctx).toBe(want.handoffs);
          expect(got.discarded, ctx).toBe(want.discarded);
          expect(got.finishReason, ctx).toBe(want.finishReason);
          checked++;
        }
        // Every engine reports its pool empty once the releases have reached it.
        await expect.poll(() => cluster.laneStats().map((l) => [l.kvBytes, l.kvReservedBytes, l.ready + l.waitingAdmission + l.pendingReturn]), { timeout: 2000 }).toEqual(names.map(() => [0, 0, 0]));
        expect(cluster.idle).toBe(true);
      } finally {
        await Promise.all(threads.map((t) => t.close()));
      }
    }
    expect(checked).toBeGreaterThanOrEqual(CASES_PER_SETTING);
  }, 120_000);
});
