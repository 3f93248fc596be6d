// Suite real-shape: Qwen3-shaped fixtures at the real vocabulary, served by this checkout (and an older one) beside transformers.js.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';
import { benchmarkServing } from '../../runtime/loadgen/benchmarkServing.ts';
import { benchPrompt } from '../../runtime/loadgen/benchPrompt.ts';
import { streamCompletion } from '../../runtime/loadgen/streamCompletion.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { percentile } from '../../runtime/util/stats.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { startServerProcess, withRssPeak, type ServerProcess } from './serverProcess.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { runGenerate } from './transformersJs.ts';

const THIS_CHECKOUT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

/** About `target` tokens of plain prose as one user message (the 1,542-token prompt). */
function longPrompt(tokenizer: TextTokenizer, target: number, opening: string): { text: string; tokens: number } {
  const sentences = [
    opening,
    'The river bends twice before it reaches the mill, and the miller counts every sack by hand.',
    'In spring the orchard fills with bees; by autumn the apples are stored in the cold cellar.',
    'A letter from the city arrived on Tuesday, asking how many barrels the farm could send.',
  ];
  let text = '';
  let tokens = 0;
  for (let i = 0; tokens < target; i++) {
    text += `${sentences[i % sentences.length]} `;
    tokens = tokenizer.encodeChat([{ role: 'user', content: `${text}Summarise.` }]).length;
  }
  return { text: `${text}Summarise.`, tokens };
}

interface Side {
  name: string;
  server: ServerProcess;
  loadPeakMiB: number;
  /** The model's RSS growth at load as the server measured it (/healthz memory; servers that report it). */
  asLoadedMiB?: number;
}

