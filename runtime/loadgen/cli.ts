// `npx tsx runtime/loadgen/cli.ts --url URL --model NAME ...`: the load generator as its own process, against any server.
import { monotonicOriginMs } from '../util/monotonicOrigin.ts';
import { writeFileSync } from 'node:fs';
import { benchmarkServing, type ServingRun } from './benchmarkServing.ts';
import { benchPrompt, fewShotChat } from './benchPrompt.ts';
import { parseGoodput } from './goodput.ts';
import { TokenRouterError } from '../errors.ts';
import { boolFlag, intFlag, parseFlags, positiveFlag, requestRateFlag } from '../util/cliFlags.ts';
import { ProgressLine } from '../util/progressLine.ts';

const USAGE = `usage: tokenrouter bench serve --url http://127.0.0.1:8080 --model r2r [--max-concurrency 4] [--requests 64]
       [--request-rate inf] [--burstiness 1] [--seed 0] [--goodput "ttft:MS tpot:MS e2el:MS"] [--latency-from arrival]
       [--warmup 8] [--max-tokens 128] [--ignore-eos true] [--workload task|few-shot-chat] [--json FILE] [--records true] [--quiet true]
Streams chat completions (vLLM benchmark_serving style): --request-rate R sends the measured requests
as Poisson arrivals at R req/s (gamma gaps with --burstiness k; inf, the default: all at once), never
more than --max-concurrency (alias --concurrency) in flight. In the open loop TTFT and E2E count from
each request's scheduled arrival (--latency-from arrival, the default), so the wait for a permit the
offered rate causes is in them; --latency-from send counts from the send, as vLLM does. Prints TTFT, TPOT, ITL, E2E (mean,
median, p99), output and request throughput, and with --goodput the requests per second that met
every given bound (pairs separated by spaces or commas, ms). --workload few-shot-chat sends the bundled
task behind a three-example preamble as two-turn chats (the prefix cache's workload); task (default): one question each.`;

const OPTIONS = {
  url: { type: 'string' },
  model: { type: 'string' },
  concurrency: { type: 'string' },
  'max-concurrency': { type: 'string' },
  'request-rate': { type: 'string' },
  burstiness: { type: 'string' },
  seed: { type: 'string' },
  goodput: { type: 'string' },
  'latency-from': { type: 'string' },
  requests: { type: 'string' },
  warmup: { type: 'string' },
  'max-tokens': { type: 'string' },
  'ignore-eos': { type: 'string' },
  workload: { type: 'string' },
  json: { type: 'string' },
  records: { type: 'string' },
  quiet: { type: 'string' },
} as const;

/** The arrival process as JSON, which has no Infinity. */
export interface LoadSettings {
  request_rate: number | 'inf';
  latency_from: 'arrival' | 'send';
  burstiness: number;
  max_concurrency: number;
  seed: number;
}

/** The run as JSON; per-request records (and the schedule) only when asked (they are large). */
function runToJson(run: ServingRun, withRecords: boolean, load: LoadSettings): Record<string, unknown> {
  return {
    load,
    metrics: run.metrics,
    tokens_by_model: run.tokensByModel,
    handoffs: run.handoffs,
    discarded_tokens: run.discardedTokens,
    first_error: run.firstError ?? null,
    cpu_ms: run.clientCpuMs ?? null,
    records: withRecords ? run.records : undefined,
    scheduled_ms: withRecords ? run.scheduledMs : undefined,
    monotonic_origin_ms: monotonicOriginMs(),
  };
}

/** --max-concurrency, or its older name --concurrency; both at once would be ambiguous. */
function capFlag(f: { concurrency?: string; 'max-concurrency'?: string }): number {
  if (f.concurrency !== undefined && f['max-concurrency'] !== undefined)
    throw new TokenRouterError('invalid_request', '--max-concurrency and --concurrency are one setting: give only one', 'max-concurrency');
  return f['max-concurrency'] !== undefined
    ? intFlag('max-concurrency', f['max-concurrency'], 1, 100_000, 4)
    : intFlag('concurrency', f.concurrency, 1, 100_000, 4);
}

