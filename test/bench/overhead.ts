// Suite overhead: µs of non-model work per committed token (zero-latency runners), and simulation speed.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createActor } from 'xstate';
import { localRequestMachine } from '../../runtime/core/localRequest.ts';
import { requestMachine } from '../../runtime/entry/requestState.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { runClosedLoop } from '../../runtime/sim/closedLoop.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';
import type { BenchOptions, BenchReport } from './benchSuite.ts';
import { printTable } from '../../runtime/util/table.ts';
import { simulate, SIM_SETTINGS } from './simModes.ts';

export function measureOverhead(concurrency: number, requests: number, maxTokens: number) {
  const clock = new VirtualClock();
  const runners = ['small', 'large'].map((name) => new SimRunner({ name }));
  const cluster = new Cluster({
    clock,
    mode: 'async-delayed',
    maxConcurrency: concurrency,
    // as published (prefix caching was off by default then): the closed loop's prompts repeat every 90 requests
    prefixCache: false,
    models: runners.map((runner) => ({ name: runner.info.name, runner, maxBatch: 64, threshold: 1 })),
  });
  const t0 = performance.now();
  const rep = runClosedLoop(cluster, clock, markovAlgorithm(r2rMarkov(0.35)), { concurrency, requests, promptLength: 32, maxTokens, keepResults: false });
  const wallMs = performance.now() - t0;
  const runnerMs = cluster.inProcessEngines.reduce((s, l) => s + l.stats.runnerWallMs, 0);
  const handoffs = cluster.inProcessEngines.reduce((s, l) => s + l.stats.admissions, 0);
  return {
    committed: rep.committed,
    wallMs,
    runnerMs,
    usPerToken: ((wallMs - runnerMs) * 1000) / rep.committed,
    batches: cluster.inProcessEngines.reduce((s, l) => s + l.stats.batches, 0),
    admissions: handoffs,
  };
}

/**
 * µs for one request's actors over their whole life, best of `rounds`: the entry's request actor
 * (created, started, first token, finish, stopped) and one engine's local-request actor (created,
 * admitted, handed off, back, finished, stopped).
 */
/** The collector as a function, without asking the caller for --expose-gc (a fresh context picks the flag up). */
function collector(): (() => void) | undefined {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
  return typeof gc === 'function' ? (gc as () => void) : undefined;
}

export function measureActors(n = 20_000, rounds = 5): { requestActorUs: number; localActorUs: number; gc: boolean } {
  const gc = collector();
  const time = (life: () => void): number => {
    let best = Infinity;
    for (let r = 0; r < rounds; r++) {
      // start each round with a clean heap when node exposes the collector (--expose-gc), so a round
      // pays for its own garbage, not for what an earlier run left behind
      gc?.();
      const t0 = performance.now();
      for (let i = 0; i < n; i++) life();
      best = Math.min(best, ((performance.now() - t0) * 1000) / n);
    }
    return best;
  };
  const requestActorUs = time(() => {
    const a = createActor(requestMachine);
    a.start();
    a.send({ type: 'FIRST_TOKEN' });
    a.send({ type: 'FINISH' });
    a.stop();
  });
  const localActorUs = time(() => {
    const a = createActor(localRequestMachine);
    a.start();
    a.send({ type: 'ADMIT' });
    a.send({ type: 'HANDOFF' });
    a.send({ type: 'RETURN' });
    a.send({ type: 'FINISH' });
    a.stop();
  });
  return { requestActorUs, localActorUs, gc: gc !== undefined };
}

