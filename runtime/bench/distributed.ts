// Suite distributed: committed throughput with the large model in-process, in a separate process, and across namespaces with 1 ms each way.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRealClock } from '../clock/clock.ts';
import { Cluster } from '../engine/cluster.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { NatsRunner } from '../distributed/natsRunner.ts';
import { startNatsServer, stopChild, type NatsServerProcess } from '../distributed/natsServerProcess.ts';
import { createNetnsPair, netnsUnavailableReason, type NetnsPair } from '../distributed/netnsPair.ts';
import { simModel, type SimLatency } from '../distributed/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../distributed/subServerProcess.ts';
import { markovAlgorithm, r2rMarkov } from '../sim/markovAlgorithm.ts';
import { PAPER_R2R_PROFILE } from '../sim/paperProfile.ts';
import { printTable, type BenchOptions, type BenchReport } from './benchSuite.ts';
import { SuiteFlags } from './suiteFlags.ts';

interface Workload {
  concurrency: number;
  requests: number;
  promptLength: number;
  maxTokens: number;
  p: number;
  thresholds: Record<string, number>;
  maxWaitMs: number;
}

interface CaseResult {
  case: string;
  committed: number;
  wall_s: number;
  tok_s: number;
  large_batches: number;
  mean_large_batch: number;
  /** Wall ms per large-model step as the entry sees it: model time plus transport. */
  mean_large_step_ms: number;
  mean_e2e_ms: number;
}

const latencyOf = (name: 'small' | 'large'): SimLatency => ({
  baseMs: PAPER_R2R_PROFILE.stepMs[name],
  perRowMs: 0,
  perTokenMs: PAPER_R2R_PROFILE.prefillMsPerToken[name],
});

/** N closed-loop clients on the real clock; throughput = committed tokens / (first dispatch → last completion). */
async function closedLoop(label: string, large: ModelRunner, w: Workload): Promise<CaseResult> {
  const small = simModel({ name: 'small', latency: latencyOf('small'), vocab: 'hash' });
  const cluster = new Cluster({
    clock: createRealClock(),
    mode: 'async-delayed',
    maxConcurrency: w.concurrency,
    maxWaitMs: w.maxWaitMs,
    models: [
      { name: 'small', runner: small, maxBatch: 64, threshold: w.thresholds.small ?? 1 },
      { name: 'large', runner: large, maxBatch: 64, threshold: w.thresholds.large ?? 1 },
    ],
  });
  const algorithm = markovAlgorithm(r2rMarkov(w.p));
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

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The relay in its own process, as a network would be: its timers must not share the entry's event loop. */
function spawnRelay(listenHost: string, natsPort: number, delayMs: number): Promise<{ child: ChildProcess; port: number; output: () => string }> {
  const script = path.resolve(HERE, '../distributed/delayRelay.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', script, '--listen', `${listenHost}:0`, '--target', `127.0.0.1:${natsPort}`, '--delay-ms', String(delayMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /relay listening on \S+:(\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]), output: () => out });
    });
    child.once('exit', (code) => reject(new Error(`relay exited (code ${code}): ${out}`)));
  });
}

