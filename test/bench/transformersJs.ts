// Suite transformers-js: one model served at concurrency 8 over HTTP against transformers.js' batched `generate` on the same model and prompts.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchPrompt } from '../../runtime/loadgen/benchPrompt.ts';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';
import { percentile } from '../../runtime/util/stats.ts';
import { runTsChild } from '../../runtime/util/tsChild.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { loadRunnerSet, MODEL_NAMES } from './benchRunners.ts';
import { SERVED } from './offline.ts';
import { resolvedPlacement, runServingCase, servingDefaults, servingSettings } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { barChart } from './svgChart.ts';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'transformersJsGenerate.ts');

export interface GenerateRun {
  outputTokens: number;
  wallMs: number;
  tokS: number;
  /** The child's CPU over the timed part (every thread: transformers.js, ONNX Runtime's pool). */
  cpuMs: number;
  /** The tokens transformers.js generated for the first batch of timed prompts, row by row (a check that both sides run the same model). */
  firstBatch: number[][];
}

/** transformers.js in its own process: its ONNX Runtime and threads never share ours, and its CPU is its own. */
export async function runGenerate(
  model: string,
  job: { warmup: number[][]; prompts: number[][]; batch: number; maxTokens: number; padTokenId: number },
  dir: string = BUNDLED_MODELS_DIR,
  threads?: number,
): Promise<GenerateRun> {
  const r = await runTsChild<{ output_tokens: number; wall_ms: number; cpu_ms: number; first_batch_tokens: number[][] }>(
    CHILD,
    ['--dir', dir, '--model', model, ...(threads ? ['--threads', String(threads)] : [])],
    { what: `transformers.js child for ${model}`, stdin: JSON.stringify(job) },
  );
  return { outputTokens: r.output_tokens, wallMs: r.wall_ms, tokS: (r.output_tokens / r.wall_ms) * 1000, cpuMs: r.cpu_ms, firstBatch: r.first_batch_tokens };
}

