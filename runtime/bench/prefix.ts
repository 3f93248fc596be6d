// Suite prefix: few-shot chats over HTTP with the prefix cache on and off side by side, and what a KV copy costs per token against a prefill.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseServerConfig } from '../config/serverConfig.ts';
import type { LaneStats } from '../engine/laneStats.ts';
import { benchmarkServing, type ServingRun } from '../loadgen/benchmarkServing.ts';
import { benchPrompt, FEW_SHOT, fewShotChat } from '../loadgen/benchPrompt.ts';
import { GREEDY } from '../runner/modelRunner.ts';
import { OnnxRunner } from '../runner/onnxRunner.ts';
import { BUNDLED_MODELS_DIR } from '../runner/onnxAccuracy.ts';
import { startServer } from '../server/createServer.ts';
import { TokenRouterService } from '../serve/tokenRouterService.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';
import { progress, type BenchOptions, type SuiteRun } from './benchSuite.ts';
import { loadRunnerSet, type RunnerSet } from './benchRunners.ts';
import { ALGORITHM_LANES } from './serving.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { printTable, type Row } from './table.ts';

interface Settings {
  algorithm: string;
  concurrency: number;
  requests: number;
  warmup: number;
  maxTokens: number;
  repeats: number;
}

interface Figures {
  ttftMs: number;
  tokS: number;
  queries: number;
  hits: number;
}

/** One server with the prefix cache `on` or off, driven through the few-shot chat workload. */
async function runOnce(set: RunnerSet, s: Settings, on: boolean): Promise<Figures> {
  const lanes = ALGORITHM_LANES[s.algorithm] ?? { [s.algorithm]: s.algorithm };
  const config = parseServerConfig({
    port: 0,
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-prefix-')),
    models: Object.keys(lanes).map((name) => ({ name, maxBatch: 32 })),
    memory: { budgetMiB: 1024 },
    scheduling: { prefixCache: on },
    limits: { maxConcurrency: s.concurrency, maxQueue: 100_000, maxTokens: s.maxTokens },
    defaultAlgorithm: s.algorithm,
  });
  const runners = new Map(Object.entries(lanes).map(([lane, model]) => [lane, set.runners.get(model)!]));
  const service = await TokenRouterService.start(config, { runners, tokenizer: set.tokenizer });
  const server = await startServer(service, 0, '127.0.0.1');
  try {
    const load = { baseUrl: server.url, model: s.algorithm, concurrency: s.concurrency, maxTokens: s.maxTokens, ignoreEos: true, prompt: benchPrompt, messages: fewShotChat };
    // the warm-up's chats are their own: the measured run starts with an empty cache of its questions, not of the preamble
    if (s.warmup > 0) await benchmarkServing({ ...load, requests: 0, warmup: s.warmup });
    const before = service.cluster.laneStats();
    const run: ServingRun = await benchmarkServing({ ...load, requests: s.requests, warmup: 0 });
    if (run.metrics.failed > 0) throw new Error(`prefix ${on ? 'on' : 'off'}: ${run.metrics.failed} of ${s.requests} requests failed: ${run.firstError}`);
    const delta = (pick: (l: LaneStats) => number) => service.cluster.laneStats().reduce((a, l, i) => a + pick(l) - pick(before[i]), 0);
    return { ttftMs: run.metrics.ttftMs.mean, tokS: run.metrics.outputThroughputTokS, queries: delta((l) => l.prefixQueries), hits: delta((l) => l.prefixHits) };
  } finally {
    await server.close();
    await service.close();
  }
}