async function asLoaded(url: string, model: string): Promise<number | undefined> {
  const h = (await (await fetch(`${url}/healthz`)).json()) as { memory?: { models?: { name: string; weightBytes: number }[] } };
  const b = h.memory?.models?.find((m) => m.name === model)?.weightBytes;
  return b === undefined ? undefined : b / 2 ** 20;
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const models = f.list('models', ['qwen3-42m', 'qwen3-141m']);
  const concurrency = f.num('concurrency', 8);
  const requests = f.sized('requests', 64, 16);
  const maxTokens = f.num('max-tokens', 64);
  const rounds = f.sized('rounds', 2, 1);
  const baseline = f.str('baseline', '');
  const longTokens = f.num('prompt', 1542);
  const checkouts: [string, string][] = [['new', THIS_CHECKOUT]];
  if (baseline) checkouts.push(['old', path.resolve(baseline)]);
  const perModel: Record<string, unknown>[] = [];
  const rows: Row[] = [];
  const memRows: Row[] = [];
  for (const model of models) {
    const dir = realShapeFolder(model).dir;
    const folder = loadModelFolder(dir);
    const tokenizer = TextTokenizer.fromFolder(folder);
    const weightsMiB = fs.readdirSync(path.join(dir, 'onnx')).reduce((a, n) => a + fs.statSync(path.join(dir, 'onnx', n)).size, 0) / 2 ** 20;
    const encode = (i: number) => tokenizer.encodeChat([{ role: 'user', content: benchPrompt(i) }]);
    const prompts = Array.from({ length: requests }, (_, i) => encode(i));
    const warm = Array.from({ length: 2 * concurrency }, (_, k) => encode(-(k + 1)));
    const sides: Side[] = [];
    try {
      for (const [name, checkout] of checkouts) {
        const server = await startServerProcess(checkout, {
          models: [{ name: model, path: dir, maxBatch: concurrency }],
          memory: { budgetMiB: 16384 },
          limits: { maxTokens: 4096 },
        });
        sides.push({ name, server, loadPeakMiB: server.memory().hwmMiB, asLoadedMiB: await asLoaded(server.url, model) });
      }
      const figures: Record<string, number[]> = {};
      const add = (k: string, v: number) => (figures[k] ??= []).push(v);
      // the old checkout's top_p runs at ~10 tok/s: --baseline-top-p false leaves it out of long runs
      const oldTopP = f.bool('baseline-top-p', true);
      const cases = [
        'transformers.js',
        ...sides.flatMap((s) => (s.name === 'old' && !oldTopP ? [`${s.name} greedy`] : [`${s.name} greedy`, `${s.name} top_p`])),
      ];
      let done = 0;
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? cases : [...cases].reverse();
        for (const c of order) {
          if (c === 'transformers.js') {
            const g = await runGenerate(
              path.basename(dir),
              { warmup: warm, prompts, batch: concurrency, maxTokens, padTokenId: folder.config.padTokenId },
              path.dirname(dir),
              1,
            );
            add(c, g.tokS);
          } else {
            const [name, kind] = c.split(' ');
            const side = sides.find((s) => s.name === name)!;
            const s = await benchmarkServing({
              baseUrl: side.server.url,
              model,
              concurrency,
              requests,
              warmup: 2 * concurrency,
              maxTokens,
              prompt: benchPrompt,
              ignoreEos: true,
              ...(kind === 'top_p' ? { temperature: 0.8, topP: 0.9 } : { temperature: 0 }),
            });
            if (s.metrics.failed > 0) throw new Error(`${c} on ${model}: ${s.metrics.failed} requests failed: ${s.firstError}`);
            add(c, s.metrics.outputThroughputTokS);
          }
          progress(`real-shape ${model} round ${r + 1} ${c}`, ++done, rounds * cases.length);
        }
      }
      const med = Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, percentile(v, 50)]));
      const tjs = med['transformers.js'];
      for (const side of sides) {
        rows.push({
          model,
          checkout: side.name,
          transformers_js_tok_s: tjs,
          greedy_tok_s: med[`${side.name} greedy`],
          greedy_vs_tjs: med[`${side.name} greedy`] / tjs,
          top_p_tok_s: med[`${side.name} top_p`] ?? '-',
          top_p_vs_greedy: med[`${side.name} top_p`] ? med[`${side.name} top_p`] / med[`${side.name} greedy`] : '-',
        });
      }
      // A long prompt alone, twice (the first pays any first-use cost), each opening differently so the
      // second shares no prefix with the first: TTFT and how far the server's RSS rose.
      const openings = { cold: 'Ada kept the ledger for the valley co-operative.', warm: 'Bram drove the milk cart to the station every morning.' };
      let longTokensSent = 0;
      const agent = new http.Agent({ keepAlive: true });
      const longRuns: Record<string, unknown>[] = [];
      for (const side of sides) {
        for (const attempt of ['cold', 'warm'] as const) {
          const long = longPrompt(tokenizer, longTokens, openings[attempt]);
          longTokensSent = long.tokens;
          const { value, peakMiB, beforeMiB } = await withRssPeak(side.server, () =>
            streamCompletion(side.server.url, { model, messages: [{ role: 'user', content: long.text }], max_tokens: 4, temperature: 0 }, agent),
          );
          if (!value.ok) throw new Error(`long prompt on ${side.name}: ${value.error}`);
          const ttft = value.contentChunkMs.length > 0 ? value.contentChunkMs[0] - value.sendMs : value.endMs - value.sendMs;
          longRuns.push({ checkout: side.name, attempt, ttft_ms: ttft, rss_before_mib: beforeMiB, rss_growth_mib: peakMiB - beforeMiB });
          memRows.push({
            model,
            checkout: side.name,
            attempt,
            prompt_tokens: long.tokens,
            ttft_ms: ttft,
            rss_growth_mib: peakMiB - beforeMiB,
            weights_mib: weightsMiB,
            load_peak_mib: side.loadPeakMiB,
            as_loaded_mib: side.asLoadedMiB ?? '-',
            as_loaded_vs_weights: side.asLoadedMiB ? side.asLoadedMiB / weightsMiB : '-',
          });
        }
      }
      agent.destroy();
      perModel.push({
        model,
        dir,
        weights_mib: weightsMiB,
        medians: med,
        every_run: figures,
        long_prompt: { tokens: longTokensSent, runs: longRuns },
        load_peak_mib: Object.fromEntries(sides.map((s) => [s.name, s.loadPeakMiB])),
      });
    } finally {
      for (const s of sides) await s.server.stop();
    }
  }
  printTable(rows);
  console.log('');
  printTable(memRows);
  return {
    suite: 'real-shape',
    settings: {
      models,
      fixtures: 'test/support/realShape: seeded random weights (std 0.02), real tokenizer and chat template, Qwen3 architecture, vocabulary 151,936',
      concurrency,
      requests_per_run: requests,
      max_tokens: maxTokens,
      rounds: `${rounds} (cases alternate, order reversed every round; figures are medians)`,
      prompt: "chat benchPrompt(i) through the folder's chat template; ignore_eos",
      served:
        'a `tokenrouter serve` child process per checkout, one model, intraOpNumThreads 1, maxBatch = concurrency; load generator in this process, streamed',
      sampling: 'greedy: temperature 0; top_p: temperature 0.8, top_p 0.9',
      transformers_js: `batched generate, ${concurrency} left-padded prompts per call, intraOpNumThreads 1, min_new_tokens = max_new_tokens`,
      long_prompt: `${longTokens} tokens of prose, max_tokens 4, alone on an idle server; RSS sampled every 25 ms from /proc`,
      load_peak:
        "VmHWM of the server process right after it answers /healthz (Node, tokenizer, model, warm-up step); as_loaded: the RSS growth across the model's load as the server measured it (/healthz memory.models[].weightBytes), against the size of the onnx/ folder",
      baseline: baseline || 'none (--baseline DIR: an older checkout with node_modules)',
      quick: f.quick,
    },
    results: { models: perModel },
    output: { tables: { 'Throughput at concurrency 8 (medians)': rows, 'Long prompt and loading': memRows } },
  };
}
