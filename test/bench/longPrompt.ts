// Suite long-prompt: decode streams running on a real-shaped pair while long prompts arrive at the large model; chunked prefill on and off, peak RSS against the budget.
import http from 'node:http';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';
import { streamCompletion } from '../../runtime/loadgen/streamCompletion.ts';
import type { RequestRecord } from '../../runtime/loadgen/requestMetrics.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { percentile } from '../../runtime/util/stats.ts';
import { progress } from '../../runtime/util/progressLine.ts';
import { printTable, type Row } from '../../runtime/util/table.ts';
import type { BenchOptions, SuiteRun } from './benchSuite.ts';
import { startServerProcess, withRssPeak } from './serverProcess.ts';
import { SuiteFlags } from './suiteFlags.ts';

const CHECKOUT = new URL('../..', import.meta.url).pathname;

/** About `target` tokens of prose opening with `opening` (so no two prompts share a prefix past the template). */
function prose(tokenizer: TextTokenizer, target: number, opening: string): string {
  const rest = [
    'The river bends twice before it reaches the mill.',
    'In spring the orchard fills with bees.',
    'A letter from the city asked how many barrels the farm could send.',
  ];
  let text = opening;
  for (let i = 0; tokenizer.encodeChat([{ role: 'user', content: text }]).length < target; i++) text += ` ${rest[i % rest.length]}`;
  return text;
}

/** Gaps between a stream's content chunks that end inside [from, to). */
function gapsIn(records: readonly RequestRecord[], from: number, to: number): number[] {
  const out: number[] = [];
  for (const r of records)
    for (let i = 1; i < r.contentChunkMs.length; i++)
      if (r.contentChunkMs[i] >= from && r.contentChunkMs[i] < to) out.push(r.contentChunkMs[i] - r.contentChunkMs[i - 1]);
  return out;
}

