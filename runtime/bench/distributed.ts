// Suite distributed: committed throughput with the large model in-process, in a separate process, and across namespaces with 1 ms each way.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRealClock } from '../clock/clock.ts';
import { VirtualClock } from '../clock/virtualClock.ts';
import { Cluster } from '../engine/cluster.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { NatsRunner } from '../distributed/natsRunner.ts';
import { startNatsServer, stopChild, type NatsServerProcess } from './rigs/natsServerProcess.ts';
import { startDelayRelay } from './rigs/delayRelay.ts';
import { createNetnsPair, netnsUnavailableReason, type NetnsPair } from './rigs/netnsPair.ts';
import { percentile } from '../util/stats.ts';
import { simModel, type SimLatency } from '../distributed/simModel.ts';
import { spawnSubServer, type SubServerProcess } from './rigs/subServerProcess.ts';
import { runClosedLoop } from '../sim/closedLoop.ts';
import { markovAlgorithm, r2rMarkov } from '../sim/markovAlgorithm.ts';
import { RemoteSim } from '../sim/remoteSim.ts';
import { PAPER_R2R_PROFILE } from '../sim/paperProfile.ts';
import { type BenchOptions, type BenchReport } from './benchSuite.ts';
import { printTable } from './table.ts';
import { SuiteFlags } from './suiteFlags.ts';

interface Workload {
  concurrency: number;
  requests: number;
  promptLength: number;
  maxTokens: number;
  p: number;
  /** Probability that the large model keeps a request for another token (0: R2R, back after one). */
  largeStay: number;
  /** Lookahead passes a step may take (Cluster lookahead; the runners take up to 8). */
  lookahead: number;
  thresholds: Record<string, number>;
  maxWaitMs: number;
}

/** Runners take up to this many lookahead passes; the Cluster's `lookahead` decides how many are asked. */
const MAX_AHEAD = 8;

/** R2R (large back after one kept token), or with `largeStay` > 0 a large model that keeps requests for 1 / (1 − s) tokens on average. */
function workloadAlgorithm(w: Workload) {
  const spec = r2rMarkov(w.p);
  if (w.largeStay > 0) spec.P[1] = [1 - w.largeStay, w.largeStay];
  return markovAlgorithm(spec);
}

interface CaseResult {
  case: string;
  committed: number;
  wall_s: number;
  tok_s: number;
  large_batches: number;
  mean_large_batch: number;
  /** Wall ms per large-model batch as the entry sees it, launch to results: model time plus transport, plus (pipelined) the wait behind the batch ahead. */
  mean_large_step_ms: number;
  mean_e2e_ms: number;
  round?: number;
}

const latencyOf = (name: 'small' | 'large'): SimLatency => ({
  baseMs: PAPER_R2R_PROFILE.stepMs[name],
  perRowMs: 0,
  perTokenMs: PAPER_R2R_PROFILE.prefillMsPerToken[name],
});

/** N closed-loop clients on the real clock; throughput = committed tokens / (first dispatch → last completion). */
async function closedLoop(label: string, large: ModelRunner, w: Workload): Promise<CaseResult> {
  const small = simModel({ name: 'small', latency: latencyOf('small'), vocab: 'hash', maxAhead: MAX_AHEAD, streamOn: createRealClock() });
  const cluster = new Cluster({
    clock: createRealClock(),
    mode: 'async-delayed',
    maxConcurrency: w.concurrency,
    maxWaitMs: w.maxWaitMs,
    lookahead: w.lookahead,
    models: [
      { name: 'small', runner: small, maxBatch: 64, threshold: w.thresholds.small ?? 1 },
      { name: 'large', runner: large, maxBatch: 64, threshold: w.thresholds.large ?? 1 },
    ],
  });
  const algorithm = workloadAlgorithm(w);
  let sent = 0;
  let committed = 0;
  let e2eSum = 0;
  let failed: Error | null = null;
  const t0 = performance.now();
  let tEnd = t0;
  await new Promise<void>((resolve, reject) => {
    let completed = 0;
    const send = () => {
      const i = sent++;
      const prompt = Array.from({ length: w.promptLength }, (_, j) => 4 + ((i * 31 + j * 7) % 90));
      cluster.submit({
        id: `${label}-${i}`,
        prompt,
        maxTokens: w.maxTokens,
        sampling: { seed: i },
        algorithm,
        onEnd: (r) => {
          completed++;
          if (r.status !== 'done') failed ??= r.error ?? new Error(`request ${r.id} ${r.status}`);
          committed += r.tokens.length;
          e2eSum += r.endedAt - r.submittedAt;
          tEnd = performance.now();
          if (sent < w.requests) send();
          else if (completed === w.requests) (failed ? reject(failed) : resolve());
        },
      });
    };
    for (let c = 0; c < Math.min(w.concurrency, w.requests); c++) send();
  });
  const wall = (tEnd - t0) / 1000;
  const lane = cluster.laneStats().find((l) => l.name === 'large')!;
  return {
    case: label,
    committed,
    wall_s: wall,
    tok_s: committed / wall,
    large_batches: lane.batches,
    mean_large_batch: lane.rows / Math.max(1, lane.batches),
    mean_large_step_ms: lane.busyMs / Math.max(1, lane.batches),
    mean_e2e_ms: e2eSum / w.requests,
  };
}

