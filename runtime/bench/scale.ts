// Suite scale: 1,000 concurrent and 100,000 requests through the real scheduler in virtual time; wall time, memory, losses.
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Algorithm } from '../../shared/algorithm.ts';
import { VirtualClock } from '../clock/virtualClock.ts';
import { Cluster } from '../engine/cluster.ts';
import { markovAlgorithm, r2rMarkov } from '../sim/markovAlgorithm.ts';
import { profileRunners } from '../sim/paperProfile.ts';
import { progress, type BenchOptions, type BenchReport, type SuiteRun } from './benchSuite.ts';
import { printTable } from './table.ts';
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

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const concurrency = f.num('concurrency', 1000);
  const requests = f.sized('requests', 100_000, 10_000);
  const maxTokens = f.num('max-tokens', 64);
  const promptLength = f.num('prompt', 32);
  const maxBatch = f.num('max-batch', 256);
  const largeThreshold = f.num('large-threshold', 8);
  const clock = new VirtualClock();
  const runners = profileRunners(PAPER_SETTING.profile);
  const cluster = new Cluster({
    clock,
    mode: 'async-delayed',
    retainState: true,
    maxConcurrency: concurrency,
    maxWaitMs: PAPER_SETTING.maxWaitMs,
    // KV pools sized so that every in-flight request fits: memory is bounded by concurrency, not by requests.
    models: [...runners].map(([name, runner]) => ({ name, runner, maxBatch, threshold: name === 'large' ? largeThreshold : 1, kvCapacityTokens: concurrency * (promptLength + maxTokens) })),
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
  const lanes = cluster.laneStats();
  const leftover = lanes.map((l) => ({ name: l.name, kv_bytes: l.kvBytes, kv_reserved_bytes: l.kvReservedBytes, pending_return: l.pendingReturn, ready: l.ready }));
  const leaks = leftover.some((l) => l.kv_bytes || l.kv_reserved_bytes || l.pending_return || l.ready);
  const lost = requests - status.done;
  const maxRssMb = process.resourceUsage().maxRSS / 1024;
  // "Bounded": memory in the second half of the run is no higher than a small margin over the first half.
  const half = samples.filter((s) => s.done >= requests / 2);
  const firstHalf = samples.filter((s) => s.done > 0 && s.done < requests / 2);
  const heapFirstHalfPeak = Math.max(...firstHalf.map((s) => s.heap_mb));
  const heapSecondHalfPeak = Math.max(...half.map((s) => s.heap_mb));
  const results = {
    requests,
    concurrency,
    max_active: maxActive,
    completed: status.done,
    failed: status.failed,
    cancelled: status.cancelled,
    lost,
    short_outputs: status.short,
    committed_tokens: committed,
    expected_tokens: requests * maxTokens,
    wall_s: wallMs / 1000,
    virtual_s: clock.now() / 1000,
    sim_speedup: clock.now() / wallMs,
    committed_tok_per_virtual_s: committed / (clock.now() / 1000),
    requests_per_wall_s: requests / (wallMs / 1000),
    peak_rss_mb: maxRssMb,
    heap_first_half_peak_mb: heapFirstHalfPeak,
    heap_second_half_peak_mb: heapSecondHalfPeak,
    memory_bounded: heapSecondHalfPeak <= heapFirstHalfPeak * 1.25 + 16,
    leftover_state: leaks ? leftover : 'none (every KV byte, reservation and pending-return freed)',
    memory_samples: samples,
  };
  printTable([{ requests, concurrency, completed: status.done, lost, wall_s: results.wall_s, virtual_s: results.virtual_s, peak_rss_mb: maxRssMb, heap_1st_half_mb: heapFirstHalfPeak, heap_2nd_half_mb: heapSecondHalfPeak }]);
  console.log(`${lost === 0 && status.short === 0 && !leaks ? 'no request lost, every output full length, no state left behind' : 'LOSSES OR LEAKS: see results'}; memory ${results.memory_bounded ? 'bounded' : 'GREW'} (heap peak ${heapFirstHalfPeak.toFixed(0)} MB in the first half, ${heapSecondHalfPeak.toFixed(0)} MB in the second)`);
  const settings = {
    clock: 'virtual',
    runner: 'simulated, paper R2R profile',
    step_ms: PAPER_SETTING.profile.stepMs,
    routing: `Markov p=${PAPER_SETTING.p}, large back after 1 kept token`,
    concurrency,
    requests,
    prompt_tokens: promptLength,
    max_tokens: maxTokens,
    mode: 'async-delayed, retainState true',
    thresholds: { small: 1, large: largeThreshold },
    max_batch: maxBatch,
    max_wait_ms: PAPER_SETTING.maxWaitMs,
    heap_samples: gc ? 'live heap after a full GC, 50 samples' : 'heap used without forced GC (gc unavailable)',
    kv_capacity_tokens_per_model: concurrency * (promptLength + maxTokens),
    node: process.version,
    quick: f.quick,
  };
  const report: BenchReport = { suite: 'scale', settings, results };
  return { ...report, output: {
    tables: { Scale: [{ requests, concurrency, completed: status.done, lost, wall_s: results.wall_s, virtual_s: results.virtual_s, peak_rss_mb: maxRssMb }] },
    charts: {
      memory: lineChart({
        title: `Memory while ${requests.toLocaleString('en')} requests run at concurrency ${concurrency} (virtual time)`,
        xLabel: 'requests finished',
        yLabel: 'MB',
        series: [
          { name: 'heap used', points: samples.map((s) => [s.done, s.heap_mb]) },
          { name: 'RSS', points: samples.map((s) => [s.done, s.rss_mb]) },
        ],
      }),
    },
  } };
}
