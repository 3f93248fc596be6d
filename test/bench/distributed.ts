// Suite distributed: committed throughput with the large model in-process, in-process behind the delay alone, in a separate process, across namespaces with 1 ms each way, and with both models remote.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster, type ClusterModel } from '../../runtime/entry/cluster.ts';
import { RemoteEngine, RemoteMesh } from '../../runtime/transport/nats/remoteEngine.ts';
import { startNatsServer, stopChild, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { startDelayRelay } from '../support/rigs/delayRelay.ts';
import { DelayLine } from '../support/rigs/delayLine.ts';
import { DelayedEngine } from '../support/rigs/delayedEngine.ts';
import { createNetnsPair, netnsUnavailableReason, type NetnsPair } from '../support/rigs/netnsPair.ts';
import { percentile } from '../../runtime/util/stats.ts';
import { simModel, type SimLatency } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import { markovAlgorithm, r2rMarkov, type MarkovSpec } from '../../runtime/sim/markovAlgorithm.ts';
import type { AlgorithmRef } from '../../runtime/registry/algorithmSource.ts';
import { PAPER_R2R_PROFILE } from '../../runtime/sim/paperProfile.ts';
import type { BenchOptions, BenchReport } from './benchSuite.ts';
import { printTable } from '../../runtime/util/table.ts';
import { SuiteFlags } from './suiteFlags.ts';
import { threadCpuMs } from '../../runtime/util/threadCpu.ts';

interface Workload {
  concurrency: number;
  requests: number;
  promptLength: number;
  maxTokens: number;
  p: number;
  /** Probability that the large model keeps a request for another token (0: R2R, back after one). */
  largeStay: number;
  thresholds: Record<string, number>;
  maxWaitMs: number;
}

/** R2R (large back after one kept token), or with `largeStay` > 0 a large model that keeps requests for 1 / (1 − s) tokens on average. */
function workloadSpec(w: Workload): MarkovSpec {
  const spec = r2rMarkov(w.p);
  if (w.largeStay > 0) spec.P[1] = [1 - w.largeStay, w.largeStay];
  return spec;
}

/** The same algorithm by reference, for a remote engine to build beside its model. */
function workloadRef(w: Workload): AlgorithmRef {
  return {
    key: `markov-${JSON.stringify(workloadSpec(w))}`,
    source: { kind: 'module', module: path.resolve(HERE, '../../runtime/sim/markovAlgorithm.ts'), export: 'markovAlgorithm', args: [workloadSpec(w)] },
  };
}

interface CaseResult {
  case: string;
  committed: number;
  wall_s: number;
  tok_s: number;
  large_batches: number;
  mean_large_batch: number;
  /** Wall ms per large-model batch, launch to results, as its engine measured it (wherever it runs). */
  mean_large_step_ms: number;
  mean_e2e_ms: number;
  /** The large lane's busy time ÷ the wall time. */
  large_busy_share: number;
  /** CPU µs per committed token: the entry process (all its threads; the relay too, with `--relay entry`), its main thread, the case's sub-server processes, nats-server. */
  entry_cpu_us: number;
  entry_main_us: number;
  sub_cpu_us: number;
  nats_cpu_us: number;
  /** NATS messages (both ways, heartbeats included) and their bytes at the entry's remote engines, per committed token. */
  frames_per_token: number;
  bytes_per_token: number;
  round?: number;
}

/** What a case is measured by besides its tokens: its remote engines' wire counts and the processes whose CPU it spends. */
interface Probe {
  engines: RemoteEngine[];
  pids: number[];
  natsPid: number;
}

/** CPU ms of a process (`/proc/PID`, all its threads) or one thread (`/proc/self/task/TID`), 10 ms ticks. */
const cpuMs = (proc: string | number) => threadCpuMs(`/proc/${proc}/stat`) ?? NaN;

/** CPU of the processes and frames of the engines, taken before and after a case. */
function sample(p: Probe) {
  const wire = { frames: 0, bytes: 0 };
  for (const e of p.engines) {
    const w = e.wireStats();
    wire.frames += w.framesIn + w.framesOut;
    wire.bytes += w.bytesIn + w.bytesOut;
  }
  const cpu = process.cpuUsage();
  return {
    ...wire,
    entry: (cpu.user + cpu.system) / 1000,
    main: cpuMs(`self/task/${process.pid}`),
    subs: p.pids.reduce((a, pid) => a + cpuMs(pid), 0),
    nats: cpuMs(p.natsPid),
  };
}

const latencyOf = (name: 'small' | 'large'): SimLatency => ({
  baseMs: PAPER_R2R_PROFILE.stepMs[name],
  perRowMs: 0,
  perTokenMs: PAPER_R2R_PROFILE.prefillMsPerToken[name],
});

/** N closed-loop clients on the real clock; throughput = committed tokens / (first dispatch → last completion). */
async function closedLoop(
  label: string,
  large: RemoteEngine | DelayLine | null,
  w: Workload,
  probe: Probe,
  smallRemote: RemoteEngine | null = null,
): Promise<CaseResult> {
  const clock = createRealClock();
  const simLarge = () => simModel({ name: 'large', latency: latencyOf('large'), vocab: 'hash' });
  const largeLimits = { maxBatch: 64, maxStepTokens: Infinity, threshold: w.thresholds.large ?? 1 };
  const smallAt: ClusterModel = smallRemote
    ? { name: 'small', thread: smallRemote }
    : { name: 'small', runner: simModel({ name: 'small', latency: latencyOf('small'), vocab: 'hash' }) };
  const largeAt: ClusterModel =
    large instanceof RemoteEngine
      ? { name: 'large', thread: large }
      : large
        ? { name: 'large', thread: new DelayedEngine('large', simLarge(), clock, large) }
        : { name: 'large', runner: simLarge() };
  const cluster = new Cluster({
    clock,
    mode: 'async-delayed',
    maxConcurrency: w.concurrency,
    maxWaitMs: w.maxWaitMs,
    prefixCache: false,
    models: [
      { ...smallAt, maxBatch: 64, threshold: w.thresholds.small ?? 1 },
      { ...largeAt, ...largeLimits },
    ],
  });
  const algorithm = markovAlgorithm(workloadSpec(w));
  const algorithmRef = workloadRef(w);
  let sent = 0;
  let committed = 0;
  let e2eSum = 0;
  let failed: Error | null = null;
  const before = sample(probe);
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
        algorithmRef,
        onEnd: (r) => {
          completed++;
          if (r.status !== 'done') failed ??= r.error ?? new Error(`request ${r.id} ${r.status}`);
          committed += r.tokens.length;
          e2eSum += r.endedAt - r.submittedAt;
          tEnd = performance.now();
          if (sent < w.requests) send();
          else if (completed === w.requests) failed ? reject(failed) : resolve();
        },
      });
    };
    for (let c = 0; c < Math.min(w.concurrency, w.requests); c++) send();
  });
  const wall = (tEnd - t0) / 1000;
  const after = sample(probe);
  const perToken = (k: keyof typeof after, scale = 1000) => ((after[k] - before[k]) * scale) / committed;
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
    large_busy_share: lane.busyMs / 1000 / wall,
    entry_cpu_us: perToken('entry'),
    entry_main_us: perToken('main'),
    sub_cpu_us: perToken('subs'),
    nats_cpu_us: perToken('nats'),
    frames_per_token: perToken('frames', 1),
    bytes_per_token: perToken('bytes', 1),
  };
}

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The remote engine of one of the sub-servers (same model names), reached through its own subject prefix. */
function connectTo(url: string, replica: string, model = 'large', mesh?: RemoteMesh): Promise<RemoteEngine> {
  return RemoteEngine.connect({ model, nats: url, subjectPrefix: `bench.${replica}`.replace(/-/g, '_'), mesh, log: () => {} });
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
  const script = path.resolve(HERE, '../support/rigs/delayRelay.ts');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', script, '--listen', `${listenHost}:0`, '--target', `127.0.0.1:${natsPort}`, '--delay-ms', String(delayMs)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
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
    // delayed batching, as TokenRouter serves: Σ(T−1) = 3 < N = 8 is feasible
    thresholds: { small: f.num('threshold-small', 1), large: f.num('threshold-large', 4) },
    maxWaitMs: f.num('max-wait-ms', 20),
  };
  const delayMs = f.num('delay-ms', 1);
  const subArgs = (url: string, replica: string, model: 'small' | 'large' = 'large') => {
    const l = latencyOf(model);
    return [
      '--model',
      model,
      '--nats',
      url,
      '--replica',
      replica,
      '--prefix',
      `bench.${replica}`.replace(/-/g, '_'),
      '--sim',
      '--sim-vocab',
      'hash',
      '--sim-latency',
      `${l.baseMs},${l.perRowMs},${l.perTokenMs}`,
    ];
  };
  const rounds = f.sized('rounds', 3, 1);
  const rows: CaseResult[] = [];
  let nats: NatsServerProcess | null = null;
  const subs: SubServerProcess[] = [];
  let pair: NetnsPair | null = null;
  let relay: RelayHandle | null = null;
  const relayWhere = f.str('relay', 'entry');
  if (relayWhere !== 'entry' && relayWhere !== 'process') throw new Error(`--relay must be entry or process, got "${relayWhere}"`);
  const engines: RemoteEngine[] = [];
  const netnsReason = netnsUnavailableReason();
  // the cross-host case's added latency alone, on the large model in this process: what that delay leaves of in-process
  const delayOnly = new DelayLine(delayMs);
  try {
    // Everything starts before the first measurement; then the cases alternate, round after
    // round, so a burst of load from other work on the machine hits all of them alike.
    nats = await startNatsServer();
    subs.push(await spawnSubServer({ args: subArgs(nats.url, 'bench-local'), timeoutMs: 90_000 }));
    if (!netnsReason) pair = createNetnsPair();
    relay =
      relayWhere === 'process'
        ? await spawnRelay(pair?.hostIp ?? '127.0.0.1', nats.port, delayMs)
        : await inEntryRelay(pair?.hostIp ?? '127.0.0.1', nats.port, delayMs);
    subs.push(
      await spawnSubServer({ args: subArgs(`nats://${pair?.hostIp ?? '127.0.0.1'}:${relay.port}`, 'bench-remote'), wrap: pair?.wrap, timeoutMs: 90_000 }),
    );
    // two sub-servers of one model name: each pair talks on its own subject prefix, so each runner reaches only its own
    const separate = await connectTo(nats.url, 'bench-local');
    engines.push(separate);
    const cross = await connectTo(nats.url, 'bench-remote');
    engines.push(cross);
    // both models remote, each in its own process on loopback: one mesh, so their handoffs go sub-server to sub-server
    subs.push(await spawnSubServer({ args: subArgs(nats.url, 'bench-both', 'small'), timeoutMs: 90_000 }));
    subs.push(await spawnSubServer({ args: subArgs(nats.url, 'bench-both'), timeoutMs: 90_000 }));
    const mesh = new RemoteMesh();
    const both = { small: await connectTo(nats.url, 'bench-both', 'small', mesh), large: await connectTo(nats.url, 'bench-both', 'large', mesh) };
    engines.push(both.small, both.large);
    console.error(
      `[distributed] cross-host: ${netnsReason ? `relay on loopback (${netnsReason})` : 'sub-server in its own network namespace'}, ${delayMs} ms each way; ${rounds} rounds`,
    );
    for (let round = 1; round <= rounds; round++) {
      console.error(`[distributed] round ${round}/${rounds}`);
      const natsPid = nats.child.pid ?? -1;
      rows.push({ ...(await closedLoop('in-process', null, w, { engines: [], pids: [], natsPid })), round });
      rows.push({ ...(await closedLoop('delay-only', delayOnly, w, { engines: [], pids: [], natsPid })), round });
      rows.push({ ...(await closedLoop('separate-process', separate, w, { engines: [separate], pids: [subs[0].pid], natsPid })), round });
      rows.push({ ...(await closedLoop('cross-host', cross, w, { engines: [cross], pids: [subs[1].pid], natsPid })), round });
      rows.push({
        ...(await closedLoop('both-remote', both.large, w, { engines: [both.small, both.large], pids: [subs[2].pid, subs[3].pid], natsPid }, both.small)),
        round,
      });
    }
  } finally {
    for (const e of engines) await e.close().catch(() => {});
    for (const s of subs) await s.stop();
    if (relay) await relay.stop();
    await delayOnly.close();
    pair?.destroy();
    await nats?.stop();
  }
  const relayStats = relay?.stats() ?? '';
  printTable(rows as unknown as Record<string, unknown>[]);
  const median = (label: string) =>
    percentile(
      rows.filter((r) => r.case === label).map((r) => r.tok_s),
      50,
    );
  const [inProc, delayed, sep, cross, bothRemote] = ['in-process', 'delay-only', 'separate-process', 'cross-host', 'both-remote'].map(median);
  const held = delayOnly.stats();
  console.log(
    `median of ${rounds} rounds: in-process ${inProc.toFixed(1)} tok/s, separate process ${sep.toFixed(1)} (${((sep / inProc) * 100).toFixed(1)}%), cross-host ${cross.toFixed(1)} (${((cross / inProc) * 100).toFixed(1)}%; target ≥ 93% at concurrency 8, issue 31), both remote ${bothRemote.toFixed(1)} (${((bothRemote / inProc) * 100).toFixed(1)}%)`,
  );
  console.log(
    `the delay alone (large in-process, every message to and from it held ${held.meanHoldMs.toFixed(3)} ms on average): ${delayed.toFixed(1)} tok/s, ${((delayed / inProc) * 100).toFixed(1)}% of in-process; cross-host keeps ${((cross / delayed) * 100).toFixed(1)}% of that`,
  );
  if (relayStats) console.log(relayStats);
  return {
    suite: 'distributed',
    settings: {
      models:
        'small in the entry; large in-process / its engine in a sub-server process over NATS (loopback) / in a sub-server across network namespaces; both-remote: small and large each in a sub-server process (loopback), handing off to each other over NATS',
      runners: `simulated, real clock: small ${PAPER_R2R_PROFILE.stepMs.small} ms/step, large ${PAPER_R2R_PROFILE.stepMs.large} ms/step (paper R2R profile, + prefill ms/token ${JSON.stringify(PAPER_R2R_PROFILE.prefillMsPerToken)})`,
      routing:
        w.largeStay > 0
          ? `Markov: small→large with p=${w.p} (token discarded), large keeps the request with probability ${w.largeStay} per token (${(1 / (1 - w.largeStay)).toFixed(1)} tokens a visit)`
          : `R2R Markov p=${w.p}: small→large token discarded, large hands back after one kept token`,
      mode: 'async-delayed',
      ...w,
      rounds,
      statistic: 'median over rounds of committed tokens / (first dispatch → last completion)',
      cross_host: `${!netnsReason ? 'sub-server in its own network namespace (veth pair)' : `sub-server on loopback (ip netns unavailable: ${netnsReason})`}, reaching nats-server through a relay (${relayWhere === 'entry' ? "on the entry's event loop" : 'own process'}) that holds every chunk ${delayMs} ms each way`,
      relay: relayStats,
      delay_only: `the large model in the entry's process behind a delay line holding every arrival, release, report and handoff ${delayMs} ms each way (mean hold ${held.meanHoldMs.toFixed(3)} ms, ${held.items} items): the relay's added latency without NATS, serialising or another process`,
      transport:
        "remote engine: the engine protocol over one ordered NATS link per replica (structured clone frames, one per turn of the sender's loop, each carrying the cumulative ack); only handoffs, commits and finishes cross",
    },
    results: {
      in_process_tok_s: inProc,
      separate_process_tok_s: sep,
      cross_host_tok_s: cross,
      both_remote_tok_s: bothRemote,
      separate_process_ratio: sep / inProc,
      cross_host_ratio: cross / inProc,
      delay_only_tok_s: delayed,
      delay_only_ratio: delayed / inProc,
      cross_host_of_delay_only: cross / delayed,
      both_remote_ratio: bothRemote / inProc,
      cases: rows,
    },
  };
}