/**
 * The same workload in virtual time, the large model across a round trip of `rttMs` (half each
 * way) or in-process (null): what the scheduler itself keeps when every visit pays that trip, with
 * no wake-ups, timer slack or noise. More requests than a real round, for a steady figure.
 */
function virtualTokS(w: Workload, rttMs: number | null, pipelineDepth: number): number {
  const clock = new VirtualClock();
  const largeModel = simModel({ name: 'large', latency: latencyOf('large'), vocab: 'hash' });
  const cluster = new Cluster({
    clock,
    mode: 'async-delayed',
    maxConcurrency: w.concurrency,
    maxWaitMs: w.maxWaitMs,
    // RemoteSim answers lookahead with the step, not streamed as the sub-servers do: the bound is without it
    lookahead: 0,
    models: [
      { name: 'small', runner: simModel({ name: 'small', latency: latencyOf('small'), vocab: 'hash' }), maxBatch: 64, threshold: w.thresholds.small ?? 1 },
      { name: 'large', runner: rttMs === null ? largeModel : new RemoteSim(largeModel, clock, rttMs / 2, rttMs / 2, pipelineDepth), maxBatch: 64, threshold: w.thresholds.large ?? 1 },
    ],
  });
  const requests = Math.max(w.requests, 12 * w.concurrency);
  return runClosedLoop(cluster, clock, workloadAlgorithm(w), { concurrency: w.concurrency, requests, promptLength: w.promptLength, maxTokens: w.maxTokens, keepResults: false }).throughputTokS;
}

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** A runner bound to one of the two sub-servers (same model name) through its own subject prefix. */
async function connectTo(url: string, replica: string, pipelineDepth: number, lookahead: number): Promise<NatsRunner> {
  return NatsRunner.connect({ model: 'large', servers: url, subjectPrefix: `bench.${replica}`.replace(/-/g, '_'), pipelineDepth, lookahead });
}

interface RelayHandle {
  port: number;
  stats(): string;
  stop(): Promise<void>;
}

const describeStats = (s: { chunks: number; meanHoldMs: number; minHoldMs: number; maxHoldMs: number }) =>
  `relay stats: ${s.chunks} chunks, mean hold ${s.meanHoldMs.toFixed(3)} ms, min ${s.minHoldMs.toFixed(3)} ms, max ${s.maxHoldMs.toFixed(3)} ms`;

/**
 * The relay on the entry's event loop (default). A real network delays packets without asking an
 * oversubscribed CPU scheduler for a time slice; a relay process sleeping between chunks does ask,
 * and on a loaded machine its wake-ups add many times the 1 ms being modelled.
 */
async function inEntryRelay(listenHost: string, natsPort: number, delayMs: number): Promise<RelayHandle> {
  const r = await startDelayRelay({ listenHost, targetHost: '127.0.0.1', targetPort: natsPort, delayMs });
  let last = '';
  return {
    port: r.port,
    stats: () => last || describeStats(r.stats()),
    stop: async () => {
      last = describeStats(r.stats());
      await r.close();
    },
  };
}

/** The relay in its own process (`--relay process`): its timers do not share the entry's event loop. */
function spawnRelay(listenHost: string, natsPort: number, delayMs: number): Promise<RelayHandle> {
  const script = path.resolve(HERE, './rigs/delayRelay.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--listen', `${listenHost}:0`, '--target', `127.0.0.1:${natsPort}`, '--delay-ms', String(delayMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /relay listening on \S+:(\d+)/.exec(out);
      if (m) resolve({ port: Number(m[1]), stats: () => /relay stats: .*/.exec(out)?.[0] ?? '', stop: () => stopChild(child) });
    });
    child.once('exit', (code) => reject(new Error(`relay exited (code ${code}): ${out}`)));
  });
}

