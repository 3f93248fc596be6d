// An engine thread that dies fails only the requests decoding on it; the others re-prefill there once it is back.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { everyN } from './everyN.ts';
import { caseRunner } from './threadSim.ts';

const SIM = fileURLToPath(new URL('./threadSim.ts', import.meta.url));
const EVERY = fileURLToPath(new URL('./everyN.ts', import.meta.url));
const NAMES = ['small', 'large'];
const source = (name: string) => ({ kind: 'module' as const, module: SIM, export: 'caseRunner', args: [name, NAMES.indexOf(name), -1] });

describe('a dead engine thread (thread placement, simulated runners)', () => {
  it('fails only the requests it held; requests that left state there finish as the oracle says', async () => {
    const threads = await Promise.all(NAMES.map((n) => ThreadEngine.start(n, source(n))));
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-delayed',
      retainState: true,
      maxConcurrency: 32,
      checkInvariants: true,
      maxWaitMs: 5,
      models: NAMES.map((name, i) => ({ name, thread: threads[i], maxBatch: 8, threshold: 1, kvCapacityTokens: Infinity })),
    });
    // small hands to large every 48th step: most of the time a request decodes on small, with KV left on large
    const alg = everyN(48);
    const algorithmRef = { key: alg.name, source: { kind: 'module' as const, module: EVERY, export: 'everyN', args: [48] } };
    const requests = Array.from({ length: 24 }, (_, i) => ({ id: `r${i}`, prompt: [1 + (i % 7), 2 + (i % 5), 3], maxTokens: 160 }));
    let fresh: ThreadEngine | null = null;
    try {
      // staggered, so that at any moment some requests are on their visit to large
      const pending: Promise<RequestResult>[] = [];
      for (const r of requests) {
        pending.push(cluster.submit({ ...r, algorithm: alg, algorithmRef }).done);
        await new Promise((res) => setTimeout(res, 4));
      }
      // the crash: once requests that have been to large decode on small (a request visits large for one step in 48)
      const visited = () => [...cluster.activeRequests()].filter((q) => q.whereabouts.model === 'small' && q.producedBy.includes(2));
      await expect.poll(() => visited().length >= 8, { timeout: 10_000, interval: 1 }).toBe(true);
      const onSmall = new Set(visited().map((q) => q.id));
      threads[1].crashForTest('killed by test');
      await expect.poll(() => cluster.engines[1].down, { timeout: 5000 }).toBe(true);
      fresh = await ThreadEngine.start('large', source('large'));
      cluster.replaceThread('large', fresh);
      const results: RequestResult[] = await Promise.all(pending);

      const failed = results.filter((r) => r.status === 'failed');
      const done = results.filter((r) => r.status === 'done');
      // (how many were on large when the thread died varies: the crash is a message it handles in turn)
      for (const r of failed) expect(r.error?.message).toMatch(/^model large (failed|is down|restarted)/);
      // most of those on small at the crash had KV on large: they finish, recomputing it there
      const survivors = done.filter((r) => onSmall.has(r.id));
      expect(survivors.length).toBeGreaterThan(0);
      expect(done.length + failed.length).toBe(requests.length);
      const oracleRunners = Object.fromEntries(NAMES.map((n, i) => [n, caseRunner(n, i, -1)]));
      for (const r of done) {
        const want = await runOracle(alg, oracleRunners, requests.find((q) => q.id === r.id)!);
        expect(r.tokens, r.id).toEqual(want.tokens);
        expect(r.producedBy, r.id).toEqual(want.producedBy);
      }
      await expect
        .poll(() => cluster.laneStats().map((l) => [l.kvBytes, l.ready + l.waitingAdmission + l.pendingReturn]), { timeout: 2000 })
        .toEqual(NAMES.map(() => [0, 0]));
      expect(cluster.idle).toBe(true);
      console.log(`[thread-failure] ${failed.length} failed, ${done.length} done (${survivors.length} had KV on large and were on small at the crash)`);
    } finally {
      await Promise.all([threads[0].close(), fresh?.close()]);
    }
  }, 60_000);
});
