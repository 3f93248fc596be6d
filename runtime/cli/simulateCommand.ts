// `tokenrouter simulate`: an R2R-like workload on the paper's latency profile in virtual time, with an optional trace file.
import { parseArgs } from 'node:util';
import { VirtualClock } from '../clock/virtualClock.ts';
import { Cluster } from '../engine/cluster.ts';
import { TokenRouterError } from '../errors.ts';
import { SCHEDULING_MODES, type SchedulingMode } from '../scheduler/schedulingMode.ts';
import { runClosedLoop } from '../sim/closedLoop.ts';
import { markovAlgorithm, r2rMarkov } from '../sim/markovAlgorithm.ts';
import { PAPER_R2R_PROFILE, profileRunners } from '../sim/paperProfile.ts';
import { JsonlTraceWriter } from '../trace/jsonlWriter.ts';

export async function simulateCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      mode: { type: 'string', default: 'async-delayed' },
      concurrency: { type: 'string', default: '16' },
      requests: { type: 'string', default: '64' },
      p: { type: 'string', default: '0.35' },
      thresholds: { type: 'string', default: 'small=1,large=1' },
      retain: { type: 'string', default: 'true' },
      tokens: { type: 'string', default: '512' },
      trace: { type: 'string' },
    },
  });
  const mode = values.mode as SchedulingMode;
  if (!SCHEDULING_MODES.includes(mode)) throw new TokenRouterError('invalid_request', `--mode must be one of ${SCHEDULING_MODES.join(', ')}`, 'mode');
  const num = (name: string, v: string, min: number, max: number) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max) throw new TokenRouterError('invalid_request', `--${name} must be a number in [${min}, ${max}], got "${v}"`, name);
    return n;
  };
  const concurrency = num('concurrency', values.concurrency!, 1, 100_000);
  const requests = num('requests', values.requests!, 1, 10_000_000);
  const p = num('p', values.p!, 0, 1);
  const tokens = num('tokens', values.tokens!, 1, 1_000_000);
  const thresholds: Record<string, number> = {};
  for (const part of values.thresholds!.split(',')) {
    const [k, v] = part.split('=');
    if (!k || v === undefined) throw new TokenRouterError('invalid_request', `--thresholds takes model=T pairs, got "${part}"`, 'thresholds');
    thresholds[k] = num(`thresholds ${k}`, v, 1, 4096);
  }
  const trace = values.trace ? new JsonlTraceWriter(values.trace) : undefined;
  const clock = new VirtualClock();
  const runners = profileRunners(PAPER_R2R_PROFILE);
  const cluster = new Cluster({
    clock,
    mode,
    retainState: values.retain !== 'false',
    maxConcurrency: concurrency,
    maxWaitMs: 100,
    trace,
    models: [...runners].map(([name, runner]) => ({ name, runner, maxBatch: 64, threshold: thresholds[name] ?? 1 })),
  });
  const t0 = performance.now();
  const rep = runClosedLoop(cluster, clock, markovAlgorithm(r2rMarkov(p)), {
    concurrency,
    requests,
    promptLength: 128,
    maxTokens: tokens,
    keepResults: false,
    onProgress: (d, t) => process.stderr.write(`\r${d}/${t} requests`),
  });
  process.stderr.write('\n');
  const wall = performance.now() - t0;
  await trace?.close();
  console.log(`${rep.completed} requests, ${rep.committed} committed tokens in ${(rep.spanMs / 1000).toFixed(2)} simulated s (${(wall / 1000).toFixed(2)} wall s)`);
  console.log(`throughput ${rep.throughputTokS.toFixed(1)} tok/s, mean E2E ${rep.meanE2eMs.toFixed(1)} ms, p99 E2E ${rep.p99E2eMs.toFixed(1)} ms`);
  if (trace) console.log(`trace: ${values.trace} (${trace.count} events)`);
  return 0;
}
