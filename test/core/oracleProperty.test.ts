// Property test: every mode × retain setting commits exactly what the sequential oracle commits.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { SCHEDULING_MODES } from '../../runtime/core/servingPolicy.ts';
import { runWorkload } from './runWorkload.ts';
import { randomCase } from './randomCase.ts';
import { randomAlgorithm } from './randomAlgorithm.ts';

const CASES_PER_SETTING = 64; // × 8 settings = 512 cases

describe.each(SCHEDULING_MODES.flatMap((mode) => [true, false].map((retain) => ({ mode, retain }))))('mode $mode, retainState $retain', ({ mode, retain }) => {
  it(`matches the oracle on ${CASES_PER_SETTING} random cases`, async () => {
    let requestsChecked = 0;
    let chunkRows = 0;
    for (let c = 0; c < CASES_PER_SETTING; c++) {
      const seed = (c * 7919 + (retain ? 1 : 2) * 104729 + SCHEDULING_MODES.indexOf(mode) * 1299709) >>> 0;
      const { k, names, eos, concurrency, requests, maxBatch, maxStepTokens, thresholds, kvCapacityTokens, maxWaitMs } = randomCase(seed, mode);
      const clock = new VirtualClock();
      const mkRunners = () =>
        names.map(
          (name, i) => new SimRunner({ name, vocabSize: 50 + i, eosTokenIds: eos >= 0 ? [eos] : [], latency: (b, t) => (i + 1) * (2 + b * 0.1 + t * 0.01) }),
        );
      const runners = mkRunners();
      const cluster = new Cluster({
        clock,
        mode,
        retainState: retain,
        maxConcurrency: concurrency,
        checkInvariants: true,
        maxWaitMs,
        models: names.map((name, i) => ({
          name,
          runner: runners[i],
          maxBatch: maxBatch[i],
          maxStepTokens: maxStepTokens[i],
          threshold: thresholds[i],
          kvCapacityTokens: kvCapacityTokens(i),
        })),
      });
      const alg = randomAlgorithm(seed, names);
      const results = runWorkload(cluster, clock, alg, requests);
      const oracleRunners = mkRunners();
      const oracleMap = Object.fromEntries(names.map((n, i) => [n, oracleRunners[i]]));
      for (const [i, req] of requests.entries()) {
        const got = results[i];
        const want = await runOracle(alg, oracleMap, req);
        const ctx = `case ${c} seed ${seed} ${req.id} k=${k} N=${concurrency}`;
        expect(got.status, ctx).toBe('done');
        expect(got.tokens, ctx).toEqual(want.tokens);
        expect(got.producedBy, ctx).toEqual(want.producedBy);
        expect(got.handoffs, ctx).toBe(want.handoffs);
        expect(got.discarded, ctx).toBe(want.discarded);
        expect(got.finishReason, ctx).toBe(want.finishReason);
        requestsChecked++;
      }
      // Nothing left behind: every cache released, every KV byte returned, no request anywhere.
      expect(cluster.idle).toBe(true);
      for (const lane of cluster.laneStats()) {
        expect(lane.kvBytes, lane.name).toBe(0);
        expect(lane.kvReservedBytes, lane.name).toBe(0);
        expect(lane.ready + lane.waitingAdmission + lane.pendingReturn, lane.name).toBe(0);
        chunkRows += lane.chunks;
      }
      for (const r of runners) expect(r.liveCaches).toBe(0);
    }
    expect(requestsChecked).toBeGreaterThan(CASES_PER_SETTING);
    // the small step budgets of randomCase did cut prompts and suffixes into chunks
    expect(chunkRows).toBeGreaterThan(CASES_PER_SETTING);
  });
});