/** The installed package's version, read off its folder (its exports map hides package.json). */
function transformersVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@huggingface/transformers');
  let dir = path.dirname(entry);
  while (!fs.existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

const median = (xs: readonly number[]): number => percentile(xs, 50);

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const serving = servingDefaults(f);
  const models = f.list('models', MODEL_NAMES);
  const concurrency = f.num('concurrency', 8);
  // 256 prompts (32 generate calls): at 64 the small model's served window was ~0.6 s
  const requests = f.sized('requests', 256, 16);
  const maxTokens = f.num('max-tokens', 128);
  const warmup = f.sized('warmup', 32 * concurrency, 2 * concurrency);
  const rounds = f.sized('rounds', 2, 1);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be an integer ≥ 1, got ${rounds}`);
  if (requests % concurrency !== 0)
    throw new Error(`--requests (${requests}) must be a multiple of --concurrency (${concurrency}): transformers.js generates whole batches`);
  // The server's models[].intraOpNumThreads: 1 by default (the model leaves a core to the entry); 2 is one model on both cores, as transformers.js runs.
  const intraOp = f.num('intra-op-threads', 1);
  if (!Number.isInteger(intraOp) || intraOp < 1) throw new Error(`--intra-op-threads must be an integer ≥ 1, got ${intraOp}`);
  const set = await loadRunnerSet(f.str('runners'), intraOp);
  if (set.kind !== 'bundled') {
    await set.close();
    throw new Error('transformers-js needs the bundled ONNX models (examples/models/*/onnx/model.onnx): transformers.js cannot run a simulated runner');
  }
  const placement = serving.placement;
  const resolved = resolvedPlacement(placement, set);
  // The same token ids on both sides: the server renders benchPrompt(i) with the chat template, so does this.
  const encode = (i: number) => set.tokenizer.encodeChat([{ role: 'user', content: benchPrompt(i) }]);
  const prompts = Array.from({ length: requests }, (_, i) => encode(i));
  // transformers.js' warm-up: two batches of the load generator's warm-up prompts (its graph is built and the first runs are slow).
  const warmPrompts = Array.from({ length: 2 * concurrency }, (_, k) => encode(-(k + 1)));
  const total = models.length * rounds * 2;
  let done = 0;
  const rows: Row[] = [];
  const roundRows: Row[] = [];
  const perModel: Record<string, unknown>[] = [];
  try {
    for (const model of models) {
      const pad = set.runners.get(model)?.info;
      if (!pad) throw new Error(`no runner "${model}" (have ${[...set.runners.keys()].join(', ')})`);
      const tjs: GenerateRun[] = [];
      const served: {
        tokS: number;
        outputTokens: number;
        wallMs: number;
        serverCpuMs: number;
        clientCpuMs: number | null;
        entryMainMs: number | null;
        engineCpuMs: number | null;
      }[] = [];
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? ['transformers.js', 'served'] : ['served', 'transformers.js'];
        for (const side of order) {
          if (side === 'transformers.js') {
            tjs.push(await runGenerate(model, { warmup: warmPrompts, prompts, batch: concurrency, maxTokens, padTokenId: 0 }));
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
              ignoreEos: true,
            });
            const m = s.run.metrics;
            if (m.failed > 0) throw new Error(`served ${model}: ${m.failed} of ${requests} requests failed: ${s.run.firstError}`);
            served.push({
              tokS: m.outputThroughputTokS,
              outputTokens: m.totalOutputTokens,
              wallMs: m.durationMs,
              serverCpuMs: s.cpu.serverMs,
              clientCpuMs: s.cpu.clientMs,
              entryMainMs: s.cpu.entryMainMs,
              engineCpuMs: s.lanes.find((l) => l.name === model)?.thread?.cpuMs ?? null,
            });
          }
          progress(`transformers-js ${model} round ${r + 1} ${side}`, ++done, total);
        }
        roundRows.push({
          model,
          round: r + 1,
          first: order[0],
          transformers_js_tok_s: tjs[r].tokS,
          served_tok_s: served[r].tokS,
          ratio: served[r].tokS / tjs[r].tokS,
          transformers_js_tokens: tjs[r].outputTokens,
          served_tokens: served[r].outputTokens,
        });
      }
      const tjsTok = median(tjs.map((t) => t.tokS));
      const srvTok = median(served.map((s) => s.tokS));
      const ratio = srvTok / tjsTok;
      const figures = {
        transformers_js_tok_s: tjsTok,
        served_tok_s: srvTok,
        ratio,
        transformers_js_cpu_us_per_token: median(tjs.map((t) => (t.cpuMs * 1000) / t.outputTokens)),
        transformers_js_cpu_cores: median(tjs.map((t) => t.cpuMs / t.wallMs)),
        served_server_cpu_us_per_token: median(served.map((s) => (s.serverCpuMs * 1000) / s.outputTokens)),
        served_client_cpu_us_per_token: served.every((s) => s.clientCpuMs !== null)
          ? median(served.map((s) => (s.clientCpuMs! * 1000) / s.outputTokens))
          : null,
        served_server_cpu_cores: median(served.map((s) => s.serverCpuMs / s.wallMs)),
        // where the server's CPU goes: its engine thread (the model's one ORT thread and the engine) and the entry's main thread
        served_engine_thread_cores: served.every((s) => s.engineCpuMs !== null) ? median(served.map((s) => s.engineCpuMs! / s.wallMs)) : null,
        served_engine_thread_us_per_token: served.every((s) => s.engineCpuMs !== null)
          ? median(served.map((s) => (s.engineCpuMs! * 1000) / s.outputTokens))
          : null,
        served_entry_main_us_per_token: served.every((s) => s.entryMainMs !== null)
          ? median(served.map((s) => (s.entryMainMs! * 1000) / s.outputTokens))
          : null,
      };
      perModel.push({
        model,
        ...figures,
        rounds: tjs.map((t, r) => ({
          transformers_js: { tok_s: t.tokS, output_tokens: t.outputTokens, wall_ms: t.wallMs, cpu_ms: t.cpuMs },
          served: served[r],
        })),
      });
      rows.push({
        model,
        ...figures,
        served_client_cpu_us_per_token: figures.served_client_cpu_us_per_token ?? '-',
        served_engine_thread_cores: figures.served_engine_thread_cores ?? '-',
        served_engine_thread_us_per_token: figures.served_engine_thread_us_per_token ?? '-',
        served_entry_main_us_per_token: figures.served_entry_main_us_per_token ?? '-',
        target: ratio > 1 ? 'met' : 'missed',
      });
    }
  } finally {
    await set.close();
  }
  printTable(roundRows);
  console.log('');
  printTable(rows);
  console.log(
    `served ÷ transformers.js (medians of ${rounds} rounds), target > 1 for each model: ${rows.map((r) => `${r.model} ${(r.ratio as number).toFixed(2)}×`).join(', ')}`,
  );
  const settings = {
    models,
    requests_per_run: requests,
    rounds: `${rounds} (the two sides alternate, the first swapped every round; figures are medians over rounds)`,
    max_tokens: maxTokens,
    prompt: 'chat of a validation word problem (benchPrompt(i), i = 0 … requests−1) rendered by the server’s chat template; the same token ids on both sides',
    transformers_js: {
      package: `@huggingface/transformers ${transformersVersion()}`,
      call: `AutoModelForCausalLM.from_pretrained(<bundled folder>, { dtype: 'fp32', device: 'cpu' }) (its defaults otherwise: ONNX Runtime's own thread count); generate({ input_ids, attention_mask, max_new_tokens: ${maxTokens}, min_new_tokens: ${maxTokens}, do_sample: false }) on ${concurrency} left-padded prompts per call, one call after another`,
      warmup: `${2 * concurrency} prompts (2 calls), untimed`,
      process: 'a child process (its own ONNX Runtime); tok_s = generated tokens ÷ wall time of the timed calls; cpu from process.cpuUsage (all its threads)',
    },
    served: {
      server: 'runServingCase: a fresh TokenRouterService + HTTP server per run, one lane, algorithm = the bare model name (singleModel at /v1)',
      mode: 'async-delayed, retainState true, thresholds 1 (the server’s defaults)',
      concurrency,
      intra_op_threads: intraOp,
      warmup_requests: warmup,
      eos: 'ignore_eos: every request runs to max_tokens, as min_new_tokens = max_new_tokens does on the other side',
      ...servingSettings({ ...serving, placement }),
      placement: `${placement}${placement === 'auto' ? ` (resolved: ${resolved})` : ''}`,
      tok_s: 'Σ committed output tokens / wall time first dispatch → last completion, streamed over HTTP to a load generator in a child process',
      cpu: "served_server_cpu_us_per_token: this process (entry, engine and model threads) ÷ tokens; served_client_cpu_us_per_token: the load generator’s process; served_engine_thread_*: the model's engine thread (thread placement: its ORT session runs there, one intra-op thread by default), its /proc/thread-self/stat CPU ÷ wall (cores busy) and ÷ tokens; served_entry_main_us_per_token: the entry's main thread (/proc/self/task/<pid>/stat) ÷ tokens",
    },
    target: 'served_tok_s > transformers_js_tok_s for each model (issue 31)',
    quick: f.quick,
    ...set.description,
  };
  return {
    suite: 'transformers-js',
    settings,
    results: { models: perModel },
    output: {
      tables: { 'Served vs transformers.js (medians)': rows, 'Every round': roundRows },
      charts: {
        'transformers-js': barChart({
          title: `Output throughput: transformers.js batched generate (batch ${concurrency}) vs served at concurrency ${concurrency}, ${maxTokens} tokens a request`,
          yLabel: 'tok/s',
          categories: models,
          series: [
            { name: 'transformers.js', values: rows.map((r) => r.transformers_js_tok_s as number) },
            { name: 'served', values: rows.map((r) => r.served_tok_s as number) },
          ],
        }),
      },
    },
  };
}
