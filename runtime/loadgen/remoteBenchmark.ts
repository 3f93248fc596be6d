// Runs the load generator in a child process, so the client's work never shares the server's event loop.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { monotonicOriginMs } from '../util/monotonicOrigin.ts';
import { runTsChild } from '../util/tsChild.ts';
import type { ServingLoad, ServingRun } from './benchmarkServing.ts';
import type { Slo } from './goodput.ts';
import { servingMetrics, type RequestRecord } from './requestMetrics.ts';

/** The load as a child process can take it: no prompt closure or progress callback; the prompts by workload name. */
export type RemoteLoad = Pick<
  ServingLoad,
  'baseUrl' | 'model' | 'concurrency' | 'requests' | 'warmup' | 'maxTokens' | 'ignoreEos' | 'requestRate' | 'burstiness' | 'seed' | 'slo' | 'latencyFrom'
> & {
  /** The bundled task (default), or its few-shot two-turn chats (fewShotChat). */
  workload?: 'task' | 'few-shot-chat';
};

const CLI = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cli.ts');

/** The SLO as cli.ts's --goodput value. */
function goodputArg(slo: Slo): string {
  const pairs: [string, number | undefined][] = [
    ['ttft', slo.ttftMs],
    ['tpot', slo.tpotMs],
    ['e2el', slo.e2elMs],
  ];
  return pairs.flatMap(([name, ms]) => (ms === undefined ? [] : [`${name}:${ms}`])).join(' ');
}

/** The optional arrival and SLO flags, only those set, so a plain load's command line is what it always was. */
function openLoopArgs(load: RemoteLoad): string[] {
  const args: string[] = [];
  if (load.requestRate !== undefined) args.push('--request-rate', load.requestRate === Infinity ? 'inf' : String(load.requestRate));
  if (load.burstiness !== undefined) args.push('--burstiness', String(load.burstiness));
  if (load.seed !== undefined) args.push('--seed', String(load.seed));
  if (load.slo !== undefined) args.push('--goodput', goodputArg(load.slo));
  if (load.latencyFrom !== undefined) args.push('--latency-from', load.latencyFrom);
  if (load.workload !== undefined) args.push('--workload', load.workload);
  return args;
}

/** Prompts are the bundled task's (benchPrompt, or fewShotChat by workload): a child process cannot take a closure. */
export async function benchmarkServingInChild(load: RemoteLoad): Promise<ServingRun> {
  const args = [
    '--url',
    load.baseUrl,
    '--model',
    load.model,
    '--concurrency',
    String(load.concurrency),
    '--requests',
    String(load.requests),
    '--warmup',
    String(load.warmup),
    '--max-tokens',
    String(load.maxTokens),
    '--ignore-eos',
    String(load.ignoreEos === true),
    '--records',
    'true',
    '--quiet',
    'true',
    ...openLoopArgs(load),
  ];
  const parsed = await runTsChild<{
    records: RequestRecord[];
    scheduled_ms?: number[];
    monotonic_origin_ms: number;
    tokens_by_model: Record<string, number>;
    handoffs: number;
    discarded_tokens: number;
    first_error: string | null;
    cpu_ms: number | null;
  }>(CLI, args, { what: 'load generator' });
  // The child's clock starts where it started: its times move onto this process's, so a record joins the server's events.
  const shift = parsed.monotonic_origin_ms - monotonicOriginMs();
  const records = parsed.records.map((r) => ({
    ...r,
    sendMs: r.sendMs + shift,
    ...(r.arrivalMs === undefined ? {} : { arrivalMs: r.arrivalMs + shift }),
    contentChunkMs: r.contentChunkMs.map((t) => t + shift),
    endMs: r.endMs + shift,
  }));
  // Recomputed here from the raw records, so both client placements share one metric code path.
  return {
    metrics: servingMetrics(records, undefined, load.slo),
    records,
    scheduledMs: parsed.scheduled_ms?.map((t) => t + shift),
    tokensByModel: parsed.tokens_by_model,
    handoffs: parsed.handoffs,
    discardedTokens: parsed.discarded_tokens,
    firstError: parsed.first_error ?? undefined,
    clientCpuMs: parsed.cpu_ms ?? undefined,
  };
}
