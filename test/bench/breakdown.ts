// Suite breakdown: where each sub-server's busy time goes at concurrency 16 — the model vs everything around it.
import os from 'node:os';
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { loadRunnerSet } from './benchRunners.ts';
import { choiceSteps, chooseTokenRouterMode, thresholdMethod } from './compareModes.ts';
import { BASELINE, runServingCase, servingDefaults, servingSettings, type ServingMode } from './servingCase.ts';
import type { LaneStats } from '../../shared/protocol/engineProtocol.ts';
import { ALGORITHM_LANES } from './serving.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { barChart } from './svgChart.ts';

export interface LaneBreakdown {
  lane: string;
  batches: number;
  mean_batch: number;
  /** Σ launch → the batch's rows applied, ms. */
  busy_ms: number;
  /** Inside the model (session.run and router heads), as the runner measures it. */
  model_ms: number;
  /** Launch → the runner's results, minus model time: tensor building, KV re-packing, sampling, waits for a core. */
  runner_other_ms: number;
  /** Results → rows applied: routing, commits, handoffs, the engine's outputs. */
  route_ms: number;
  model_fraction: number;
}

/**
 * Splits each lane's busy time from the engines' own counters (LaneStats over the measured run), so
 * the suite reads nothing per batch and its figures do not depend on the trace window's size.
 */
export function breakdownOf(lanes: readonly LaneStats[]): LaneBreakdown[] {
  return lanes
    .filter((l) => l.batches > 0)
    .map((l) => ({
      lane: l.name,
      batches: l.batches,
      mean_batch: l.rows / l.batches,
      busy_ms: l.batchMs,
      model_ms: l.modelMs,
      runner_other_ms: Math.max(0, l.busyMs - l.modelMs),
      route_ms: Math.max(0, l.batchMs - l.busyMs),
      model_fraction: l.modelMs / Math.max(1e-9, l.batchMs),
    }));
}

