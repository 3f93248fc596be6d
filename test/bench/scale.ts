// Suite scale: 1,000 concurrent and 100,000 requests through the real scheduler in virtual time; wall time, memory, losses.
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Algorithm } from '../../shared/algorithm.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';
import { profileRunners } from '../../runtime/sim/paperProfile.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { printTable } from '../../runtime/util/table.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { lineChart } from './svgChart.ts';
import { PAPER_SETTING } from './virtualServing.ts';

const MB = 2 ** 20;

/** A full GC before each sample, so heap figures show live memory rather than garbage not yet collected. */
function exposeGc(): (() => void) | null {
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc') as () => void;
  } catch {
    return null;
  }
}

interface MemorySample {
  done: number;
  heap_mb: number;
  rss_mb: number;
}

interface ScaleSettings {
  concurrency: number;
  requests: number;
  maxTokens: number;
  promptLength: number;
  maxBatch: number;
  largeThreshold: number;
}

function readSettings(f: SuiteFlags): ScaleSettings {
  return {
    concurrency: f.num('concurrency', 1000),
    requests: f.sized('requests', 100_000, 10_000),
    maxTokens: f.num('max-tokens', 64),
    promptLength: f.num('prompt', 32),
    maxBatch: f.num('max-batch', 256),
    largeThreshold: f.num('large-threshold', 8),
  };
}

/** What one run through the scheduler left: request outcomes, memory over time, the lanes' final state. */
interface ScaleRun {
  status: { done: number; failed: number; cancelled: number; short: number };
  committed: number;
  maxActive: number;
  samples: MemorySample[];
  /** Whether heap samples follow a forced full GC. */
  gcForced: boolean;
  wallMs: number;
  virtualMs: number;
  /** What each lane still holds after the last request ended (all zero unless something leaked). */
  leftover: { name: string; kv_bytes: number; kv_reserved_bytes: number; pending_return: number; ready: number }[];
}

/** A closed loop of `concurrency` clients through one virtual-time cluster until every request ended. */
function runScale(s: ScaleSettings): ScaleRun {
  const { concurrency, requests, maxTokens, promptLength, maxBatch, largeThreshold } = s;
  const clock = new VirtualClock();
  const runners = profileRunners(PAPER_SETTING.profile);
  const cluster = new Cluster({
    clock,
    mode: 'async-delayed',
    retainState: true,
    maxConcurrency: concurrency,
    maxWaitMs: PAPER_SETTING.maxWaitMs,
    prefixCache: false,
    // KV pools sized so that every in-flight request fits: memory is bounded by concurrency, not by requests.
    models: [...runners].map(([name, runner]) => ({
      name,
      runner,
      maxBatch,
      threshold: name === 'large' ? largeThreshold : 1,
      kvCapacityTokens: concurrency * (promptLength + maxTokens),
    })),
  });
  const algorithm = markovAlgorithm(r2rMarkov(PAPER_SETTING.p)) as Algorithm<unknown>;
  const status = { done: 0, failed: 0, cancelled: 0, short: 0 };
  let committed = 0;
  let sent = 0;
  let ended = 0;
  let maxActive = 0;
  const samples: MemorySample[] = [];
  const sampleEvery = Math.max(1, Math.floor(requests / 50));
  const gc = exposeGc();
  const sample = () => {
    gc?.();
    const m = process.memoryUsage();
    samples.push({ done: ended, heap_mb: m.heapUsed / MB, rss_mb: m.rss / MB });
  };
  const send = () => {
    const i = sent++;
    const prompt = new Array<number>(promptLength);
    for (let j = 0; j < promptLength; j++) prompt[j] = 4 + ((i * 31 + j * 7) % 90);
    cluster.submit({
      id: `s${i}`,
      prompt,
      maxTokens,
      sampling: { seed: i },
      algorithm,
      onEnd: (r) => {
        ended++;
        status[r.status]++;
        if (r.tokens.length !== maxTokens) status.short++;
        committed += r.tokens.length;
        if (ended % sampleEvery === 0) {
          sample();
          progress('scale', ended, requests);
        }
        if (sent < requests) send();
      },
    });
    if (cluster.activeCount > maxActive) maxActive = cluster.activeCount;
  };
  sample();
  const t0 = performance.now();
  for (let k = 0; k < Math.min(concurrency, requests); k++) send();
  clock.run({ stop: () => ended === requests });
  const wallMs = performance.now() - t0;
  if (ended !== requests) throw new Error(`scale run stalled: ${ended}/${requests} ended at t=${clock.now()}`);
  const leftover = cluster
    .laneStats()
    .map((l) => ({ name: l.name, kv_bytes: l.kvBytes, kv_reserved_bytes: l.kvReservedBytes, pending_return: l.pendingReturn, ready: l.ready }));
  return { status, committed, maxActive, samples, gcForced: gc !== null, wallMs, virtualMs: clock.now(), leftover };
}

