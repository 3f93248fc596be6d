// Issue 34 finding 5 as a scenario: nats-server down under mixed traffic; local requests keep their latency, remote ones get 503 within the bound, all recovers.
import { expect } from 'vitest';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { simModel } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import type { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { percentile } from '../../runtime/util/stats.ts';
import { sleep, until } from './helpers.ts';
import { serve, type Served } from './serving.ts';
import { watchHeartbeats } from './entryProcess.ts';

interface Call {
  model: string;
  /** ms since the scenario began. */
  start: number;
  ms: number;
  status: number;
  code?: string;
  retryAfter: string | null;
  error?: string;
  tokens?: number;
}

export interface OutageFigures {
  outageMs: number;
  boundMs: number;
  /** Local (`small`) latencies, ms: before, during and after the outage. */
  local: Record<'before' | 'during' | 'after', { n: number; p50: number; p99: number; max: number }>;
  /** Remote requests started while NATS was down: answered 503 in how long. */
  refused: { n: number; p50: number; max: number };
  /** Remote requests in flight at the cut: how they ended, and when (ms after the cut). */
  inFlight: { n: number; ok: number; failed: number; endedByMs: number };
  /** From nats-server's return to the first remote request answered 200 (ms), and how many remote requests went after that. */
  recoveryMs: number;
  after: { n: number; ok: number };
  queuedMax: number;
  healthzDuring: { large: boolean; small: boolean; ok: boolean; status: number; health: number };
}

const LOCAL_CLIENTS = 2;
/** Open loop, as the clients were: a new remote request every this many ms, whatever the answers. */
const REMOTE_EVERY_MS = 125;

/**
 * An entry in this process (small simulated here, `large` on a sub-server process, maxConcurrency 8)
 * under mixed traffic: 2 closed-loop clients on `small`, an open loop on `large` and R-Stitch.
 * nats-server is SIGKILLed for `outageMs` and started again on its port.
 */
export async function brokerOutage(opts: {
  outageMs: number;
  boundMs?: number;
  beforeMs?: number;
  afterMs?: number;
  log?: (l: string) => void;
}): Promise<OutageFigures> {
  const log = opts.log ?? console.log;
  const beforeMs = opts.beforeMs ?? 3000;
  const afterMs = opts.afterMs ?? 8000;
  let nats: NatsServerProcess | undefined;
  let sub: SubServerProcess | undefined;
  let entry: Served | undefined;
  try {
    nats = await startNatsServer();
    sub = await spawnSubServer({
      args: ['--model', 'large', '--nats', nats.url, '--replica', 'large-a', '--heartbeat-ms', '100', '--sim', '--sim-latency', '8,0,0'],
      timeoutMs: 90_000,
    });
    const runners = new Map<string, ModelRunner>([['small', simModel({ name: 'small', latency: { baseMs: 1, perRowMs: 0, perTokenMs: 0 } })]]);
    const remote = {
      nats: nats.url,
      heartbeatTimeoutMs: 2500,
      connectTimeoutMs: 20_000,
      ...(opts.boundMs === undefined ? {} : { unreachableAfterMs: opts.boundMs }),
    };
    entry = await serve([{ name: 'small' }, { name: 'large', remote }], runners, { maxConcurrency: 8, maxQueue: 256 });
    const engine = entry.service.threads.get('large') as RemoteEngine;
    const boundMs = opts.boundMs ?? 5000;
    const url = entry.server.url;
    const t0 = performance.now();
    const now = () => performance.now() - t0;
    const calls: Call[] = [];
    const call = async (model: string, maxTokens: number): Promise<Call> => {
      const start = now();
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: `${Math.round(start) % 900}*7` }], max_tokens: maxTokens }),
        signal: AbortSignal.timeout(120_000),
      });
      const body = (await res.json()) as {
        choices?: { message: { content: string } }[];
        usage?: { completion_tokens: number };
        error?: { message: string; code: string };
      };
      const c: Call = {
        model,
        start,
        ms: now() - start,
        status: res.status,
        code: body.error?.code,
        retryAfter: res.headers.get('retry-after'),
        error: body.error?.message,
        tokens: body.usage?.completion_tokens,
      };
      calls.push(c);
      return c;
    };
    let running = true;
    let queuedMax = 0;
    const watch = setInterval(() => (queuedMax = Math.max(queuedMax, entry!.service.cluster.queuedCount)), 20);
    const locals = Array.from({ length: LOCAL_CLIENTS }, async () => {
      while (running) await call('small', 20);
    });
    const remotes: Promise<Call>[] = [];
    const open = setInterval(() => {
      if (running) remotes.push(call(remotes.length % 4 === 3 ? 'r-stitch' : 'large', 60));
    }, REMOTE_EVERY_MS);
    try {
      await sleep(beforeMs);
      const inFlightAtCut = engine.replicaViews()[0]?.requests ?? 0;
      const { port } = nats;
      nats.child.kill('SIGKILL');
      const cut = now();
      log(`nats-server killed at ${Math.round(cut)} ms with ${inFlightAtCut} requests on the replica`);
      // /healthz once the bound has passed: the remote model is down, the local one is not
      await sleep(Math.min(opts.outageMs - 500, boundMs + 1000));
      const hzRes = await fetch(`${url}/healthz`);
      const hz = (await hzRes.json()) as { ok: boolean; models: { name: string; down: boolean }[] };
      const healthStatus = (await fetch(`${url}/health`)).status;
      // /healthz: not everything serves (503, ok false); /health: the entry can still serve its local model (200)
      const healthzDuring = {
        large: hz.models.find((m) => m.name === 'large')!.down,
        small: hz.models.find((m) => m.name === 'small')!.down,
        ok: hz.ok,
        status: hzRes.status,
        health: healthStatus,
      };
      await sleep(Math.max(0, opts.outageMs - (now() - cut)));
      nats = await startNatsServer({ port });
      const back = now();
      log(`nats-server back at ${Math.round(back)} ms (down ${Math.round(back - cut)} ms)`);
      await sleep(afterMs);
      running = false;
      clearInterval(open);
      await Promise.all(locals);
      await Promise.all(remotes);
      clearInterval(watch);

      // nothing left: the entry holds no request, and the replica freed all it held (the releases waited in the link)
      await until(() => entry!.service.cluster.idle, 10_000, 'entry idle');
      const beats = await watchHeartbeats(nats.url, 'large');
      try {
        const since = performance.now();
        await until(() => (beats.latest.get('large-a')?.at ?? 0) > since && beats.latest.get('large-a')!.requests === 0, 15_000, 'the replica holding nothing');
      } finally {
        await beats.close();
      }
      expect(engine.stats.replicasLost).toBe(0);

      const lat = (cs: Call[]) => {
        const ms = cs.map((c) => c.ms).sort((a, b) => a - b);
        return { n: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms.at(-1) ?? NaN };
      };
      const small = calls.filter((c) => c.model === 'small');
      const big = calls.filter((c) => c.model !== 'small');
      // every local request answered, before, during and after
      expect(
        small.filter((c) => c.status !== 200),
        JSON.stringify(small.find((c) => c.status !== 200)),
      ).toEqual([]);
      const local = {
        before: lat(small.filter((c) => c.start + c.ms < cut)),
        during: lat(small.filter((c) => c.start >= cut && c.start < back)),
        after: lat(small.filter((c) => c.start >= back)),
      };
      // the cut and the entry's noticing it are a moment apart: requests started in it count as in flight
      const slack = 250;
      const refusedCalls = big.filter((c) => c.start >= cut + slack && c.start < back);
      const inFlightCalls = big.filter((c) => c.start < cut + slack && c.start + c.ms > cut);
      const afterCalls = big.filter((c) => c.start >= back);
      const firstOk = afterCalls.find((c) => c.status === 200);
      const figures: OutageFigures = {
        outageMs: back - cut,
        boundMs,
        local,
        refused: {
          n: refusedCalls.length,
          p50: percentile(
            refusedCalls.map((c) => c.ms),
            50,
          ),
          max: Math.max(...refusedCalls.map((c) => c.ms)),
        },
        inFlight: {
          n: inFlightCalls.length,
          ok: inFlightCalls.filter((c) => c.status === 200).length,
          failed: inFlightCalls.filter((c) => c.status !== 200).length,
          endedByMs: Math.max(0, ...inFlightCalls.map((c) => c.start + c.ms - cut)),
        },
        recoveryMs: firstOk ? firstOk.start + firstOk.ms - back : Infinity,
        after: { n: afterCalls.length, ok: afterCalls.filter((c) => c.status === 200).length },
        queuedMax,
        healthzDuring,
      };
      log(JSON.stringify(figures));
      const odd = big.filter((c) => c.status !== 200 && c.code !== 'model_unavailable');
      if (odd.length) log(`remote requests that failed otherwise: ${JSON.stringify(odd.map((c) => ({ ...c, start: Math.round(c.start - cut) })))}`);

      // local requests kept their latency: generous bounds (a shared 2-core machine), far below the outage itself
      expect(local.during.n).toBeGreaterThan(10);
      expect(local.during.max).toBeLessThan(Math.max(1000, 10 * local.before.p99));
      expect(local.during.p99).toBeLessThan(Math.max(500, 5 * local.before.p99));
      // remote requests during the outage: refused at once with 503 model_unavailable and Retry-After
      expect(refusedCalls.length).toBeGreaterThan(5);
      for (const c of refusedCalls) {
        expect(c.status, c.error).toBe(503);
        expect(c.code).toBe('model_unavailable');
        expect(Number(c.retryAfter)).toBeGreaterThanOrEqual(1);
      }
      expect(figures.refused.max).toBeLessThan(boundMs);
      // those in flight at the cut ended by the bound (with a clear error), none waited for the broker
      for (const c of inFlightCalls)
        if (c.status !== 200)
          expect(c.error).toMatch(/model large (cannot go on with this request|is down|cannot take requests): its NATS server has been unreachable/);
      expect(figures.inFlight.endedByMs).toBeLessThan(boundMs + 2000);
      expect(healthzDuring).toEqual({ large: true, small: false, ok: false, status: 503, health: 200 });
      // recovery by itself within 5 s of the broker's return; every remote request after that served
      expect(figures.recoveryMs).toBeLessThan(5000);
      const late = afterCalls.filter((c) => c.start >= back + 5000);
      expect(late.length).toBeGreaterThan(5);
      expect(late.filter((c) => c.status !== 200).map((c) => c.error)).toEqual([]);
      for (const c of big.filter((c) => c.status === 200)) expect(c.tokens).toBe(60);
      return figures;
    } finally {
      running = false;
      clearInterval(open);
      clearInterval(watch);
    }
  } finally {
    await entry?.close();
    await sub?.kill();
    await nats?.stop();
  }
}