/** Σ model / Σ busy over every lane. */
export function overallModelFraction(lanes: readonly LaneBreakdown[]): number {
  const busy = lanes.reduce((s, l) => s + l.busy_ms, 0);
  return busy > 0 ? lanes.reduce((s, l) => s + l.model_ms, 0) / busy : 0;
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const concurrency = f.num('concurrency', 16);
  const algorithms = f.list('algorithms', ['r2r']);
  // A steady-state window, as the offline suite's: at 128 requests after 32 the run lasted ~1.3 s, its large batches
  // still prefilling catch-ups and V8 still compiling, and model share read 0.83-0.85 against 0.86 at steady state.
  const requests = f.sized('requests', 1024, 24);
  const warmup = f.sized('warmup', 64 * concurrency, 2 * concurrency);
  const maxTokens = f.num('max-tokens', 128);
  const ignoreEos = f.bool('ignore-eos', false);
  const fixed = f.num('large-threshold', 0);
  const set = await loadRunnerSet(f.str('runners'));
  const method = thresholdMethod(f.str('thresholds'));
  const total = algorithms.length * ((fixed ? 0 : choiceSteps(method, concurrency)) + 2);
  let done = 0;
  const rows: Row[] = [];
  const perAlg: Record<string, unknown>[] = [];
  try {
    for (const algorithm of algorithms) {
      const lanes = ALGORITHM_LANES[algorithm];
      if (!lanes) throw new Error(`unknown algorithm "${algorithm}"`);
      const c = { ...serving, algorithm, lanes, concurrency, requests, warmup, maxTokens, ignoreEos };
      let tr: ServingMode;
      if (fixed) tr = { label: 'tokenrouter', mode: 'async-delayed', retainState: true, thresholds: { large: fixed } };
      else
        tr = (
          await chooseTokenRouterMode(set, c, {
            method,
            slowLane: 'large',
            calibrationRequests: f.sized('calibration-requests', 64, 8),
            onStep: (what) => progress(`breakdown ${algorithm} ${what}`, ++done, total),
          })
        ).mode;
      const entry: Record<string, unknown> = { algorithm, thresholds: tr.thresholds };
      for (const mode of [tr, BASELINE]) {
        const r = await runServingCase(set, { ...c, mode });
        progress(`breakdown ${algorithm} ${mode.label}`, ++done, total);
        const lanesBd = breakdownOf(r.lanes);
        const duration = r.run.metrics.durationMs;
        const cores = os.availableParallelism();
        const modelMs = lanesBd.reduce((a, l) => a + l.model_ms, 0);
        entry[mode.label] = {
          model_fraction: overallModelFraction(lanesBd),
          tok_s: r.run.metrics.outputThroughputTokS,
          // Is the machine the limit? CPU used by both processes over the cores' capacity, and the part the models took.
          cpu: {
            cores,
            wall_ms: r.cpu.wallMs,
            server_cpu_ms: r.cpu.serverMs,
            client_cpu_ms: r.cpu.clientMs,
            model_ms: modelMs,
            cpu_busy_share: (r.cpu.serverMs + (r.cpu.clientMs ?? 0)) / (r.cpu.wallMs * cores),
            model_share_of_cpu: modelMs / (r.cpu.serverMs + (r.cpu.clientMs ?? 0)),
          },
          lanes: lanesBd.map((l) => {
            // an engine in its own thread: its CPU, and how long it sat runnable with no core free (schedstat); both fall inside model and other time alike
            const thread = r.lanes.find((x) => x.name === l.lane)?.thread;
            return {
              ...l,
              model_busy_share_of_run: l.model_ms / duration,
              engine_thread_cpu_ms: thread?.cpuMs ?? null,
              engine_thread_wait_ms: thread?.waitMs ?? null,
            };
          }),
        };
        for (const l of lanesBd) {
          rows.push({
            algorithm,
            mode: mode.label,
            lane: l.lane,
            batches: l.batches,
            mean_batch: l.mean_batch,
            busy_ms: l.busy_ms,
            model_pct: 100 * l.model_fraction,
            runner_other_pct: (100 * l.runner_other_ms) / l.busy_ms,
            route_stream_pct: (100 * l.route_ms) / l.busy_ms,
            model_ms_per_batch: l.model_ms / l.batches,
            busy_ms_per_batch: l.busy_ms / l.batches,
          });
        }
      }
      perAlg.push(entry);
    }
  } finally {
    await set.close();
  }
  printTable(rows);
  for (const e of perAlg) {
    for (const m of ['tokenrouter', 'baseline']) {
      const c = (
        e[m] as { cpu: { cores: number; cpu_busy_share: number; server_cpu_ms: number; client_cpu_ms: number | null; model_ms: number; wall_ms: number } }
      ).cpu;
      console.log(
        `${e.algorithm} ${m}: CPU ${(100 * c.cpu_busy_share).toFixed(0)}% of ${c.cores} cores busy (server ${(c.server_cpu_ms / c.wall_ms).toFixed(2)} cores, client ${c.client_cpu_ms === null ? 'n/a' : (c.client_cpu_ms / c.wall_ms).toFixed(2)}, models ${(c.model_ms / c.wall_ms).toFixed(2)})`,
      );
    }
  }
  const first = perAlg[0] as { tokenrouter: { model_fraction: number }; baseline: { model_fraction: number } };
  console.log(
    `model execution share of busy time (TokenRouter mode, ${algorithms[0]}, N=${concurrency}): ${(100 * first.tokenrouter.model_fraction).toFixed(1)}% (target ≥ 90%); baseline ${(100 * first.baseline.model_fraction).toFixed(1)}%`,
  );
  const settings = {
    concurrency,
    algorithms,
    requests,
    warmup_requests: warmup,
    max_tokens: maxTokens,
    eos: ignoreEos ? 'ignore_eos (every request runs to max_tokens)' : 'natural',
    tokenrouter_mode: fixed
      ? `async-delayed, retainState true, large threshold ${fixed}`
      : `async-delayed, retainState true, thresholds from ${method === 'model' ? 'the throughput model' : 'a sweep of the large lane'}`,
    baseline_mode: 'step-sync, retainState false',
    busy_time:
      "the engines' counters over the measured run (LaneStats batchMs: launch → the batch's rows applied, real clock), per lane; no trace is read, so engines make no trace events (since 5 Dec 13:00; before, per batch from the trace)",
    model_time: 'modelMs the runner reports (ONNX session.run + router heads, inside the worker); simulated runners: their step latency',
    run_queue_wait:
      "engine_thread_cpu_ms / engine_thread_wait_ms: the lane engine thread's CPU and its time runnable but waiting for a core over the run (/proc/thread-self/stat and schedstat, read by the engine at most every 25 ms; thread placement only). Model and other time are wall time: a wait inside session.run counts as model time, one elsewhere as other",
    parts: {
      runner_other: "launch → the runner's results (LaneStats busyMs), minus model time (tensors, KV re-packing, sampling, waits for a core)",
      route_stream:
        "results → the batch's rows applied (batchMs − busyMs: route(), commits, handoffs, the engine's outputs; the entry's SSE writes run on its own thread)",
    },
    transport: 'HTTP/SSE to a server in the bench process (the client: see below)',
    ...set.description,
    ...servingSettings(serving),
    quick: f.quick,
  };
  const report: BenchReport = {
    suite: 'breakdown',
    settings,
    results: { model_fraction: first.tokenrouter.model_fraction, baseline_model_fraction: first.baseline.model_fraction, algorithms: perAlg },
  };
  const cats = rows.map((r) => `${r.algorithm} ${r.mode === 'tokenrouter' ? 'TR' : 'base'} ${r.lane}`);
  return {
    ...report,
    output: {
      tables: { 'Busy time by part (% of each lane busy time)': rows },
      charts: {
        breakdown: barChart({
          title: `Share of sub-server busy time, N=${concurrency} (${set.kind} models)`,
          yLabel: '% of busy time',
          categories: cats,
          series: [
            { name: 'model', values: rows.map((r) => r.model_pct as number) },
            { name: 'runner other', values: rows.map((r) => r.runner_other_pct as number) },
            { name: 'route+stream', values: rows.map((r) => r.route_stream_pct as number) },
          ],
        }),
      },
    },
  };
}