export async function run(opts: BenchOptions): Promise<BenchReport> {
  const f = new SuiteFlags(opts.flags);
  const concurrency = f.num('concurrency', 8);
  const w: Workload = {
    concurrency,
    requests: concurrency * f.sized('requests-per-client', 4, 2),
    promptLength: f.num('prompt', 32),
    maxTokens: f.sized('tokens', 128, 48),
    p: f.num('p', 0.35),
    thresholds: { small: f.num('threshold-small', 1), large: f.num('threshold-large', 1) },
    maxWaitMs: f.num('max-wait-ms', 20),
  };
  const delayMs = f.num('delay-ms', 1);
  const subLatency = latencyOf('large');
  const subArgs = (url: string, replica: string) => ['--model', 'large', '--nats', url, '--replica', replica, '--sim', '--sim-vocab', 'hash', '--sim-latency', `${subLatency.baseMs},${subLatency.perRowMs},${subLatency.perTokenMs}`];
  const rows: CaseResult[] = [];
  let nats: NatsServerProcess | null = null;
  let sub: SubServerProcess | null = null;
  let pair: NetnsPair | null = null;
  let relay: Awaited<ReturnType<typeof spawnRelay>> | null = null;
  const runners: NatsRunner[] = [];
  const netnsReason = netnsUnavailableReason();
  let crossKind = 'netns';
  try {
    console.error('[distributed] in-process …');
    rows.push(await closedLoop('in-process', simModel({ name: 'large', latency: subLatency, vocab: 'hash' }), w));

    nats = await startNatsServer();
    console.error('[distributed] separate process, same host …');
    sub = await spawnSubServer({ args: subArgs(nats.url, 'bench-local'), timeoutMs: 90_000 });
    const r1 = await NatsRunner.connect({ model: 'large', servers: nats.url });
    runners.push(r1);
    rows.push(await closedLoop('separate-process', r1, w));
    await r1.close();
    await sub.stop();
    sub = null;

    console.error(`[distributed] cross-host: ${netnsReason ? `relay on loopback (${netnsReason})` : 'sub-server in its own network namespace'}, ${delayMs} ms each way …`);
    if (netnsReason) crossKind = 'loopback-relay';
    else pair = createNetnsPair();
    relay = await spawnRelay(pair?.hostIp ?? '127.0.0.1', nats.port, delayMs);
    const relayHost = pair?.hostIp ?? '127.0.0.1';
    sub = await spawnSubServer({ args: subArgs(`nats://${relayHost}:${relay.port}`, 'bench-remote'), wrap: pair?.wrap, timeoutMs: 90_000 });
    const r2 = await NatsRunner.connect({ model: 'large', servers: nats.url });
    runners.push(r2);
    rows.push(await closedLoop('cross-host', r2, w));
  } finally {
    for (const r of runners) await r.close().catch(() => {});
    if (sub) await sub.stop();
    if (relay) {
      await stopChild(relay.child);
    }
    pair?.destroy();
    await nats?.stop();
  }
  const relayStats = relay ? /relay stats: .*/.exec(relay.output())?.[0] ?? '' : '';
  printTable(rows as unknown as Record<string, unknown>[]);
  const [inProc, sep, cross] = rows.map((r) => r.tok_s);
  console.log(`separate process: ${((sep / inProc) * 100).toFixed(1)}% of in-process; cross-host: ${((cross / inProc) * 100).toFixed(1)}% (target ≥ 90% at concurrency 8)`);
  if (relayStats) console.log(relayStats);
  return {
    suite: 'distributed',
    settings: {
      models: 'small in the entry; large in-process / in a sub-server process over NATS (loopback) / in a sub-server across network namespaces',
      runners: `simulated, real clock: small ${PAPER_R2R_PROFILE.stepMs.small} ms/step, large ${PAPER_R2R_PROFILE.stepMs.large} ms/step (paper R2R profile, + prefill ms/token ${JSON.stringify(PAPER_R2R_PROFILE.prefillMsPerToken)})`,
      routing: `R2R Markov p=${w.p}: small→large token discarded, large hands back after one kept token`,
      mode: 'async-delayed',
      ...w,
      cross_host: crossKind === 'netns' ? `sub-server in its own network namespace (veth pair), reaching nats-server through a relay process holding every chunk ${delayMs} ms each way` : `relay on loopback, ${delayMs} ms each way (ip netns unavailable: ${netnsReason})`,
      relay: relayStats,
      transport: 'NATS request/reply, binary step codec, nats-server 2.9 on 127.0.0.1',
    },
    results: {
      in_process_tok_s: inProc,
      separate_process_tok_s: sep,
      cross_host_tok_s: cross,
      separate_process_ratio: sep / inProc,
      cross_host_ratio: cross / inProc,
      cases: rows,
    },
  };
}
