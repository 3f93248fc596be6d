// `npx tsx runtime/loadgen/cli.ts --url URL --model NAME ...`: the load generator as its own process, against any server.
import { writeFileSync } from 'node:fs';
import { benchmarkServing, type ServingRun } from './benchmarkServing.ts';
import { benchPrompt } from './benchPrompt.ts';

const USAGE = `usage: tsx runtime/loadgen/cli.ts --url http://127.0.0.1:8080 --model r2r [--concurrency 4] [--requests 64]
       [--warmup 8] [--max-tokens 128] [--ignore-eos true] [--json FILE] [--records true] [--quiet true]
Streams chat completions at a fixed concurrency (vLLM benchmark_serving style) and prints TTFT, TPOT,
ITL, E2E (mean, median, p99) and committed output throughput.`;

function parse(argv: string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i];
    if (!k?.startsWith('--') || argv[i + 1] === undefined) throw new Error(`bad argument "${k}"\n${USAGE}`);
    flags[k.slice(2)] = argv[i + 1];
  }
  return flags;
}

/** The run as JSON; per-request records only when asked (they are large). */
export function runToJson(run: ServingRun, withRecords: boolean): Record<string, unknown> {
  return { metrics: run.metrics, tokens_by_model: run.tokensByModel, handoffs: run.handoffs, discarded_tokens: run.discardedTokens, first_error: run.firstError ?? null, cpu_ms: run.clientCpuMs ?? null, records: withRecords ? run.records : undefined };
}

export async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.length === 0) {
    console.log(USAGE);
    return argv.length === 0 ? 2 : 0;
  }
  const f = parse(argv);
  if (!f.url || !f.model) throw new Error(`--url and --model are required\n${USAGE}`);
  const num = (k: string, d: number) => (f[k] === undefined ? d : Number(f[k]));
  const concurrency = num('concurrency', 4);
  const quiet = f.quiet === 'true';
  const cpu0 = process.cpuUsage();
  const run = await benchmarkServing({
    baseUrl: f.url,
    model: f.model,
    concurrency,
    requests: num('requests', 64),
    warmup: num('warmup', concurrency * 2),
    maxTokens: num('max-tokens', 128),
    ignoreEos: f['ignore-eos'] === 'true',
    prompt: benchPrompt,
    onProgress: quiet ? undefined : (d, t) => process.stderr.write(`\r${d}/${t} requests`),
  });
  if (!quiet) process.stderr.write('\n');
  const cpu = process.cpuUsage(cpu0);
  run.clientCpuMs = (cpu.user + cpu.system) / 1000;
  const out = runToJson(run, f.records === 'true');
  if (f.json) writeFileSync(f.json, JSON.stringify(out));
  if (f.json === '-' || f.records === 'true') process.stdout.write(JSON.stringify(out) + '\n');
  else {
    const m = run.metrics;
    const line = (name: string, s: { mean: number; median: number; p99: number }) => console.log(`${name.padEnd(6)} mean ${s.mean.toFixed(2)}  median ${s.median.toFixed(2)}  p99 ${s.p99.toFixed(2)} ms`);
    console.log(`completed ${m.completed}, failed ${m.failed}, duration ${(m.durationMs / 1000).toFixed(2)} s`);
    console.log(`output throughput ${m.outputThroughputTokS.toFixed(1)} tok/s (${m.totalOutputTokens} committed tokens), ${m.requestThroughputRps.toFixed(2)} req/s`);
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