export async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.length === 0) {
    console.log(USAGE);
    return argv.length === 0 ? 2 : 0;
  }
  const { values: f } = parseFlags({ args: argv, options: OPTIONS });
  if (!f.url || !f.model) throw new TokenRouterError('invalid_request', '--url and --model are required (--help for the flags)', f.url ? 'model' : 'url');
  const concurrency = capFlag(f);
  const requestRate = requestRateFlag(f['request-rate']);
  const burstiness = positiveFlag('burstiness', f.burstiness, 1);
  const seed = intFlag('seed', f.seed, 0, 2 ** 32 - 1, 0);
  const slo = f.goodput === undefined ? undefined : parseGoodput(f.goodput);
  const latencyFrom = f['latency-from'] ?? 'arrival';
  if (latencyFrom !== 'arrival' && latencyFrom !== 'send')
    throw new TokenRouterError('invalid_request', `--latency-from must be arrival or send, got "${latencyFrom}"`, 'latency-from');
  const workload = f.workload ?? 'task';
  if (workload !== 'task' && workload !== 'few-shot-chat')
    throw new TokenRouterError('invalid_request', `--workload must be task or few-shot-chat, got "${workload}"`, 'workload');
  const quiet = boolFlag('quiet', f.quiet, false);
  const records = boolFlag('records', f.records, false);
  const progress = new ProgressLine();
  const cpu0 = process.cpuUsage();
  const run = await benchmarkServing({
    baseUrl: f.url,
    model: f.model,
    concurrency,
    requestRate,
    burstiness,
    seed,
    slo,
    latencyFrom,
    // 0: a warm-up pass only (the bench harness runs one before it measures)
    requests: intFlag('requests', f.requests, 0, 10_000_000, 64),
    warmup: intFlag('warmup', f.warmup, 0, 10_000_000, concurrency * 2),
    maxTokens: intFlag('max-tokens', f['max-tokens'], 1, 1_000_000, 128),
    ignoreEos: boolFlag('ignore-eos', f['ignore-eos'], false),
    prompt: benchPrompt,
    ...(workload === 'few-shot-chat' ? { messages: fewShotChat } : {}),
    onProgress: quiet ? undefined : (d, t) => progress.update(`${d}/${t} requests`, d, t),
  });
  progress.end();
  const cpu = process.cpuUsage(cpu0);
  run.clientCpuMs = (cpu.user + cpu.system) / 1000;
  const out = runToJson(run, records, {
    request_rate: requestRate === Infinity ? 'inf' : requestRate,
    latency_from: latencyFrom,
    burstiness,
    max_concurrency: concurrency,
    seed,
  });
  // `--json -` is stdout, not a file named `-`
  if (f.json && f.json !== '-') writeFileSync(f.json, JSON.stringify(out));
  // Waits for the write: a pipe is asynchronous, and process.exit would cut a large run's records short.
  if (f.json === '-' || records)
    await new Promise<void>((resolve, reject) => process.stdout.write(JSON.stringify(out) + '\n', (e) => (e ? reject(e) : resolve())));
  else {
    const m = run.metrics;
    const line = (name: string, s: { mean: number; median: number; p99: number }) =>
      console.log(`${name.padEnd(6)} mean ${s.mean.toFixed(2)}  median ${s.median.toFixed(2)}  p99 ${s.p99.toFixed(2)} ms`);
    console.log(`completed ${m.completed}, failed ${m.failed}, duration ${(m.durationMs / 1000).toFixed(2)} s`);
    console.log(
      `output throughput ${m.outputThroughputTokS.toFixed(1)} tok/s (${m.totalOutputTokens} committed tokens), request throughput ${m.requestThroughputRps.toFixed(2)} req/s`,
    );
    if (m.goodputReqS !== undefined) console.log(`goodput ${m.goodputReqS.toFixed(2)} req/s (${m.sloMet} of ${m.completed} completed met ${f.goodput})`);
    if (requestRate !== Infinity) line('QUEUE', m.queueMs);
    line('TTFT', m.ttftMs);
    line('TPOT', m.tpotMs);
    line('ITL', m.itlMs);
    line('E2E', m.e2eMs);
  }
  return run.metrics.failed > 0 && run.metrics.completed === 0 ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      console.error(e instanceof Error ? e.message : e);
      process.exit(2);
    },
  );
}