export async function run(opts: BenchOptions): Promise<SuiteRun> {
  const f = new SuiteFlags(opts.flags);
  const [small, large] = f.list('models', ['qwen3-42m', 'qwen3-141m']);
  const streams = f.num('concurrency', 8);
  const longCount = f.num('requests', 4);
  const longTokens = f.num('prompt', 1542);
  const budgets = f.nums('levels', [3072, 6144]);
  const stepTokens = f.nums('tokens', [256, 2048]);
  const settleMs = f.num('settle-ms', 3000);
  const dirs = { [small]: realShapeFolder(small).dir, [large]: realShapeFolder(large).dir };
  const tokenizer = TextTokenizer.fromFolder(loadModelFolder(dirs[large]));
  const rows: Row[] = [];
  const runs: Record<string, unknown>[] = [];
  const total = budgets.length * stepTokens.length;
  let done = 0;
  for (const budgetMiB of budgets) {
    for (const maxStepTokens of stepTokens) {
      const server = await startServerProcess(CHECKOUT, {
        models: [small, large].map((name) => ({ name, path: dirs[name], maxBatch: 16, maxStepTokens })),
        memory: { budgetMiB },
        limits: { maxTokens: 4096, maxConcurrency: 64, maxQueue: 256 },
      });
      const agent = new http.Agent({ keepAlive: true, maxSockets: streams + longCount + 2 });
      try {
        // untimed: a short request on each model, and one long prompt on the large (first-use costs)
        for (const m of [small, large])
          await streamCompletion(server.url, { model: m, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0 }, agent);
        await streamCompletion(
          server.url,
          {
            model: large,
            messages: [{ role: 'user', content: prose(tokenizer, longTokens, 'Warm-up: the ferry leaves at dawn.') }],
            max_tokens: 2,
            temperature: 0,
          },
          agent,
        );
        const lone = await streamCompletion(
          server.url,
          {
            model: large,
            messages: [{ role: 'user', content: prose(tokenizer, longTokens, 'Alone: the lighthouse keeper wrote every night.') }],
            max_tokens: 2,
            temperature: 0,
          },
          agent,
        );
        const loneTtft = lone.contentChunkMs[0] - lone.sendMs;
        const { value, peakMiB } = await withRssPeak(server, async () => {
          const t0 = performance.now();
          const running = Array.from({ length: streams }, (_, i) =>
            streamCompletion(
              server.url,
              {
                model: i % 2 === 0 ? small : large,
                messages: [{ role: 'user', content: `Story ${i}: tell me about the harbour.` }],
                max_tokens: 4000,
                temperature: 0,
                ignore_eos: true,
              },
              agent,
            ),
          );
          // before: the streams alone for settleMs; during: the long prompts, all at once
          await new Promise((r) => setTimeout(r, settleMs));
          const tLong = performance.now();
          const longs = await Promise.all(
            Array.from({ length: longCount }, (_, k) =>
              streamCompletion(
                server.url,
                {
                  model: large,
                  messages: [{ role: 'user', content: prose(tokenizer, longTokens, `Prompt ${k}: the baker counted loaves at ${k + 4} o'clock.`) }],
                  max_tokens: 8,
                  temperature: 0,
                },
                agent,
              ),
            ),
          );
          const tEnd = performance.now();
          agent.destroy(); // ends the endless streams
          const streamed = await Promise.all(running);
          return { t0, tLong, tEnd, longs, streamed };
        });
        const failed = value.longs.find((r) => !r.ok);
        if (failed) throw new Error(`a long prompt failed: ${failed.error}`);
        const byModel = (m: string) => value.streamed.filter((_, i) => (i % 2 === 0 ? small : large) === m);
        const longTtfts = value.longs.map((r) => r.contentChunkMs[0] - r.sendMs).sort((a, b) => a - b);
        for (const m of [small, large]) {
          const before = gapsIn(byModel(m), value.t0 + 500, value.tLong);
          const during = gapsIn(byModel(m), value.tLong, value.tEnd);
          const p99b = percentile(before, 99);
          const p99d = percentile(during, 99);
          rows.push({
            budget_mib: budgetMiB,
            max_step_tokens: maxStepTokens,
            model: m,
            itl_p50_before_ms: percentile(before, 50),
            itl_p99_before_ms: p99b,
            itl_p50_during_ms: percentile(during, 50),
            itl_p99_during_ms: p99d,
            p99_ratio: p99d / p99b,
            fourth_ttft_ms: longTtfts[longTtfts.length - 1],
            lone_ttft_ms: loneTtft,
            fourth_vs_lone: longTtfts[longTtfts.length - 1] / loneTtft,
            peak_rss_mib: peakMiB,
            under_budget: peakMiB <= budgetMiB ? 'yes' : 'NO',
          });
        }
        runs.push({
          budget_mib: budgetMiB,
          max_step_tokens: maxStepTokens,
          lone_ttft_ms: loneTtft,
          long_ttfts_ms: longTtfts,
          peak_rss_mib: peakMiB,
          process_peak_mib: server.memory().hwmMiB,
        });
      } finally {
        agent.destroy();
        await server.stop();
      }
      progress(`long-prompt budget ${budgetMiB} MiB, maxStepTokens ${maxStepTokens}`, ++done, total);
    }
  }
  printTable(rows);
  return {
    suite: 'long-prompt',
    settings: {
      models: { small, large },
      fixtures: 'test/support/realShape (Qwen3 architecture, vocabulary 151,936, seeded weights)',
      streams: `${streams} decode streams (alternating small and large, greedy, ignore_eos) started ${settleMs} ms before the long prompts`,
      long_prompts: `${longCount} prompts of ~${longTokens} tokens to the large at once, max_tokens 8; the lone TTFT is one such prompt on the idle server`,
      itl: "gaps between content chunks of the running streams: before = from 0.5 s after their start to the long prompts; during = from the long prompts to the last one's end",
      budgets_mib: budgets,
      max_step_tokens: `${stepTokens.join(', ')} (2,048: each long prompt in one step, as without chunked prefill)`,
      rss: "the server process's VmRSS sampled every 25 ms from /proc over the measured part",
      quick: f.quick,
    },
    results: { runs, rows },
    output: { tables: { 'Streams while long prompts arrive': rows } },
  };
}
