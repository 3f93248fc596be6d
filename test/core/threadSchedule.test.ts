// Thresholds and the max-wait deadline set while serving reach engines in their own threads (the SLO controller moves both).
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import { buildAlgorithm } from '../../runtime/registry/algorithmSource.ts';
import { caseRunner } from './threadSim.ts';

const SIM = fileURLToPath(new URL('./threadSim.ts', import.meta.url));
const REF = { key: 'small@1', source: { kind: 'single' as const, model: 'small' } };

describe('a schedule change in thread placement', () => {
  it('a lone request below the threshold waits for the deadline in force now, not the one the thread started with', async () => {
    const thread = await ThreadEngine.start('small', { kind: 'module', module: SIM, export: 'caseRunner', args: ['small', 0, -1] });
    // threshold 2 with one request: only the deadline launches its steps; 60 s would outlast the test
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-delayed',
      maxConcurrency: 4,
      maxWaitMs: 60_000,
      models: [{ name: 'small', thread, maxBatch: 8, threshold: 2 }],
    });
    try {
      const h = cluster.submit({ id: 'lone', prompt: [1, 2, 3], maxTokens: 5, algorithm: buildAlgorithm(REF.source), algorithmRef: REF });
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 300));
      expect(cluster.laneStats()[0].batches).toBe(0);
      cluster.setThresholds({}, 5);
      const result = await h.done;
      expect(result.status).toBe('done');
      expect(result.tokens).toHaveLength(5);
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect(cluster.maxWaitMs).toBe(5);
    } finally {
      await thread.close();
    }
  }, 20_000);

  it("the same on the entry's thread: the deadline timer already running is re-armed with the new deadline", async () => {
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-delayed',
      maxConcurrency: 4,
      maxWaitMs: 60_000,
      models: [{ name: 'small', runner: caseRunner('small', 0, -1), maxBatch: 8, threshold: 2 }],
    });
    const h = cluster.submit({ id: 'lone', prompt: [1, 2, 3], maxTokens: 5, algorithm: buildAlgorithm(REF.source) });
    await new Promise((r) => setTimeout(r, 100));
    expect(cluster.laneStats()[0].batches).toBe(0);
    cluster.setThresholds({}, 5);
    const result = await h.done;
    expect(result.tokens).toHaveLength(5);
  }, 20_000);

  it('a deadline that makes the thresholds infeasible is refused and the one in force stays', async () => {
    const thread = await ThreadEngine.start('small', { kind: 'module', module: SIM, export: 'caseRunner', args: ['small', 0, -1] });
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-delayed',
      maxConcurrency: 2,
      maxWaitMs: 20,
      models: [{ name: 'small', thread, maxBatch: 8, threshold: 1 }],
    });
    try {
      // a threshold above N can only be reached by the deadline: without one (Infinity) it is refused
      expect(() => cluster.setThresholds({ small: 3 }, Infinity)).toThrow();
      expect(cluster.maxWaitMs).toBe(20);
      expect(cluster.engines[0].threshold).toBe(1);
    } finally {
      await thread.close();
    }
  }, 20_000);
});