const leaked = (run: ScaleRun) => run.leftover.some((l) => l.kv_bytes || l.kv_reserved_bytes || l.pending_return || l.ready);

function scaleResults(s: ScaleSettings, run: ScaleRun) {
  const { requests, concurrency, maxTokens } = s;
  const { status, committed, samples, wallMs, virtualMs } = run;
  // "Bounded": memory in the second half of the run is no higher than a small margin over the first half.
  const half = samples.filter((x) => x.done >= requests / 2);
  const firstHalf = samples.filter((x) => x.done > 0 && x.done < requests / 2);
  const heapFirstHalfPeak = Math.max(...firstHalf.map((x) => x.heap_mb));
  const heapSecondHalfPeak = Math.max(...half.map((x) => x.heap_mb));
  return {
    requests,
    concurrency,
    max_active: run.maxActive,
    completed: status.done,
    failed: status.failed,
    cancelled: status.cancelled,
    lost: requests - status.done,
    short_outputs: status.short,
    committed_tokens: committed,
    expected_tokens: requests * maxTokens,
    wall_s: wallMs / 1000,
    virtual_s: virtualMs / 1000,
    sim_speedup: virtualMs / wallMs,
    committed_tok_per_virtual_s: committed / (virtualMs / 1000),
    requests_per_wall_s: requests / (wallMs / 1000),
    peak_rss_mb: process.resourceUsage().maxRSS / 1024,
    heap_first_half_peak_mb: heapFirstHalfPeak,
    heap_second_half_peak_mb: heapSecondHalfPeak,
    memory_bounded: heapSecondHalfPeak <= heapFirstHalfPeak * 1.25 + 16,
    leftover_state: leaked(run) ? run.leftover : 'none (every KV byte, reservation and pending-return freed)',
    memory_samples: samples,
  };
}

function describeSettings(s: ScaleSettings, gcForced: boolean, quick: boolean): Record<string, unknown> {
  return {
    clock: 'virtual',
    runner: 'simulated, paper R2R profile',
    step_ms: PAPER_SETTING.profile.stepMs,
    routing: `Markov p=${PAPER_SETTING.p}, large back after 1 kept token`,
    concurrency: s.concurrency,
    requests: s.requests,
    prompt_tokens: s.promptLength,
    max_tokens: s.maxTokens,
    mode: 'async-delayed, retainState true',
    thresholds: { small: 1, large: s.largeThreshold },
    max_batch: s.maxBatch,
    max_wait_ms: PAPER_SETTING.maxWaitMs,
    heap_samples: gcForced ? 'live heap after a full GC, 50 samples' : 'heap used without forced GC (gc unavailable)',
    kv_capacity_tokens_per_model: s.concurrency * (s.promptLength + s.maxTokens),
    node: process.version,
    quick,
  };
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const s = readSettings(f);
  const measured = runScale(s);
  const results = scaleResults(s, measured);
  const { requests, concurrency, completed, lost, wall_s, virtual_s, peak_rss_mb } = results;
  const heap = { first: results.heap_first_half_peak_mb, second: results.heap_second_half_peak_mb };
  printTable([{ requests, concurrency, completed, lost, wall_s, virtual_s, peak_rss_mb, heap_1st_half_mb: heap.first, heap_2nd_half_mb: heap.second }]);
  const clean = lost === 0 && results.short_outputs === 0 && !leaked(measured);
  console.log(
    `${clean ? 'no request lost, every output full length, no state left behind' : 'LOSSES OR LEAKS: see results'}; memory ${results.memory_bounded ? 'bounded' : 'GREW'} (heap peak ${heap.first.toFixed(0)} MB in the first half, ${heap.second.toFixed(0)} MB in the second)`,
  );
  const report: BenchReport = { suite: 'scale', settings: describeSettings(s, measured.gcForced, f.quick), results };
  return {
    ...report,
    output: {
      tables: { Scale: [{ requests, concurrency, completed, lost, wall_s, virtual_s, peak_rss_mb }] },
      charts: {
        memory: lineChart({
          title: `Memory while ${requests.toLocaleString('en')} requests run at concurrency ${concurrency} (virtual time)`,
          xLabel: 'requests finished',
          yLabel: 'MB',
          series: [
            { name: 'heap used', points: measured.samples.map((x) => [x.done, x.heap_mb]) },
            { name: 'RSS', points: measured.samples.map((x) => [x.done, x.rss_mb]) },
          ],
        }),
      },
    },
  };
}
