// The distributed bench's delay-only case: a delay line that keeps order and holds what it is given, and an engine behind it that serves as the in-process one does, later.
import { afterEach, describe, expect, it } from 'vitest';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster, type ClusterModel } from '../../runtime/entry/cluster.ts';
import { DelayLine } from '../support/rigs/delayLine.ts';
import { DelayedEngine } from '../support/rigs/delayedEngine.ts';
import { simModel, type SimLatency } from '../../runtime/runner/simModel.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';
import type { Algorithm } from '../../shared/algorithm.ts';
import type { AlgorithmRef } from '../../runtime/registry/algorithmSource.ts';
import { fileURLToPath } from 'node:url';

const lines: DelayLine[] = [];
afterEach(async () => {
  for (const l of lines.splice(0)) await l.close();
});
const lineOf = (ms: number) => {
  const l = new DelayLine(ms);
  lines.push(l);
  return l;
};

describe('DelayLine', () => {
  it('runs what it holds in the order it came, each after about the delay, what a run pushes included', async () => {
    const line = lineOf(5);
    const ran: { k: number; heldMs: number }[] = [];
    await new Promise<void>((resolve) => {
      for (let k = 0; k < 6; k++) {
        const at = performance.now();
        line.push(() => {
          ran.push({ k, heldMs: performance.now() - at });
          // pushed while the line runs its due items: held a full delay too, and last
          if (k === 2) {
            const again = performance.now();
            line.push(() => {
              ran.push({ k: 99, heldMs: performance.now() - again });
              resolve();
            });
          }
        });
      }
    });
    expect(ran.map((r) => r.k)).toEqual([0, 1, 2, 3, 4, 5, 99]);
    // the alarm is set early by the wake-ups' measured lateness, at most half the delay
    for (const r of ran) expect(r.heldMs).toBeGreaterThanOrEqual(2.5 - 0.05);
    const s = line.stats();
    expect(s.items).toBe(7);
    expect(s.meanHoldMs).toBeGreaterThanOrEqual(2.5);
  });

  it('drops what it still holds when closed', async () => {
    const line = new DelayLine(20);
    let ran = false;
    line.push(() => (ran = true));
    await line.close();
    await new Promise((r) => setTimeout(r, 40));
    expect(ran).toBe(false);
  });
});

describe('DelayedEngine', () => {
  const SMALL: SimLatency = { baseMs: 1, perRowMs: 0, perTokenMs: 0 };
  const LARGE: SimLatency = { baseMs: 3, perRowMs: 0, perTokenMs: 0 };
  const spec = r2rMarkov(0.35);
  const algorithm = markovAlgorithm(spec) as Algorithm<unknown>;
  // an engine with no core (as a remote one) is sent the algorithm by reference
  const algorithmRef: AlgorithmRef = {
    key: 'markov-r2r-0.35',
    source: {
      kind: 'module',
      module: fileURLToPath(new URL('../../runtime/sim/markovAlgorithm.ts', import.meta.url)),
      export: 'markovAlgorithm',
      args: [spec],
    },
  };

  /** Four requests through small and a large model in this process, or behind `line`: their tokens, handoffs and wall time. */
  async function serve(line: DelayLine | null) {
    const clock = createRealClock();
    const large: ClusterModel = line
      ? {
          name: 'large',
          thread: new DelayedEngine('large', simModel({ name: 'large', latency: LARGE, vocab: 'hash' }), clock, line),
        }
      : { name: 'large', runner: simModel({ name: 'large', latency: LARGE, vocab: 'hash' }) };
    const cluster = new Cluster({
      clock,
      mode: 'async-delayed',
      maxConcurrency: 4,
      maxWaitMs: 20,
      prefixCache: false,
      models: [
        { name: 'small', runner: simModel({ name: 'small', latency: SMALL, vocab: 'hash' }), maxBatch: 8 },
        { ...large, maxBatch: 8 },
      ],
    });
    return Promise.all(
      [0, 1, 2, 3].map((i) => cluster.submit({ id: `r${i}`, prompt: [5, 6, 7, 8 + i], maxTokens: 24, sampling: { seed: i }, algorithm, algorithmRef }).done),
    );
  }

  it('gives the in-process outputs, each visit to large paying the delay both ways', async () => {
    const near = await serve(null);
    const line = lineOf(10);
    const far = await serve(line);
    let visits = 0;
    for (let i = 0; i < 4; i++) {
      expect(far[i].status).toBe('done');
      expect(far[i].tokens).toEqual(near[i].tokens);
      expect(far[i].handoffs).toBe(near[i].handoffs);
      // a round trip to large is two holds of at least half the delay (the alarm's lead) each; a large step
      // (3 ms) waited for in-process may be saved behind the line, so at least 5 ms of each 10 ms hold is counted
      const v = Math.floor(far[i].handoffs / 2);
      visits += v;
      expect(far[i].endedAt - far[i].submittedAt - (near[i].endedAt - near[i].submittedAt)).toBeGreaterThan(v * 5);
    }
    expect(visits).toBeGreaterThan(2);
    expect(line.stats().items).toBeGreaterThanOrEqual(visits * 2);
  });
});
