// Property test with prefix caching on: shared preambles and resent histories, under KV pressure that evicts prefixes; outputs equal the oracle's, no KV leaked.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { SCHEDULING_MODES } from '../../runtime/core/servingPolicy.ts';
import { runWorkload } from './runWorkload.ts';
import { pick, randomCase } from './randomCase.ts';
import { sharingRequests } from './sharingRequests.ts';
import { randomAlgorithm } from './randomAlgorithm.ts';

const CASES_PER_SETTING = 24; // × 8 settings

describe.each(SCHEDULING_MODES.flatMap((mode) => [true, false].map((retain) => ({ mode, retain }))))(
  'prefix cache on: mode $mode, retainState $retain',
  ({ mode, retain }) => {
    it(`matches the oracle on ${CASES_PER_SETTING} sharing cases, evicting prefixes under KV pressure`, async () => {
      const totals = { hits: 0, forks: 0, prefixEvictions: 0, requests: 0 };
      for (let c = 0; c < CASES_PER_SETTING; c++) {
        const seed = (c * 6151 + (retain ? 3 : 5) * 99991 + SCHEDULING_MODES.indexOf(mode) * 15485863) >>> 0;
        const rc = randomCase(seed, mode);
        const requests = sharingRequests(seed, rc.requests);
        const maxLen = Math.max(...requests.map((r) => r.prompt.length + r.maxTokens));
        // two cases in three: room for one to a few requests, so cached prefixes must make way
        const tight = pick(seed, 900, 0, 2) > 0;
        const clock = new VirtualClock();
        const mk = () =>
          rc.names.map(
            (name, i) =>
              new SimRunner({ name, vocabSize: 50 + i, eosTokenIds: rc.eos >= 0 ? [rc.eos] : [], latency: (b, t) => (i + 1) * (2 + b * 0.1 + t * 0.01) }),
          );
        const runners = mk();
        const cluster = new Cluster({
          clock,
          mode,
          retainState: retain,
          prefixCache: true,
          maxConcurrency: rc.concurrency,
          checkInvariants: true,
          maxWaitMs: rc.maxWaitMs,
          models: rc.names.map((name, i) => ({
            name,
            runner: runners[i],
            maxBatch: rc.maxBatch[i],
            maxStepTokens: rc.maxStepTokens[i],
            threshold: rc.thresholds[i],
            kvCapacityTokens: tight ? maxLen + pick(seed, 910 + i, 0, maxLen) : Infinity,
          })),
        });
        const alg = randomAlgorithm(seed, rc.names);
        const results = runWorkload(cluster, clock, alg, requests);
        const oracle = Object.fromEntries(rc.names.map((n, i) => [n, mk()[i]]));
        for (const [i, req] of requests.entries()) {
          const want = await runOracle(alg, oracle, req);
          const ctx = `case ${c} seed ${seed} ${req.id} k=${rc.k} N=${rc.concurrency} tight=${tight}`;
          expect(results[i].status, ctx).toBe('done');
          expect(results[i].tokens, ctx).toEqual(want.tokens);
          expect(results[i].producedBy, ctx).toEqual(want.producedBy);
          expect(results[i].finishReason, ctx).toBe(want.finishReason);
          totals.requests++;
        }
        // What is left is exactly the prefix cache: every KV byte belongs to an entry, every runner cache is one.
        expect(cluster.idle).toBe(true);
        cluster.inProcessEngines.forEach((lane, i) => {
          const prefix = lane.queues.prefix!;
          expect(lane.pool.usedBytes, lane.name).toBe(prefix.heldTokens * lane.pool.kvBytesPerToken);
          expect(lane.pool.reservedTokenCount, lane.name).toBe(0);
          expect(runners[i].liveCaches, lane.name).toBe(prefix.size);
          totals.hits += lane.stats.prefixHits;
          totals.prefixEvictions += lane.stats.prefixEvictions;
          prefix.clear();
          expect(lane.pool.usedBytes, lane.name).toBe(0);
          expect(runners[i].liveCaches, lane.name).toBe(0);
        });
        for (const r of runners) totals.forks += r.counts.forks;
      }
      expect(totals.requests).toBeGreaterThan(CASES_PER_SETTING);
      expect(totals.forks).toBeGreaterThan(0);
      expect(totals.hits).toBeGreaterThan(0);
      expect(totals.prefixEvictions).toBeGreaterThan(0);
    });
  },
);
