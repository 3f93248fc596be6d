// Suite dtmc-solve: how long the throughput model takes to build and solve, and how big its chain is.
import { loadavg } from 'node:os';
import { optimiseThresholds } from '../../runtime/control/throughput/optimiseThresholds.ts';
import { estimateChainStates, predictThroughput } from '../../runtime/control/throughput/predictThroughput.ts';
import { simulateThroughput } from '../../runtime/control/throughput/simulateThroughput.ts';
import { solveThroughput } from '../../runtime/control/throughput/solveThroughput.ts';
import { ThroughputError } from '../../runtime/control/throughput/ThroughputError.ts';
import type { ThroughputInput } from '../../runtime/control/throughput/types.ts';

export interface DtmcSolveOptions {
  json?: string;
  /**
   * --quick 1: three-model ladder N = 8, 12 and no exact N = 32 attempt (nor one whose size estimate
   * exceeds the cap); --max-states: cap per
   * chain (default 6 000 000); --budget-s: stop the ladder after a solve slower than this (default 600).
   */
  flags?: Record<string, string>;
}

interface Timed {
  name: string;
  K: number;
  N: number;
  thresholds: string;
  target_s: number | null;
  wall_ms: number;
  cpu_ms: number;
  states: number | null;
  transitions: number | null;
  iterations: number | null;
  residual: number | null;
  dt_ms: number | null;
  tokens_per_sec: number | null;
  met_target: boolean | null;
  error: string | null;
}

const p = 0.35;

export function r2rInput(N: number, thresholds: number[]): ThroughputInput {
  return {
    N,
    P: [
      [1 - p, p],
      [1, 0],
    ],
    C: [
      [1, 0],
      [1, 0],
    ],
    latency: (i) => (i === 0 ? 6.0 : 27.9),
    maxBatch: [N, N],
    thresholds,
  };
}

/** The three-model setting of the dtmc-validate suite (small / medium / large, partial hand-back). */
export function threeModelInput(N: number, thresholds: number[]): ThroughputInput {
  return {
    N,
    P: [
      [0.7, 0.2, 0.1],
      [0.6, 0.3, 0.1],
      [1, 0, 0],
    ],
    C: [
      [1, 0, 0],
      [1, 1, 0],
      [1, 1, 1],
    ],
    latency: (i) => [5, 12, 25][i],
    maxBatch: [N, N, N],
    thresholds,
  };
}

function timeSolve(name: string, input: ThroughputInput, targetS: number | null, maxStates: number): Timed {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const base = { name, K: input.maxBatch.length, N: input.N, thresholds: input.thresholds.join('/'), target_s: targetS };
  try {
    const r = solveThroughput({ ...input, maxStates });
    const wall = performance.now() - t0;
    return {
      ...base,
      wall_ms: wall,
      cpu_ms: process.cpuUsage(c0).user / 1000,
      states: r.states,
      transitions: r.transitions,
      iterations: r.iterations,
      residual: r.residual,
      dt_ms: r.dtMs,
      tokens_per_sec: r.tokensPerSec,
      met_target: targetS === null ? null : wall <= targetS * 1000,
      error: null,
    };
  } catch (e) {
    if (!(e instanceof ThroughputError)) throw e;
    return {
      ...base,
      wall_ms: performance.now() - t0,
      cpu_ms: process.cpuUsage(c0).user / 1000,
      states: null,
      transitions: null,
      iterations: null,
      residual: null,
      dt_ms: null,
      tokens_per_sec: null,
      met_target: targetS === null ? null : false,
      error: `${e.code}: ${e.message}`,
    };
  }
}

function show(r: Timed): void {
  const size = r.states === null ? r.error : `${r.states} states, ${r.transitions} transitions, ${r.iterations} iterations`;
  console.log(
    `${r.name.padEnd(28)} wall ${(r.wall_ms / 1000).toFixed(2)} s  cpu ${(r.cpu_ms / 1000).toFixed(2)} s  ${size}` +
      (r.tokens_per_sec === null ? '' : `  → ${r.tokens_per_sec.toFixed(2)} tok/s`) +
      (r.target_s === null ? '' : `  [target ${r.target_s} s: ${r.met_target ? 'met' : 'MISSED'}]`),
  );
}