export async function run(opts: BenchOptions): Promise<BenchReport> {
  const concurrency = Number(opts.flags.concurrency ?? 64);
  const requests = Number(opts.flags.requests ?? concurrency * 8);
  const maxTokens = Number(opts.flags.tokens ?? 512);
  // The actors first: measured after the big runs they read the collector chasing those runs'
  // garbage (a 20 µs life read as 21-30 µs at load 7-9), not the actor's own cost.
  measureActors(2000, 1); // warm-up: JIT
  const actors = measureActors();
  const actorsGc = actors.gc;
  measureOverhead(concurrency, concurrency, 64); // warm-up: JIT
  // Other work on a shared machine only ever adds time, so the best of several runs is the
  // closest reading of what the code itself costs; the median is reported beside it.
  const nRuns = Number(opts.flags.runs ?? 5);
  const runs = Array.from({ length: nRuns }, () => measureOverhead(concurrency, requests, maxTokens));
  const sortedUs = runs.map((r) => r.usPerToken).sort((a, b) => a - b);
  const best = sortedUs[0];
  const median = sortedUs[Math.floor(nRuns / 2)];

  const simCase = { mode: 'async-delayed', retainState: true, concurrency: 16, thresholds: { small: 1, large: 9 } } as const;
  simulate(simCase); // warm-up
  let simWall = Infinity;
  let sim = simulate(simCase);
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    sim = simulate(simCase);
    simWall = Math.min(simWall, performance.now() - t0);
  }
  const simSpeedup = sim.spanMs / simWall;

  printTable(
    runs.map((r, i) => ({
      run: i + 1,
      committed: r.committed,
      wall_ms: r.wallMs,
      runner_ms: r.runnerMs,
      us_per_committed_token: r.usPerToken,
      batches: r.batches,
    })),
  );
  console.log(
    `µs of non-model work per committed token: best ${best.toFixed(2)}, median ${median.toFixed(2)} of ${nRuns} runs (on a real model's step of milliseconds this must stay under 2 %)`,
  );
  console.log(
    `request actor, whole life (create, start, first token, finish, stop): ${actors.requestActorUs.toFixed(2)} µs; an engine's local-request actor (admit, handoff, return, finish): ${actors.localActorUs.toFixed(2)} µs; measured before the runs${actorsGc ? ', a collection before each round' : ''}`,
  );
  console.log(
    `simulation (best of 3 after warm-up): ${(sim.spanMs / 1000).toFixed(1)} simulated s in ${(simWall / 1000).toFixed(2)} wall s = ${simSpeedup.toFixed(0)}× real time (target ≥ 100×)`,
  );
  return {
    suite: 'overhead',
    settings: {
      overhead: {
        concurrency,
        requests,
        maxTokens,
        models: 2,
        maxBatch: 64,
        prefixCache: false,
        routing: 'R2R-like Markov p=0.35, back after 1 kept token',
        mode: 'async-delayed, thresholds 1/1',
        runner: 'zero-latency simulated',
      },
      sim: { ...SIM_SETTINGS, concurrency: 16, thresholds: '1/9', mode: 'async-delayed' },
      actors: {
        lives: 20_000,
        rounds: 5,
        reported: 'best round, µs per life',
        measured: actorsGc ? 'before the runs, gc() before each round' : 'before the runs (no --expose-gc)',
      },
    },
    results: {
      headline: [
        {
          figure: "µs of non-model work per committed token, zero-latency runners (best / median of 5); the actors run on XState's own interpreter",
          result: `${best.toFixed(2)} / ${median.toFixed(2)}`,
          target: '',
          status: '',
        },
        {
          figure: 'simulation speed over real time (paper profile, c = 16)',
          result: `${simSpeedup.toFixed(0)}×`,
          target: '≥ 100×',
          status: simSpeedup >= 100 ? 'met' : 'missed',
        },
        {
          figure: 'request actor µs per life / local-request actor µs per life',
          result: `${actors.requestActorUs.toFixed(1)} / ${actors.localActorUs.toFixed(1)}`,
          target: '',
          status: '',
        },
      ],
      request_actor_us: actors.requestActorUs,
      local_actor_us: actors.localActorUs,
      us_per_committed_token: best,
      us_per_committed_token_median: median,
      runs,
      sim_speedup: simSpeedup,
      sim_seconds: sim.spanMs / 1000,
      sim_wall_seconds: simWall / 1000,
    },
  };
}