export async function run(opts: BenchOptions): Promise<BenchReport> {
  const f = new SuiteFlags(opts.flags);
  const concurrency = f.num('concurrency', 8);
  const w: Workload = {
    concurrency,
    requests: concurrency * f.sized('requests-per-client', 2, 1),
    promptLength: f.num('prompt', 32),
    maxTokens: f.sized('tokens', 128, 48),
    p: f.num('p', 0.35),
    largeStay: f.num('large-stay', 0),
    lookahead: f.num('lookahead', 0),
    // delayed batching, as TokenRouter serves: Σ(T−1) = 3 < N = 8 is feasible
    thresholds: { small: f.num('threshold-small', 1), large: f.num('threshold-large', 4) },
    maxWaitMs: f.num('max-wait-ms', 20),
  };
  const delayMs = f.num('delay-ms', 1);
  // Steps in flight per remote model: 2 keeps the next batch waiting at the sub-server; 1 shows the round trip's cost.
  const pipelineDepth = f.num('pipeline-depth', 2);
  // Optional: one more cross-host case per round at another depth, through the same sub-server, so
  // two depths are compared side by side rather than across runs.
  const compareDepth = f.num('compare-depth', 0);
  const compareLabel = `cross-host depth ${compareDepth}`;
  const subLatency = latencyOf('large');
  const subArgs = (url: string, replica: string) => ['--model', 'large', '--nats', url, '--replica', replica, '--prefix', `bench.${replica}`.replace(/-/g, '_'), '--sim', '--sim-vocab', 'hash', '--sim-latency', `${subLatency.baseMs},${subLatency.perRowMs},${subLatency.perTokenMs}`, '--sim-max-ahead', String(MAX_AHEAD)];
  const rounds = f.sized('rounds', 3, 1);
  const rows: CaseResult[] = [];
  let nats: NatsServerProcess | null = null;
  const subs: SubServerProcess[] = [];
  let pair: NetnsPair | null = null;
  let relay: RelayHandle | null = null;
  const relayWhere = f.str('relay', 'entry');
  if (relayWhere !== 'entry' && relayWhere !== 'process') throw new Error(`--relay must be entry or process, got "${relayWhere}"`);
  const runners: NatsRunner[] = [];
  const netnsReason = netnsUnavailableReason();
  try {
    // Everything starts before the first measurement; then the three cases alternate, round after
    // round, so a burst of load from other work on the machine hits all of them alike.
    nats = await startNatsServer();
    subs.push(await spawnSubServer({ args: subArgs(nats.url, 'bench-local'), timeoutMs: 90_000 }));
    if (!netnsReason) pair = createNetnsPair();
    relay = relayWhere === 'process' ? await spawnRelay(pair?.hostIp ?? '127.0.0.1', nats.port, delayMs) : await inEntryRelay(pair?.hostIp ?? '127.0.0.1', nats.port, delayMs);
    subs.push(await spawnSubServer({ args: subArgs(`nats://${pair?.hostIp ?? '127.0.0.1'}:${relay.port}`, 'bench-remote'), wrap: pair?.wrap, timeoutMs: 90_000 }));
    // two sub-servers of one model name: each pair talks on its own subject prefix, so each runner reaches only its own
    const separate = await connectTo(nats.url, 'bench-local', pipelineDepth, w.lookahead);
    runners.push(separate);
    const cross = await connectTo(nats.url, 'bench-remote', pipelineDepth, w.lookahead);
    runners.push(cross);
    const crossCompare = compareDepth > 0 ? await connectTo(nats.url, 'bench-remote', compareDepth, w.lookahead) : null;
    if (crossCompare) runners.push(crossCompare);
    console.error(`[distributed] cross-host: ${netnsReason ? `relay on loopback (${netnsReason})` : 'sub-server in its own network namespace'}, ${delayMs} ms each way; ${rounds} rounds`);
    for (let round = 1; round <= rounds; round++) {
      console.error(`[distributed] round ${round}/${rounds}`);
      rows.push({ ...(await closedLoop('in-process', simModel({ name: 'large', latency: subLatency, vocab: 'hash', maxAhead: MAX_AHEAD, streamOn: createRealClock() }), w)), round });
      rows.push({ ...(await closedLoop('separate-process', separate, w)), round });
      rows.push({ ...(await closedLoop('cross-host', cross, w)), round });
      if (crossCompare) rows.push({ ...(await closedLoop(compareLabel, crossCompare, w)), round });
    }
  } finally {
    for (const r of runners) await r.close().catch(() => {});
    for (const s of subs) await s.stop();
    if (relay) await relay.stop();
    pair?.destroy();
    await nats?.stop();
  }
  const relayStats = relay?.stats() ?? '';
  // Per answered part: entry round trip minus the wait at the replica and the model time (the
  // runners' counters span every round of their case).
  const split = (r: NatsRunner | undefined) => {
    const s = r?.stats;
    const n = Math.max(1, s?.answered ?? 0);
    return { network_ms: (s?.networkMs ?? 0) / n, queued_ms: (s?.queuedMs ?? 0) / n, model_ms: (s?.modelMs ?? 0) / n };
  };
  const [sepSplit, crossSplit] = [split(runners[0]), split(runners[1])];
  printTable(rows as unknown as Record<string, unknown>[]);
  const median = (label: string) => percentile(rows.filter((r) => r.case === label).map((r) => r.tok_s), 50);
  const [inProc, sep, cross] = ['in-process', 'separate-process', 'cross-host'].map(median);
  console.log(`median of ${rounds} rounds: in-process ${inProc.toFixed(1)} tok/s, separate process ${sep.toFixed(1)} (${((sep / inProc) * 100).toFixed(1)}%), cross-host ${cross.toFixed(1)} (${((cross / inProc) * 100).toFixed(1)}%; target ≥ 90% at concurrency 8)`);
  const compared = compareDepth > 0 ? median(compareLabel) : null;
  if (compared !== null) console.log(`${compareLabel}: ${compared.toFixed(1)} tok/s (${((compared / inProc) * 100).toFixed(1)}% of in-process; ${((compared / cross) * 100).toFixed(1)}% of depth ${pipelineDepth})`);
  // What the scheduler keeps at the round trips measured, and at a few others, free of wake-up noise.
  const virtualIn = virtualTokS(w, null, pipelineDepth);
  const bound = (rtt: number) => virtualTokS(w, rtt, pipelineDepth) / virtualIn;
  const atMeasured = { separate_process: bound(sepSplit.network_ms), cross_host: bound(crossSplit.network_ms) };
  const sweep = [1, 2, 4, 8, 16].map((rtt) => ({ rtt_ms: rtt, ratio: bound(rtt) }));
  for (const [label, v, b] of [['separate process', sepSplit, atMeasured.separate_process], ['cross-host', crossSplit, atMeasured.cross_host]] as const) {
    console.log(`${label}: per step part ${v.network_ms.toFixed(2)} ms network round trip (wake-ups included), ${v.queued_ms.toFixed(2)} ms waiting at the replica, ${v.model_ms.toFixed(2)} ms model; at that round trip the scheduler keeps ${(b * 100).toFixed(1)}% (virtual time)`);
  }
  console.log(`virtual time, share of in-process kept at a round trip of ${sweep.map((x) => `${x.rtt_ms} ms: ${(x.ratio * 100).toFixed(1)}%`).join(', ')}`);
  if (relayStats) console.log(relayStats);
  return {
    suite: 'distributed',
    settings: {
      models: 'small in the entry; large in-process / in a sub-server process over NATS (loopback) / in a sub-server across network namespaces',
      runners: `simulated, real clock: small ${PAPER_R2R_PROFILE.stepMs.small} ms/step, large ${PAPER_R2R_PROFILE.stepMs.large} ms/step (paper R2R profile, + prefill ms/token ${JSON.stringify(PAPER_R2R_PROFILE.prefillMsPerToken)})`,
      routing: w.largeStay > 0 ? `Markov: small→large with p=${w.p} (token discarded), large keeps the request with probability ${w.largeStay} per token (${(1 / (1 - w.largeStay)).toFixed(1)} tokens a visit)` : `R2R Markov p=${w.p}: small→large token discarded, large hands back after one kept token`,
      mode: 'async-delayed',
      ...w,
      rounds,
      statistic: 'median over rounds of committed tokens / (first dispatch → last completion)',
      cross_host: `${!netnsReason ? 'sub-server in its own network namespace (veth pair)' : `sub-server on loopback (ip netns unavailable: ${netnsReason})`}, reaching nats-server through a relay (${relayWhere === 'entry' ? "on the entry's event loop" : 'own process'}) that holds every chunk ${delayMs} ms each way`,
      relay: relayStats,
      transport: 'NATS request/reply, binary step codec, nats-server 2.9 on 127.0.0.1',
      pipeline_depth: pipelineDepth,
    },
    results: {
      in_process_tok_s: inProc,
      separate_process_tok_s: sep,
      cross_host_tok_s: cross,
      separate_process_ratio: sep / inProc,
      cross_host_ratio: cross / inProc,
      separate_process_part_ms: sepSplit,
      cross_host_part_ms: crossSplit,
      // the same workload in virtual time with every large visit paying that round trip
      virtual_ratio_at_measured_rtt: atMeasured,
      virtual_ratio_by_rtt: sweep,
      ...(compared !== null ? { compare_depth: compareDepth, compare_depth_cross_host_tok_s: compared, compare_depth_cross_host_ratio: compared / inProc } : {}),
      cases: rows,
    },
  };
}