/** µs per token: a fork copying `tokens` of KV, and a prefill of them, on one in-process runner (median of repeats). */
async function copyVersusPrefill(model: string, tokens: readonly number[], reps: number): Promise<{ fork: number; prefill: number }> {
  const runner = await OnnxRunner.load(path.join(BUNDLED_MODELS_DIR, model));
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const row = (cacheId: number) => ({ cacheId, requestId: `p${cacheId}`, tokens, position: 0, sampling: GREEDY, wants: NO_WANTS });
  try {
    const prefill: number[] = [];
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now();
      await runner.step([row(1)]);
      prefill.push(performance.now() - t0);
    }
    const fork: number[] = [];
    for (let r = 0; r < reps * 10; r++) {
      const t0 = performance.now();
      runner.fork(1, 2, tokens.length);
      fork.push(performance.now() - t0);
      runner.release(2);
    }
    return { fork: (median(fork) * 1000) / tokens.length, prefill: (median(prefill) * 1000) / tokens.length };
  } finally {
    await runner.close();
  }
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const s: Settings = {
    algorithm: f.str('algorithm', 'r2r'),
    concurrency: f.num('concurrency', 8),
    requests: f.sized('requests', 64, 16),
    warmup: f.sized('warmup', 16, 4),
    maxTokens: f.num('max-tokens', 32),
    repeats: f.sized('repeats', 2, 1),
  };
  const set = await loadRunnerSet(f.str('runners'));
  const on: Figures[] = [];
  const off: Figures[] = [];
  try {
    // off and on alternate, so drift on a shared machine falls on both
    for (let r = 0; r < s.repeats; r++) {
      off.push(await runOnce(set, s, false));
      progress('prefix off/on', 2 * r + 1, 2 * s.repeats);
      on.push(await runOnce(set, s, true));
      progress('prefix off/on', 2 * r + 2, 2 * s.repeats);
    }
  } finally {
    await set.close();
  }
  const mean = (xs: Figures[], k: keyof Figures) => xs.reduce((a, x) => a + x[k], 0) / xs.length;
  const sum = (xs: Figures[], k: keyof Figures) => xs.reduce((a, x) => a + x[k], 0);
  const preamble = set.tokenizer.encodeChat(FEW_SHOT, false);
  const cost = set.kind === 'bundled' ? await Promise.all(['small', 'large'].map(async (m) => ({ model: m, ...(await copyVersusPrefill(m, preamble, f.sized('cost-reps', 20, 5))) }))) : [];
  const results = {
    ttft_ms_on: mean(on, 'ttftMs'),
    ttft_ms_off: mean(off, 'ttftMs'),
    tok_s_on: mean(on, 'tokS'),
    tok_s_off: mean(off, 'tokS'),
    hit_rate: sum(on, 'hits') / sum(on, 'queries'),
    ttft_improvement: mean(off, 'ttftMs') / mean(on, 'ttftMs'),
    throughput_gain: mean(on, 'tokS') / mean(off, 'tokS'),
    kv_copy_vs_prefill_us_per_token: Object.fromEntries(cost.map((c) => [c.model, { fork: c.fork, prefill: c.prefill }])),
  };
  const rows: Row[] = [
    { prefix_cache: 'off', mean_ttft_ms: results.ttft_ms_off, tok_s: results.tok_s_off, hit_rate: sum(off, 'queries') ? sum(off, 'hits') / sum(off, 'queries') : 0 },
    { prefix_cache: 'on', mean_ttft_ms: results.ttft_ms_on, tok_s: results.tok_s_on, hit_rate: results.hit_rate },
  ];
  const costRows: Row[] = cost.map((c) => ({ model: c.model, tokens: preamble.length, fork_us_per_token: c.fork, prefill_us_per_token: c.prefill, prefill_over_fork: c.prefill / c.fork }));
  printTable(rows);
  if (costRows.length) printTable(costRows);
  const settings = {
    runners: set.description,
    algorithm: s.algorithm,
    concurrency: s.concurrency,
    requests_per_run: s.requests,
    warmup_requests: s.warmup,
    repeats: `${s.repeats} (off and on alternate; figures are means over repeats)`,
    max_tokens: `${s.maxTokens}, ignore_eos (every request runs to max_tokens)`,
    workload: `few-shot chats: ${preamble.length}-token preamble of 3 worked examples, then two turns per chat (the second resends the first question and its answer); prompts ${set.tokenizer.encodeChat(fewShotChat(0)).length}-${set.tokenizer.encodeChat(fewShotChat(1)).length} tokens`,
    scheduling: 'async-delayed, retainState true, thresholds 1 (the config defaults); prefix cache off vs on',
    hit_rate: 'prefix cache hits / queries in tokens over every model of the on runs (vLLM: context tokens at admission)',
  };
  return { suite: 'prefix', settings, results, output: { tables: { prefix: rows, kv_copy_vs_prefill: costRows } } };
}
