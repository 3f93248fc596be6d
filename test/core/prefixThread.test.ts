// Prefix caching in thread placement: the setting reaches each engine thread, outputs equal the oracle's, and only the prefix entries' KV is left.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { randomAlgorithm } from './randomAlgorithm.ts';
import { pick, randomCase } from './randomCase.ts';
import { sharingRequests } from './sharingRequests.ts';
import { caseRunner } from './threadSim.ts';

const SIM = fileURLToPath(new URL('./threadSim.ts', import.meta.url));
const RANDOM = fileURLToPath(new URL('./randomAlgorithm.ts', import.meta.url));
const BOUNDS = { concurrency: 16, requests: 20, maxTokens: 16, maxWaitMs: 10 };

describe.each([true, false])('thread placement with the prefix cache, retainState %s', (retain) => {
  it('matches the oracle on 4 sharing cases, some under KV pressure', async () => {
    let hits = 0;
    for (let c = 0; c < 4; c++) {
      const seed = (c * 7121 + (retain ? 11 : 13) * 65537) >>> 0;
      const rc = randomCase(seed, 'async-immediate', BOUNDS);
      const requests = sharingRequests(seed, rc.requests);
      const maxLen = Math.max(...requests.map((r) => r.prompt.length + r.maxTokens));
      const tight = c % 2 === 1;
      const threads = await Promise.all(
        rc.names.map((n, i) => ThreadEngine.start(n, { kind: 'module', module: SIM, export: 'caseRunner', args: [n, i, rc.eos] })),
      );
      const cluster = new Cluster({
        clock: createRealClock(),
        mode: 'async-immediate',
        retainState: retain,
        prefixCache: true,
        maxConcurrency: rc.concurrency,
        checkInvariants: true,
        maxWaitMs: rc.maxWaitMs,
        models: rc.names.map((name, i) => ({
          name,
          thread: threads[i],
          maxBatch: rc.maxBatch[i],
          threshold: 1,
          kvCapacityTokens: tight ? maxLen + pick(seed, 910 + i, 0, maxLen) : Infinity,
        })),
      });
      try {
        const alg = randomAlgorithm(seed, rc.names);
        const algorithmRef = { key: alg.name, source: { kind: 'module' as const, module: RANDOM, export: 'randomAlgorithm', args: [seed, rc.names] } };
        const results = await Promise.all(requests.map((r) => cluster.submit({ ...r, algorithm: alg, algorithmRef }).done));
        const oracle = Object.fromEntries(rc.names.map((n, i) => [n, caseRunner(n, i, rc.eos)]));
        for (const [i, req] of requests.entries()) {
          const want = await runOracle(alg, oracle, req);
          const ctx = `case ${c} seed ${seed} ${req.id}`;
          expect(results[i].status, `${ctx}: ${results[i].error?.message}`).toBe('done');
          expect(results[i].tokens, ctx).toEqual(want.tokens);
        }
        // once the releases reached them, every engine holds only its prefix entries
        await expect
          .poll(() => cluster.laneStats().map((l) => [l.kvBytes - l.kvPrefixBytes, l.kvReservedBytes, l.ready + l.waitingAdmission + l.pendingReturn]), {
            timeout: 2000,
          })
          .toEqual(rc.names.map(() => [0, 0, 0]));
        hits += cluster.laneStats().reduce((a, l) => a + l.prefixHits, 0);
      } finally {
        await Promise.all(threads.map((t) => t.close()));
      }
    }
    expect(hits).toBeGreaterThan(0);
  }, 120_000);
});
