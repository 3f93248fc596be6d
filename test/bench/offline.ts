// Suite offline: per model, an in-process batched generate loop over the server's own runner against the server at concurrency 8 over HTTP (vLLM's benchmark_throughput beside benchmark_serving).
import { benchPrompt } from '../../runtime/loadgen/benchPrompt.ts';
import { percentile } from '../../runtime/util/stats.ts';
import type { ModelRunner, SamplingParams, StepRow } from '../../runtime/runner/modelRunner.ts';
import type { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import {
  machineBusyCores,
  machineCpuTicks,
  processSchedstat,
  processThreadsCpuMs,
  runqueueWait,
  threadSplit,
  type RunqueueWait,
} from '../../runtime/util/threadCpu.ts';
import type { BenchOptions, BenchReport, SuiteRun } from './benchSuite.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import { loadRunnerSet, MODEL_NAMES } from './benchRunners.ts';
import { resolvedPlacement, runServingCase, servingDefaults, servingSettings, type ServingMode } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { barChart } from './svgChart.ts';

/** static: prefill `batch` prompts, decode until all end, then the next `batch`; continuous: a finished row's slot takes the next prompt at the next step. */
export type Batching = 'static' | 'continuous';

export interface OfflineCase {
  runner: ModelRunner;
  tokenizer: TextTokenizer;
  /** Request indices for benchPrompt (negative: warm-up prompts, as the load generator uses). */
  prompts: readonly number[];
  batch: number;
  maxTokens: number;
  ignoreEos: boolean;
  batching: Batching;
}

export interface OfflineRun {
  outputTokens: number;
  wallMs: number;
  tokS: number;
  steps: number;
  /** Σ rows over steps / steps. */
  meanBatch: number;
  /** This process's CPU over the run (main thread and model worker), ms. */
  cpuMs: number;
  /** The same per thread (null without /proc): the bench's main thread (the loop), the model's worker thread (its busiest other thread), the rest. */
  threads: { mainMs: number; busiestMs: number; restMs: number } | null;
  /** Cores the whole machine kept busy over the run (null without /proc). */
  machineBusyCores: number | null;
  /** Run-queue wait of this process's threads over the run (null without /proc). */
  runqueueWait: RunqueueWait | null;
}

interface LiveRow {
  cacheId: number;
  prompt: number[];
  /** Tokens fed to the cache so far. */
  fed: number;
  /** Tokens to feed at the next step (the prompt, then the last sampled token). */
  next: number[];
  generated: number;
  /** Same length limit as the engine: prompt + max_tokens, capped by the context window. */
  maxLength: number;
  sampling: SamplingParams;
}

/** Cache ids far from the ones a server's pool hands out, in case a server's request is still being released. */
const CACHE_BASE = 1 << 30;

/**
 * The offline side: no HTTP, no scheduler, no routing — rows fed straight to
 * `runner.step`, with the engine's stopping rule (EOS ends a row uncommitted; the token reaching
 * the length limit is committed and ends it) so both sides generate the same tokens.
 */
export async function runOffline(c: OfflineCase): Promise<OfflineRun> {
  const { runner } = c;
  const eos = runner.info.eosTokenIds;
  const maxContext = runner.info.maxContext;
  let nextPrompt = 0;
  let nextCache = CACHE_BASE;
  const admit = (): LiveRow => {
    const i = c.prompts[nextPrompt++];
    const prompt = c.tokenizer.encodeChat([{ role: 'user', content: benchPrompt(i) }]);
    // The load generator's request: temperature 0, seed |i|; ignore_eos sets min_tokens = max_tokens, so EOS stays out of every draw.
    const sampling: SamplingParams = { temperature: 0, topP: 1, topK: 0, seed: Math.abs(i), ...(c.ignoreEos ? { suppressEos: true } : {}) };
    return { cacheId: nextCache++, prompt, fed: 0, next: prompt, generated: 0, maxLength: Math.min(prompt.length + c.maxTokens, maxContext), sampling };
  };
  let active: LiveRow[] = [];
  let outputTokens = 0;
  let steps = 0;
  let rowSteps = 0;
  const threads0 = processThreadsCpuMs();
  const machine0 = machineCpuTicks();
  const sched0 = processSchedstat();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  while (nextPrompt < c.prompts.length || active.length > 0) {
    // Static batching refills only once the whole batch has ended; continuous refills every free slot.
    if (c.batching === 'continuous' || active.length === 0) while (active.length < c.batch && nextPrompt < c.prompts.length) active.push(admit());
    const rows: StepRow[] = active.map((r) => ({
      cacheId: r.cacheId,
      requestId: `offline-${r.cacheId - CACHE_BASE}`,
      tokens: r.next,
      position: r.fed,
      sampling: r.sampling,
      wants: NO_WANTS,
    }));
    const out = await runner.step(rows);
    // A simulated runner answers at once and charges clock time instead: wait it out, as a server on the real clock does.
    if (out.durationMs !== undefined && out.durationMs > 0) await new Promise((res) => setTimeout(res, out.durationMs));
    steps++;
    rowSteps += rows.length;
    const still: LiveRow[] = [];
    active.forEach((r, k) => {
      const token = out.rows[k].token;
      r.fed += r.next.length;
      let done = eos.includes(token) && !c.ignoreEos;
      if (!done) {
        r.generated++;
        outputTokens++;
        done = r.prompt.length + r.generated >= r.maxLength;
      }
      if (done) runner.release(r.cacheId);
      else {
        r.next = [token];
        still.push(r);
      }
    });
    active = still;
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const threads = threadSplit(threads0, processThreadsCpuMs());
  const machine = machineBusyCores(machine0, machineCpuTicks(), wallMs);
  return {
    outputTokens,
    wallMs,
    tokS: (outputTokens / wallMs) * 1000,
    steps,
    meanBatch: rowSteps / Math.max(1, steps),
    cpuMs: (cpu.user + cpu.system) / 1000,
    threads,
    machineBusyCores: machine,
    runqueueWait: runqueueWait(sched0, processSchedstat()),
  };
}

/** The server's default scheduling for a single model: TokenRouter mode; with one lane there is nothing to hand off. */
export const SERVED: ServingMode = { label: 'served', mode: 'async-delayed', retainState: true };

const median = (xs: readonly number[]): number => percentile(xs, 50);

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const models = f.list('models', MODEL_NAMES);
  const concurrency = f.num('concurrency', 8);
  // 1,024 prompts, as vLLM's benchmarks use ~1,000: at 128 the small model's served window was ~0.45 s, and its start and drain weighed in it
  const requests = f.sized('requests', 1024, 16);
  const maxTokens = f.num('max-tokens', 128);
  // Both sides warm up long enough for V8 to finish optimising the served path (HTTP, SSE, engine, runner): after
  // 16 requests its compiler threads still took 60-80 us per measured token, after 256 they took 16-68, after
  // 1,024 13-14; the per-request code (body parsing, the template, the plan) runs once a request.
  const warmup = f.sized('warmup', 128 * concurrency, 2 * concurrency);
  const rounds = f.sized('rounds', 2, 1);
  const ignoreEos = f.bool('ignore-eos', false);
  const streamInterval = f.num('stream-interval', 1);
  if (!Number.isInteger(streamInterval) || streamInterval < 1) throw new Error(`--stream-interval must be an integer ≥ 1, got ${streamInterval}`);
  // The issue's offline side is static batching; runOffline also does continuous for callers that want vLLM's engine loop.
  const batching: Batching = 'static';
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be an integer ≥ 1, got ${rounds}`);
  const set = await loadRunnerSet(f.str('runners'));
  // --placement, default the server's "auto": engines beside their ONNX models in threads, simulated runners in-process
  const placement = serving.placement;
  const resolved = resolvedPlacement(placement, set);
  const total = models.length * rounds * 2;
  let done = 0;
  const rows: Row[] = [];
  const perModel: Record<string, unknown>[] = [];
  const roundRows: Row[] = [];
  try {
    for (const model of models) {
      const runner = set.runners.get(model);
      if (!runner) throw new Error(`no runner "${model}" (have ${[...set.runners.keys()].join(', ')})`);
      const base = { runner, tokenizer: set.tokenizer, batch: concurrency, maxTokens, ignoreEos, batching };
      // Untimed, like the served side's warm-up pass: the same number of questions the measured runs never ask.
      await runOffline({ ...base, prompts: Array.from({ length: warmup }, (_, k) => -(k + 1)) });
      const measured = Array.from({ length: requests }, (_, i) => i);
      const offline: OfflineRun[] = [];
      const served: {
        tokS: number;
        outputTokens: number;
        failed: number;
        wallMs: number;
        cpuMs: number;
        clientCpuMs: number | null;
        entryMainMs: number | null;
        meanE2eMs: number;
        meanTtftMs: number;
        p99TtftMs: number;
        engine: { cpuMs: number; gcMs: number } | undefined;
        machineBusyCores: number | null;
        runqueueWait: RunqueueWait | null;
      }[] = [];
      for (let r = 0; r < rounds; r++) {
        // Alternate which side goes first, so a drift in the shared machine's load does not favour one.
        const order = r % 2 === 0 ? ['offline', 'served'] : ['served', 'offline'];
        for (const side of order) {
          if (side === 'offline') {
            offline.push(await runOffline({ ...base, prompts: measured }));
          } else {
            const s = await runServingCase(set, {
              ...serving,
              placement,
              algorithm: model,
              lanes: { [model]: model },
              mode: SERVED,
              concurrency,
              requests,
              warmup,
              maxTokens,
              ignoreEos,
              streamInterval,
            });
            const m = s.run.metrics;
            if (m.failed > 0) throw new Error(`served ${model}: ${m.failed} of ${requests} requests failed: ${s.run.firstError}`);
            served.push({
              tokS: m.outputThroughputTokS,
              outputTokens: m.totalOutputTokens,
              failed: m.failed,
              wallMs: m.durationMs,
              cpuMs: s.cpu.serverMs,
              clientCpuMs: s.cpu.clientMs,
              entryMainMs: s.cpu.entryMainMs,
              meanE2eMs: m.e2eMs.mean,
              meanTtftMs: m.ttftMs.mean,
              p99TtftMs: m.ttftMs.p99,
              engine: s.lanes.find((l) => l.name === model)?.thread,
              machineBusyCores: s.cpu.machineBusyCores ?? null,
              runqueueWait: s.cpu.runqueueWait ?? null,
            });
          }
          progress(`offline ${model} round ${r + 1} ${side}`, ++done, total);
        }
        const o = offline[r];
        const s = served[r];
        roundRows.push({
          model,
          round: r + 1,
          first: order[0],
          offline_tok_s: o.tokS,
          served_tok_s: s.tokS,
          ratio: s.tokS / o.tokS,
          served_machine_cores: s.machineBusyCores ?? '-',
          offline_machine_cores: o.machineBusyCores ?? '-',
          offline_out_tokens: o.outputTokens,
          served_out_tokens: s.outputTokens,
        });
      }
      const offTok = median(offline.map((o) => o.tokS));
      const srvTok = median(served.map((s) => s.tokS));
      const ratio = srvTok / offTok;
      // the entry's main thread: its CPU over the measured run ÷ streamed (committed) tokens
      const entryUs = served.every((s) => s.entryMainMs !== null) ? median(served.map((s) => (s.entryMainMs! * 1000) / s.outputTokens)) : null;
      // the engine's own thread (thread placement): its CPU per token and its GC share, and every other thread of the server (ONNX Runtime's pool, libuv)
      const threads = served.every((s) => s.engine && s.entryMainMs !== null)
        ? {
            engine_thread_us_per_token: median(served.map((s) => (s.engine!.cpuMs * 1000) / s.outputTokens)),
            engine_gc_share: median(served.map((s) => s.engine!.gcMs / Math.max(1, s.engine!.cpuMs))),
            other_threads_us_per_token: median(served.map((s) => ((s.cpuMs - s.entryMainMs! - s.engine!.cpuMs) * 1000) / s.outputTokens)),
          }
        : null;
      // the offline loop's threads: what the same tokens cost with no server around them (the model's worker thread does what the served engine thread does less the engine)
      const offThreads = offline.every((o) => o.threads !== null)
        ? {
            offline_model_thread_us_per_token: median(offline.map((o) => (o.threads!.busiestMs * 1000) / o.outputTokens)),
            offline_main_us_per_token: median(offline.map((o) => (o.threads!.mainMs * 1000) / o.outputTokens)),
            offline_other_threads_us_per_token: median(offline.map((o) => (o.threads!.restMs * 1000) / o.outputTokens)),
          }
        : null;
      // the machine while each side ran: every process's busy cores, and how long this process's runnable threads waited for a core
      const medianOf = <T>(xs: readonly T[], f: (x: T) => number | null | undefined): number | null =>
        xs.every((x) => f(x) != null) ? median(xs.map((x) => f(x)!)) : null;
      const contention = {
        served_machine_busy_cores: medianOf(served, (s) => s.machineBusyCores),
        offline_machine_busy_cores: medianOf(offline, (o) => o.machineBusyCores),
        served_runqueue_wait: {
          entry_main: medianOf(served, (s) => s.runqueueWait?.main),
          engine_thread: medianOf(served, (s) => s.runqueueWait?.busiest),
          all_threads: medianOf(served, (s) => s.runqueueWait?.all),
        },
        offline_runqueue_wait: {
          main: medianOf(offline, (o) => o.runqueueWait?.main),
          model_thread: medianOf(offline, (o) => o.runqueueWait?.busiest),
          all_threads: medianOf(offline, (o) => o.runqueueWait?.all),
        },
      };
      perModel.push({
        model,
        ...threads,
        ...offThreads,
        ...contention,
        offline_tok_s: offTok,
        served_tok_s: srvTok,
        ratio,
        served_mean_ttft_ms: median(served.map((s) => s.meanTtftMs)),
        entry_us_per_token: entryUs,
        served_server_cpu_cores: median(served.map((s) => s.cpuMs / s.wallMs)),
        served_client_cpu_cores: served.every((s) => s.clientCpuMs !== null) ? median(served.map((s) => s.clientCpuMs! / s.wallMs)) : null,
        offline_cpu_cores: median(offline.map((o) => o.cpuMs / o.wallMs)),
        rounds: offline.map((o, r) => ({
          offline: {
            tok_s: o.tokS,
            output_tokens: o.outputTokens,
            wall_ms: o.wallMs,
            steps: o.steps,
            mean_batch: o.meanBatch,
            cpu_cores: o.cpuMs / o.wallMs,
            thread_cpu_ms: o.threads,
            machine_busy_cores: o.machineBusyCores,
            runqueue_wait: o.runqueueWait,
          },
          served: {
            tok_s: served[r].tokS,
            output_tokens: served[r].outputTokens,
            wall_ms: served[r].wallMs,
            mean_e2e_ms: served[r].meanE2eMs,
            mean_ttft_ms: served[r].meanTtftMs,
            p99_ttft_ms: served[r].p99TtftMs,
            server_cpu_cores: served[r].cpuMs / served[r].wallMs,
            client_cpu_cores: served[r].clientCpuMs === null ? null : served[r].clientCpuMs / served[r].wallMs,
            entry_main_cpu_ms: served[r].entryMainMs,
            machine_busy_cores: served[r].machineBusyCores,
            runqueue_wait: served[r].runqueueWait,
          },
        })),
      });
      rows.push({
        model,
        offline_tok_s: offTok,
        served_tok_s: srvTok,
        ratio,
        served_ttft_ms: median(served.map((s) => s.meanTtftMs)),
        target: ratio >= 0.9 ? 'met' : 'missed',
        entry_us_per_token: entryUs ?? '-',
        machine_cores: contention.served_machine_busy_cores ?? '-',
        entry_wait: contention.served_runqueue_wait.entry_main ?? '-',
        engine_us_per_token: threads?.engine_thread_us_per_token ?? '-',
        engine_gc: threads?.engine_gc_share ?? '-',
        other_us_per_token: threads?.other_threads_us_per_token ?? '-',
        offline_model_us: offThreads?.offline_model_thread_us_per_token ?? '-',
        offline_main_us: offThreads?.offline_main_us_per_token ?? '-',
        offline_out_tokens: offline[0].outputTokens,
        served_out_tokens: served[0].outputTokens,
      });
    }
  } finally {
    await set.close();
  }
  printTable(roundRows);
  console.log('');
  printTable(rows);
  console.log(
    `served / offline (medians of ${rounds} rounds), target ≥ 0.90 for every model: ${rows.map((r) => `${r.model} ${(r.ratio as number).toFixed(2)}×`).join(', ')}`,
  );
  const settings = {
    models,
    requests_per_run: requests,
    rounds: `${rounds} (offline and served alternate, first side swapped every round; figures are medians over rounds)`,
    warmup_requests: warmup,
    max_tokens: maxTokens,
    eos: ignoreEos ? 'ignore_eos (every request runs to max_tokens)' : 'natural (EOS ends a row, uncommitted, as in the engine)',
    prompt: 'chat of a validation word problem (benchPrompt(i), i = 0 … requests−1), rendered by the chat template; the same ids on both sides',
    sampling: 'temperature 0, seed i (the load generator’s request); no wants (single model: no top-k, hidden or heads)',
    offline: {
      loop: `${batching} batching, batch ${concurrency}: ${batching === 'static' ? `prefill ${concurrency} prompts in one step, decode until every row ended (EOS or max tokens), then the next ${concurrency}; no refill` : 'every step feeds all live rows; a slot freed by a finished row takes the next prompt (its prefill) in the next step'}`,
      runner: `the very runner objects the server uses (${set.kind === 'bundled' ? 'WorkerRunner: OnnxRunner in a worker thread, intraOpNumThreads 1' : 'simulated SimRunner'}, behind the bench MeteredRunner), called from the bench’s main thread`,
      excludes: 'HTTP, tokenizer decode, scheduler, engine, routing (one runner.step per decode step)',
      tok_s: 'generated output tokens / wall time from the first step call to the last result',
      threads:
        "offline_model_thread_us_per_token: the CPU of the busiest thread other than the main one over the offline run (the model's worker: ORT run, sampling, the KV) ÷ generated tokens, set beside the served engine thread's; offline_main_us_per_token: the bench's main thread (the loop, the step messages); offline_other_threads_us_per_token: the rest; each from /proc/self/task/*/stat (10 ms ticks); medians over rounds",
    },
    served: {
      server: 'runServingCase: a fresh TokenRouterService + HTTP server per run, one lane, algorithm = the bare model name (singleModel at /v1)',
      mode: 'async-delayed, retainState true, thresholds 1, maxWaitMs 20, maxBatch 32 (the server’s defaults; nothing tuned)',
      concurrency,
      stream_interval: streamInterval,
      ...servingSettings({ ...serving, placement }),
      placement: `${placement}${placement === 'auto' ? ` (resolved: ${resolved})` : ''}`,
      entry_us_per_token:
        "CPU time of this process's main thread (the entry: HTTP, admission, request actors, SSE) over the measured served run, from /proc/self/task/<pid>/stat utime+stime (10 ms ticks), ÷ committed output tokens; the load generator runs in a child process, engines and models in their own threads, so neither counts; median over rounds",
      threads:
        "thread placement: engine_thread_us_per_token, the engine thread's CPU (its /proc/thread-self/stat, sent with its lane) ÷ committed tokens; engine_gc_share, its garbage-collection pauses (perf_hooks gc entries in that thread) ÷ its CPU time; other_threads_us_per_token, the server process's CPU less the entry's main thread and the engine thread (ONNX Runtime's pool, libuv) ÷ tokens; medians over rounds",
      contention:
        "served_machine_busy_cores / offline_machine_busy_cores: cores the whole machine (every process: this one, the load generator, anything else) kept busy over each side's run, from /proc/stat; served_runqueue_wait / offline_runqueue_wait: the share of its runnable time a thread group spent waiting for a core (/proc/self/task/*/schedstat, ns): the main thread (the entry; the offline loop), the busiest other thread (the engine; the model worker) and all of this process's threads; medians over rounds",
      cpu_cores:
        "served_server_cpu_cores: this process (entry, engine threads, model threads) CPU ÷ wall over the served run; served_client_cpu_cores: the load generator process's; offline_cpu_cores: this process over the offline loop",
      tok_s: 'Σ committed output tokens (usage.completion_tokens) / wall time first dispatch → last completion, as every serving suite',
    },
    target: 'served_tok_s ≥ 0.90 × offline_tok_s for every bundled model (issue 17)',
    quick: f.quick,
    ...set.description,
  };
  const report: BenchReport = { suite: 'offline', settings, results: { models: perModel } };
  return {
    ...report,
    output: {
      tables: { 'Served vs offline (medians)': rows, 'Every round': roundRows },
      charts: {
        offline: barChart({
          title: `Output throughput: offline ${batching} batch ${concurrency} vs served at concurrency ${concurrency} (${set.kind} models)`,
          yLabel: 'tok/s',
          categories: models,
          series: [
            { name: 'offline', values: rows.map((r) => r.offline_tok_s as number) },
            { name: 'served', values: rows.map((r) => r.served_tok_s as number) },
          ],
        }),
      },
    },
  };
}
