// Property test in thread placement: each model's engine and simulated runner in its own worker thread commit what the sequential oracle does.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { SCHEDULING_MODES } from '../../runtime/core/servingPolicy.ts';
import { randomAlgorithm } from './randomAlgorithm.ts';
import { randomCase } from './randomCase.ts';
import { caseRunner } from './threadSim.ts';

const CASES_PER_SETTING = 8; // × 8 settings = 64 cases
const SIM = fileURLToPath(new URL('./threadSim.ts', import.meta.url));
const RANDOM = fileURLToPath(new URL('./randomAlgorithm.ts', import.meta.url));

/** Smaller than the in-process test's: every case starts its engine threads in real time. */
const BOUNDS = { concurrency: 24, requests: 24, maxTokens: 24, maxWaitMs: 10 };

describe.each(SCHEDULING_MODES.flatMap((mode) => [true, false].map((retain) => ({ mode, retain }))))(
  'thread placement, mode $mode, retainState $retain',
  ({ mode, retain }) => {
    it(`matches the oracle on ${CASES_PER_SETTING} random cases`, async () => {
      let checked = 0;
      for (let c = 0; c < CASES_PER_SETTING; c++) {
        const seed = (c * 6007 + (retain ? 3 : 5) * 104729 + SCHEDULING_MODES.indexOf(mode) * 7919) >>> 0;
        const { k, names, eos, concurrency, requests, maxBatch, maxStepTokens, thresholds, kvCapacityTokens, maxWaitMs } = randomCase(seed, mode, BOUNDS);
        const threads = await Promise.all(names.map((n, i) => ThreadEngine.start(n, { kind: 'module', module: SIM, export: 'caseRunner', args: [n, i, eos] })));
        const cluster = new Cluster({
          clock: createRealClock(),
          mode,
          retainState: retain,
          maxConcurrency: concurrency,
          checkInvariants: true,
          maxWaitMs,
          models: names.map((name, i) => ({
            name,
            thread: threads[i],
            maxBatch: maxBatch[i],
            maxStepTokens: maxStepTokens[i],
            threshold: thresholds[i],
            kvCapacityTokens: kvCapacityTokens(i),
          })),
        });
        try {
          const alg = randomAlgorithm(seed, names);
          const algorithmRef = { key: alg.name, source: { kind: 'module' as const, module: RANDOM, export: 'randomAlgorithm', args: [seed, names] } };
          const results: RequestResult[] = await Promise.all(requests.map((r) => cluster.submit({ ...r, algorithm: alg, algorithmRef }).done));
          const oracleRunners = Object.fromEntries(names.map((n, i) => [n, caseRunner(n, i, eos)]));
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
          await expect
            .poll(() => cluster.laneStats().map((l) => [l.kvBytes, l.kvReservedBytes, l.ready + l.waitingAdmission + l.pendingReturn]), { timeout: 2000 })
            .toEqual(names.map(() => [0, 0, 0]));
          expect(cluster.idle).toBe(true);
        } finally {
          await Promise.all(threads.map((t) => t.close()));
        }
      }
      expect(checked).toBeGreaterThanOrEqual(CASES_PER_SETTING);
    }, 120_000);
  },
);
