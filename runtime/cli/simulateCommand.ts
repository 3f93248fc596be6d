// `tokenrouter simulate`: an R2R-like workload on the paper's latency profile, or a recorded trace replayed, in virtual time.
import fs from 'node:fs';
import { parseTrace } from '../../shared/timeline/parseTrace.ts';
import { VirtualClock } from '../clock/virtualClock.ts';
import { Cluster } from '../entry/cluster.ts';
import { TokenRouterError } from '../errors.ts';
import { SCHEDULING_MODES, type SchedulingMode } from '../core/servingPolicy.ts';
import { runClosedLoop } from '../sim/closedLoop.ts';
import { markovAlgorithm, r2rMarkov } from '../sim/markovAlgorithm.ts';
import { PAPER_R2R_PROFILE, profileRunners } from '../sim/paperProfile.ts';
import { replayTrace, type ReplayOptions } from '../sim/traceReplay.ts';
import { JsonlTraceWriter } from '../trace/jsonlWriter.ts';
import { endProgressLine, progressLine } from '../util/progressLine.ts';
import { boolFlag, intFlag, numFlag, parseFlags } from '../util/cliFlags.ts';

export async function simulateCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: {
      mode: { type: 'string', default: 'async-delayed' },
      concurrency: { type: 'string' },
      requests: { type: 'string', default: '64' },
      p: { type: 'string', default: '0.35' },
      thresholds: { type: 'string', default: 'small=1,large=1' },
      retain: { type: 'string', default: 'true' },
      tokens: { type: 'string', default: '512' },
      trace: { type: 'string' },
      replay: { type: 'string' },
    },
  });
  const mode = values.mode as SchedulingMode;
  if (!SCHEDULING_MODES.includes(mode)) throw new TokenRouterError('invalid_request', `--mode must be one of ${SCHEDULING_MODES.join(', ')}`, 'mode');
  const concurrency = intFlag('concurrency', values.concurrency, 1, 100_000);
  const requests = intFlag('requests', values.requests, 1, 10_000_000, 64);
  const p = numFlag('p', values.p, 0, 1, 0.35);
  const tokens = intFlag('tokens', values.tokens, 1, 1_000_000, 512);
  const retain = boolFlag('retain', values.retain, true);
  const thresholds: Record<string, number> = {};
  for (const part of values.thresholds!.split(',')) {
    const [k, v] = part.split('=');
    if (!k || v === undefined) throw new TokenRouterError('invalid_request', `--thresholds takes model=T pairs, got "${part}"`, 'thresholds');
    thresholds[k] = intFlag(`thresholds ${k}`, v, 1, 4096, 1);
  }
  const trace = values.trace ? new JsonlTraceWriter(values.trace) : undefined;
  if (values.replay) return replay(values.replay, { mode, retainState: retain, thresholds, concurrency, trace }, values.trace);
  const clock = new VirtualClock();
  const runners = profileRunners(PAPER_R2R_PROFILE);
  const cluster = new Cluster({
    clock,
    mode,
    retainState: retain,
    maxConcurrency: concurrency ?? 16,
    maxWaitMs: 100,
    trace,
    models: [...runners].map(([name, runner]) => ({ name, runner, maxBatch: 64, threshold: thresholds[name] ?? 1 })),
  });
  const t0 = performance.now();
  const rep = runClosedLoop(cluster, clock, markovAlgorithm(r2rMarkov(p)), {
    concurrency: concurrency ?? 16,
    requests,
    promptLength: 128,
    maxTokens: tokens,
    keepResults: false,
    onProgress: (d, t) => progressLine(`${d}/${t} requests`, d, t),
  });
  endProgressLine();
  const wall = performance.now() - t0;
  await trace?.close();
  console.log(
    `${rep.completed} requests, ${rep.committed} committed tokens in ${(rep.spanMs / 1000).toFixed(2)} simulated s (${(wall / 1000).toFixed(2)} wall s)`,
  );
  console.log(`throughput ${rep.throughputTokS.toFixed(1)} tok/s, mean E2E ${rep.meanE2eMs.toFixed(1)} ms, p99 E2E ${rep.p99E2eMs.toFixed(1)} ms`);
  if (trace) console.log(`trace: ${values.trace} (${trace.count} events)`);
  return 0;
}

/** Re-runs a recorded trace's requests (same tokens, same models, same hand-offs) under this scheduling setup. */
async function replay(file: string, opts: Omit<ReplayOptions, 'trace'> & { trace?: JsonlTraceWriter }, tracePath: string | undefined): Promise<number> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new TokenRouterError('invalid_request', `cannot read --replay ${file}: ${(e as Error).message}`, 'replay');
  }
  const parsed = parseTrace(text);
  if (parsed.invalid > 0) console.error(`warning: skipped ${parsed.invalid} invalid trace lines (first: ${parsed.firstError})`);
  const t0 = performance.now();
  const { recorded, report } = replayTrace(parsed.events, opts);
  await opts.trace?.close();
  const lat = (m: number) =>
    recorded.latency[m]
      .slice(0, 4)
      .map((x) => x.toFixed(2))
      .join(' ');
  console.log(
    `replayed ${report.completed} recorded requests on ${recorded.models.join(', ')} at concurrency ${opts.concurrency ?? recorded.concurrency} (${((performance.now() - t0) / 1000).toFixed(2)} wall s)`,
  );
  console.log(`step ms by batch size 1..4, fitted from the recording: ${recorded.models.map((m, i) => `${m} ${lat(i)}`).join(' | ')}`);
  console.log(
    `recorded ${recorded.throughputTokS.toFixed(1)} tok/s; replayed (${opts.mode}, retain ${opts.retainState}, thresholds ${JSON.stringify(opts.thresholds ?? {})}) ${report.throughputTokS.toFixed(1)} tok/s, mean E2E ${report.meanE2eMs.toFixed(1)} ms, p99 ${report.p99E2eMs.toFixed(1)} ms`,
  );
  if (tracePath) console.log(`trace: ${tracePath}`);
  return 0;
}
