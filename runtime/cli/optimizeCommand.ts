// `tokenrouter optimize`: delayed-batching thresholds for a recorded trace, and the predicted gain over thresholds of 1.
import fs from 'node:fs';
import path from 'node:path';
import { parseTrace } from '../../shared/timeline/parseTrace.ts';
import { TokenRouterError } from '../errors.ts';
import { profileStepLatency } from '../runner/profileStepLatency.ts';
import { WorkerRunner } from '../runner/workerRunner.ts';
import { parseGoodput } from '../loadgen/goodput.ts';
import { sloChoiceFromTrace } from '../control/sloFromTrace.ts';
import { thresholdsFromTrace, type TraceThresholds } from '../control/thresholdsFromTrace.ts';
import { fitLatencyProfile } from '../control/throughput/index.ts';
import { parseFlags, requestRateFlag } from '../util/cliFlags.ts';
import { endProgressLine, progressLine } from '../util/progressLine.ts';

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const fmtT = (t: Record<string, number>) =>
  Object.entries(t)
    .map(([m, v]) => `${m}=${v}`)
    .join(',');

function intFlag(name: string, v: string | undefined, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new TokenRouterError('invalid_request', `--${name} must be an integer in [${min}, ${max}], got "${v}"`, name);
  return n;
}

/** Lone-model step latency of each model in the trace, timed on its real runner from a models folder. */
async function profile(dir: string, models: readonly string[], maxBatch: number): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const m of models) {
    const folder = path.join(dir, m);
    if (!fs.existsSync(folder)) throw new TokenRouterError('invalid_request', `--profile: no model folder ${folder} for model "${m}" of the trace`, 'profile');
    const runner = await WorkerRunner.start(folder, { intraOpNumThreads: 1, name: m });
    try {
      const ms = await profileStepLatency(runner, maxBatch, { onProgress: (b, n) => progressLine(`profiling ${m}: batch ${b}/${n}`, b, n) });
      // The same monotone fit the trace's latencies get: a step never gets cheaper with more rows.
      out[m] = fitLatencyProfile(
        ms.map((x, k) => ({ model: 0, batch: k + 1, ms: x })),
        { maxBatch },
      ).table[0];
      endProgressLine();
    } finally {
      await runner.close();
    }
  }
  return out;
}

function print(r: TraceThresholds, latencySource: string): void {
  console.log(
    `models ${r.models.join(', ')}; N = ${r.N} (${r.nSource === 'given' ? '--concurrency' : 'mean in flight in the trace'}); request-steps ${r.estimate.steps.join(' / ')}`,
  );
  console.log(
    `P = ${JSON.stringify(r.estimate.P.map((row) => row.map((x) => +x.toFixed(4))))}, C = ${JSON.stringify(r.estimate.C.map((row) => row.map((x) => +x.toFixed(3))))}`,
  );
  for (const [i, m] of r.models.entries()) {
    const alone = r.estimate.latency[i].map((x) => x.toFixed(2)).join(' ');
    const busy = r.estimate.contendedLatency[i].map((x) => x.toFixed(2)).join(' ');
    console.log(`L_${m}(b) ms, ${latencySource}: ${alone}${busy !== alone ? `\n  launched beside another model: ${busy}` : ''}`);
  }
  console.log('\nbest candidates (predicted committed tok/s):');
  for (const row of r.table) console.log(`  ${fmtT(row.thresholds).padEnd(28)} ${row.predicted_tok_s.toFixed(1)}`);
  console.log(
    `\nthresholds ${fmtT(r.best)}: predicted ${r.predictedBest.toFixed(1)} tok/s, ${r.gainOverOnes >= 0 ? '+' : ''}${pct(r.gainOverOnes)} over thresholds of 1 (${r.predictedOnes.toFixed(1)} tok/s)`,
  );
  if (r.inForce) console.log(`in force during the trace: ${fmtT(r.inForce.thresholds)}, predicted ${r.inForce.predicted.toFixed(1)} tok/s`);
  console.log(
    r.wouldApply
      ? 'the gain is above the 5% hysteresis: thresholds: "auto" would apply these'
      : 'the gain is within the 5% hysteresis: thresholds: "auto" would keep thresholds of 1',
  );
}