export async function run(opts: DtmcSolveOptions): Promise<{ suite: string; settings: Record<string, unknown>; results: Record<string, unknown> }> {
  const flags = opts.flags ?? {};
  const quick = flags.quick === '1' || flags.quick === 'true';
  const maxStates = Number(flags['max-states'] ?? 6_000_000);
  const budgetMs = Number(flags['budget-s'] ?? 600) * 1000;
  const load0 = loadavg()[0];
  const rows: Timed[] = [];
  const add = (r: Timed) => {
    rows.push(r);
    show(r);
  };
  // JIT warm-up, so the first timed row measures the solver rather than compilation.
  solveThroughput(r2rInput(4, [1, 2]));

  // Targets from the brief: N = 16 with two models ≤ 1 s, N = 32 with three models ≤ 10 s.
  add(timeSolve('R2R N=16 T=1/1', r2rInput(16, [1, 1]), 1, maxStates));
  add(timeSolve('R2R N=16 T=1/10', r2rInput(16, [1, 10]), 1, maxStates));
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const { thresholds: _unused, ...sweepInput } = r2rInput(16, [1, 1]);
  const opt = optimiseThresholds(sweepInput, { fixed: { 0: 1 } });
  const sweep = {
    wall_ms: performance.now() - t0,
    cpu_ms: process.cpuUsage(c0).user / 1000,
    solves: opt.table.length,
    best: opt.best,
    predicted: opt.predicted,
  };
  console.log(
    `R2R N=16 sweep T_l=1..16: ${opt.table.length} solves, wall ${(sweep.wall_ms / 1000).toFixed(2)} s, cpu ${(sweep.cpu_ms / 1000).toFixed(2)} s, argmax ${opt.best.join('/')}`,
  );

  // Three models: climb N to show how the chain grows and where it stops fitting.
  const ladder = quick ? [8, 12] : [8, 12, 16, 20, 24];
  let stopped: string | null = null;
  for (const N of ladder) {
    const r = timeSolve(`three models N=${N} T=1/1/1`, threeModelInput(N, [1, 1, 1]), null, maxStates);
    add(r);
    if (r.error !== null || r.wall_ms > budgetMs) {
      stopped = `ladder stopped after N=${N}`;
      break;
    }
  }
  // The exact N = 32 chain: attempted only if its a-priori size estimate fits max-states (building
  // to the cap first and failing there would cost minutes and > 10 GB of transitions).
  const estimateN32 = estimateChainStates(threeModelInput(32, [1, 1, 1]));
  let exactN32: string;
  if (quick) exactN32 = 'not attempted (--quick)';
  else if (stopped !== null) exactN32 = `not attempted (${stopped})`;
  else if (estimateN32 > maxStates) exactN32 = `not attempted: estimated ${estimateN32} states > max-states ${maxStates}`;
  else {
    const r = timeSolve('three models N=32 T=1/1/1', threeModelInput(32, [1, 1, 1]), 10, maxStates);
    add(r);
    exactN32 = r.error ?? 'solved';
  }
  console.log(`three models N=32 exact chain: ${exactN32}`);
  // predictThroughput: the chain while it is affordable, else Monte Carlo replications to a ±0.25 %
  // (95 %) half-width. First check the simulation against every exact chain the ladder solved.
  const agreement: Record<string, unknown>[] = [];
  for (const r of rows) {
    if (r.K !== 3 || r.tokens_per_sec === null) continue;
    const sim = predictThroughput(threeModelInput(r.N, [1, 1, 1]), { method: 'simulate' });
    const rel = sim.tokensPerSec / r.tokens_per_sec - 1;
    const hw = sim.simulation?.relHalfWidth ?? null;
    agreement.push({
      N: r.N,
      chain: r.tokens_per_sec,
      simulated: sim.tokensPerSec,
      rel_diff: rel,
      rel_half_width: hw,
      replications: sim.simulation?.replications,
      wall_ms: sim.wallMs,
    });
    console.log(
      `three models N=${r.N} simulated ${sim.tokensPerSec.toFixed(2)} ± ${((hw ?? 0) * 100).toFixed(2)} % vs chain ${r.tokens_per_sec.toFixed(2)}: ` +
        `${(rel * 100).toFixed(2)} %, wall ${(sim.wallMs / 1000).toFixed(2)} s`,
    );
  }
  const tp = performance.now();
  const cp = process.cpuUsage();
  const pred = predictThroughput(threeModelInput(32, [1, 1, 1]));
  const predictN32 = {
    target_s: 10,
    method: pred.method,
    estimated_states: pred.estimatedStates,
    wall_ms: performance.now() - tp,
    cpu_ms: process.cpuUsage(cp).user / 1000,
    tokens_per_sec: pred.tokensPerSec,
    rel_half_width: pred.simulation?.relHalfWidth ?? null,
    replications: pred.simulation?.replications ?? null,
    met_target: performance.now() - tp <= 10_000,
  };
  console.log(
    `three models N=32 T=1/1/1 predictThroughput: ${pred.method} (chain estimate ${pred.estimatedStates} states), ` +
      `${pred.tokensPerSec.toFixed(2)} tok/s` +
      (pred.simulation ? ` ± ${(pred.simulation.relHalfWidth * 100).toFixed(2)} % (95 %, ${pred.simulation.replications} replications)` : '') +
      `, wall ${(predictN32.wall_ms / 1000).toFixed(2)} s  [target 10 s: ${predictN32.met_target ? 'met' : 'MISSED'}]`,
  );

  // The continuous-time Monte Carlo is the fallback where the chain is too big: time it at N = 32.
  const t1 = performance.now();
  const c1 = process.cpuUsage();
  const horizonMs = 2_000_000;
  const mc = simulateThroughput(threeModelInput(32, [1, 1, 1]), { horizonMs, seed: 1 });
  const monteCarloN32 = { horizonMs, wall_ms: performance.now() - t1, cpu_ms: process.cpuUsage(c1).user / 1000, tokens_per_sec: mc.tokensPerSec };
  console.log(
    `three models N=32 Monte Carlo (${horizonMs / 1000} s simulated): ${mc.tokensPerSec.toFixed(2)} tok/s, wall ${(monteCarloN32.wall_ms / 1000).toFixed(2)} s`,
  );

  return {
    suite: 'dtmc-solve',
    settings: {
      r2r: { P: 'p = 0.35', latencyMs: [6.0, 27.9], maxBatch: 'N' },
      threeModels: {
        P: [
          [0.7, 0.2, 0.1],
          [0.6, 0.3, 0.1],
          [1, 0, 0],
        ],
        latencyMs: [5, 12, 25],
        maxBatch: 'N',
        from: 'dtmc-validate suite',
      },
      maxStates,
      budgetS: budgetMs / 1000,
      tolerance: 1e-10,
      quick,
      cpu: 'cpu_ms is user CPU of this process; wall_ms is elapsed (the machine is shared: compare the two)',
      loadAverageAtStart: load0,
      loadAverageAtEnd: loadavg()[0],
    },
    results: {
      solves: rows,
      r2rSweepN16: sweep,
      ladder: stopped ?? 'complete',
      exactN32: { estimatedStates: estimateN32, outcome: exactN32 },
      simulationVsChain: agreement,
      predictN32,
      monteCarloN32,
    },
  };
}
