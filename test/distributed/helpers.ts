// Shared rig for the distributed tests: a private nats-server, in-test replicas, step scripts to compare runners on.
import type { NatsConnection } from '@nats-io/transport-node';
import { GREEDY, type ModelRunner, type StepOutput, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { NO_WANTS, type TokenSignals } from '../../shared/algorithm.ts';
import { openNats } from '../../runtime/distributed/natsConnection.ts';
import { NatsSubServer } from '../../runtime/distributed/natsSubServer.ts';
import { simModel, type SimLatency } from '../../runtime/distributed/simModel.ts';
import { natsServerBinary } from '../../runtime/bench/rigs/natsServerProcess.ts';

export const HAVE_NATS = natsServerBinary() !== null;

export const ZERO: SimLatency = { baseMs: 0, perRowMs: 0, perTokenMs: 0 };

export interface TestReplica {
  server: NatsSubServer;
  nc: NatsConnection;
  /** Abrupt death: the connection drops without a goodbye (subscriptions vanish, heartbeats stop). */
  crash(): Promise<void>;
  close(): Promise<void>;
}

export async function startReplica(url: string, model: string, replica: string, opts: { latency?: SimLatency; heartbeatMs?: number; entryTimeoutMs?: number; kvCapacityTokens?: number; maxAhead?: number } = {}): Promise<TestReplica> {
  const nc = await openNats({ servers: url, name: `test-replica-${replica}` });
  const runner = simModel({ name: model, latency: opts.latency ?? ZERO, maxAhead: opts.maxAhead });
  const server = await NatsSubServer.start(nc, runner, { model, replica, kvCapacityTokens: opts.kvCapacityTokens ?? 10_000, heartbeatMs: opts.heartbeatMs ?? 50, entryTimeoutMs: opts.entryTimeoutMs, log: () => {} });
  return {
    server,
    nc,
    crash: async () => {
      await nc.close();
    },
    close: async () => {
      await server.close();
      await nc.close();
    },
  };
}

/** Runs one step on a runner whatever its sync/async shape. */
export async function stepOf(runner: ModelRunner, rows: StepRow[]): Promise<TokenSignals[]> {
  const out: StepOutput = await runner.step(rows);
  return out.rows;
}

/**
 * Drives `runners` (a reference first) through the same sequence: `requests` prefills, then
 * `rounds` steps where each request feeds back its sampled token (every third round extends with
 * two extra tokens), all in one batch. Returns each runner's signals, step by step.
 */
export async function driveSame(runners: ModelRunner[], requests: number, rounds: number, opts: { cacheBase?: number; between?: (round: number) => Promise<void> } = {}): Promise<TokenSignals[][][]> {
  const base = opts.cacheBase ?? 1000;
  const results: TokenSignals[][][] = runners.map(() => []);
  const fed = new Array(requests).fill(0);
  let next: number[][] = Array.from({ length: requests }, (_, i) => [1, 4 + (i % 10), 5 + ((i * 3) % 10), 6]);
  for (let round = 0; round <= rounds; round++) {
    if (round > 0) await opts.between?.(round);
    const rows: StepRow[] = next.map((tokens, i) => ({
      cacheId: base + i,
      requestId: `r${i}`,
      tokens,
      position: fed[i],
      sampling: { ...GREEDY, seed: i },
      wants: NO_WANTS,
    }));
    const outs = await Promise.all(runners.map((r) => stepOf(r, rows)));
    outs.forEach((o, k) => results[k].push(o));
    for (let i = 0; i < requests; i++) fed[i] += next[i].length;
    next = outs[0].map((s, i) => (round % 3 === 2 ? [s.token, 4 + (i % 7), 7] : [s.token]));
  }
  return results;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function until(cond: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`${what} not met within ${ms} ms`);
    await sleep(10);
  }
}