export async function optimizeCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: {
      trace: { type: 'string' },
      concurrency: { type: 'string' },
      'max-batch': { type: 'string' },
      fixed: { type: 'string' },
      profile: { type: 'string' },
      json: { type: 'string' },
      slo: { type: 'string' },
      'request-rate': { type: 'string' },
    },
  });
  if (!values.trace)
    throw new TokenRouterError(
      'invalid_request',
      '--trace FILE is required (a JSON-lines trace, e.g. from `tokenrouter simulate --trace` or the timeline export)',
      'trace',
    );
  let text: string;
  try {
    text = fs.readFileSync(values.trace, 'utf8');
  } catch (e) {
    throw new TokenRouterError('invalid_request', `cannot read --trace ${values.trace}: ${(e as Error).message}`, 'trace');
  }
  const parsed = parseTrace(text);
  if (parsed.invalid > 0) console.error(`warning: skipped ${parsed.invalid} invalid trace lines (first: ${parsed.firstError})`);
  // Progress on stderr, so stdout stays the result alone: a long trace and a large N take a while.
  console.error(`read ${parsed.events.length} events from ${values.trace}; estimating routing and step latency, then searching thresholds …`);
  const fixed: Record<string, number> = {};
  for (const part of values.fixed ? values.fixed.split(',') : []) {
    const [m, v] = part.split('=');
    const t = intFlag(`fixed ${m}`, v, 1, 4096);
    if (!m || t === undefined) throw new TokenRouterError('invalid_request', `--fixed takes model=T pairs, got "${part}"`, 'fixed');
    fixed[m] = t;
  }
  const search = (label: string) => (k: number, of: number | undefined) => {
    if (of === undefined) progressLine(`${label}: ${k} candidates priced (coordinate search)`, 0, 1);
    else progressLine(`${label}: ${k}/${of} candidate thresholds priced`, k, of);
  };
  const opts = {
    concurrency: intFlag('concurrency', values.concurrency, 1, 100_000),
    maxBatch: intFlag('max-batch', values['max-batch'], 1, 256),
    fixed,
    onProgress: search('thresholds'),
  };
  // Routing and N always come from the trace; with --profile, step latency from timing the real runners.
  let result = thresholdsFromTrace(parsed.events, opts);
  let latencySource = 'from the trace';
  if (values.profile) {
    const cap = result.estimate.latency[0].length;
    const latency = await profile(path.resolve(values.profile), result.models, cap);
    result = thresholdsFromTrace(parsed.events, { ...opts, latency, onProgress: search('thresholds on profiled latency') });
    latencySource = `profiled on ${values.profile}`;
  }
  endProgressLine();
  print(result, latencySource);
  // --slo: also the SLO-aware choice (thresholds and deadline for goodput) at the trace's or the given arrival rate.
  const slo =
    values.slo === undefined
      ? null
      : sloChoiceFromTrace(parsed.events, result, parseGoodput(values.slo), {
          rateRps: values['request-rate'] === undefined ? undefined : requestRateFlag(values['request-rate']),
          fixed,
        });
  if (slo) {
    console.log(
      `\nunder --slo ${values.slo} at ${slo.rateRps.toFixed(2)} req/s (${slo.rateSource === 'given' ? '--request-rate' : 'admissions in the trace'}), ${slo.outputTokens} output tokens:`,
    );
    console.log(
      `  thresholds ${fmtT(slo.best)}, maxWaitMs ${slo.maxWaitMs}: predicted goodput ${slo.goodputReqS.toFixed(2)} req/s, p99 TPOT ${slo.p99TpotMs.toFixed(1)} ms, p99 TTFT ${slo.p99TtftMs.toFixed(0)} ms${slo.meetsSlo ? '' : ' - no setting meets the SLO at this rate'}`,
    );
  }
  if (values.json) {
    fs.writeFileSync(
      values.json,
      JSON.stringify({ trace: values.trace, latency_source: latencySource, ...result, ...(slo ? { slo_choice: slo } : {}) }, null, 2),
    );
    console.log(`wrote ${values.json}`);
  }
  return 0;
}
