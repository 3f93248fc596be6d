// Issue 30 item 2: both models remote, handoffs go sub-server to sub-server over NATS; the entry's links carry no handoff payload, and the output is the in-process one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import { openNats } from '../../runtime/transport/nats/natsConnection.ts';
import { decodeFrame } from '../../runtime/transport/nats/natsLink.ts';
import type { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { simModel, type SimLatency } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { HAVE_NATS, until } from './helpers.ts';
import { complete, serve, type Served } from './serving.ts';

const LATENCY: Record<string, SimLatency> = { small: { baseMs: 1, perRowMs: 0, perTokenMs: 0 }, large: { baseMs: 3, perRowMs: 0, perTokenMs: 0 } };
/**
 * R-Stitch and Co-LLM switch model several times a request on the simulated models; `large` alone never hands off.
 * (R2R and CITER at their validation-chosen defaults, τ 0.01 and 0.999, reject nearly every small token of the
 * simulated models' random signals, so `large` writes almost every token and "both models wrote" would not hold.)
 */
const WORKLOAD = ['r-stitch', 'co-llm', 'large'].flatMap((model, m) =>
  [0, 1, 2, 3, 4, 5].map((k) => ({ model, prompt: `${17 * (k + 3) + m}*${k}`, seed: 40 + 10 * m + k })),
);

/** Every numbered message on the deployment's subjects once (resends of a frame counted once), by path and kind. */
class NatsTap {
  /** `${path} ${kind}` → messages; path: entry→engine, engine→entry, engine→engine. */
  readonly kinds = new Map<string, number>();
  /** Arrivals carried engine to engine, by receiving replica subject. */
  readonly peerArrivals = new Map<string, number>();
  private readonly seen = new Set<string>();

  constructor(nc: NatsConnection) {
    nc.subscribe('tokenrouter.>', { callback: (_e, msg) => this.frame(msg.subject, msg.data) });
  }

  private frame(subject: string, data: Uint8Array): void {
    const f = decodeFrame(data);
    if (!f || f.seq === undefined || subject.endsWith('.heartbeat')) return;
    const key = `${subject} ${f.session} ${f.seq}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    const path = subject.endsWith('.in') ? 'entry→engine' : subject.endsWith('.peer') ? 'engine→engine' : 'engine→entry';
    for (const m of (f.messages ?? []) as { type: string; arrivals?: unknown[] }[]) {
      this.count(this.kinds, `${path} ${m.type}`, 1);
      if (m.type === 'arrive') this.count(this.kinds, `${path} arrivals`, m.arrivals?.length ?? 0);
      if (path === 'engine→engine') this.count(this.peerArrivals, subject.slice(0, -'.peer'.length), m.arrivals?.length ?? 0);
    }
  }

  private count(map: Map<string, number>, key: string, n: number): void {
    map.set(key, (map.get(key) ?? 0) + n);
  }

  get(key: string): number {
    return this.kinds.get(key) ?? 0;
  }
}

describe.skipIf(!HAVE_NATS)('remote ↔ remote: both models in sub-server processes, large with two replicas', () => {
  let nats: NatsServerProcess;
  const subs: SubServerProcess[] = [];
  let local: Served;
  let tapNc: NatsConnection;

  beforeAll(async () => {
    nats = await startNatsServer();
    const sub = (model: string, replica: string) =>
      spawnSubServer({
        args: ['--model', model, '--nats', nats.url, '--replica', replica, '--heartbeat-ms', '100', '--sim', '--sim-latency', `${LATENCY[model].baseMs},0,0`],
        timeoutMs: 90_000,
      });
    subs.push(...(await Promise.all([sub('small', 'small-a'), sub('large', 'large-a'), sub('large', 'large-b')])));
    local = await serve(
      [{ name: 'small' }, { name: 'large' }],
      new Map<string, ModelRunner>(['small', 'large'].map((n) => [n, simModel({ name: n, latency: LATENCY[n] })])),
    );
    tapNc = await openNats({ servers: nats.url, name: 'test-tap' });
  }, 120_000);

  afterAll(async () => {
    await tapNc?.close();
    await local?.close();
    for (const s of subs) await s.kill();
    await nats?.stop();
  });

  it('hands requests off engine to engine: the output is the in-process one, and the entry carried no handoff', async () => {
    const tap = new NatsTap(tapNc);
    await tapNc.flush();
    const remoteCfg = { nats: nats.url, heartbeatTimeoutMs: 2500, connectTimeoutMs: 20_000 };
    const remote = await serve(
      [
        { name: 'small', remote: remoteCfg },
        { name: 'large', remote: remoteCfg },
      ],
      new Map(),
    );
    try {
      const large = remote.service.threads.get('large') as RemoteEngine;
      await until(() => large.replicaViews().length === 2, 5000, 'both large replicas');
      const [want, got] = await Promise.all(
        [local, remote].map((s) => Promise.all(WORKLOAD.map((w) => complete(s.server.url, w.model, w.prompt, w.seed, 64)))),
      );
      for (const g of got) expect(g.status, g.error).toBe(200);
      expect(got).toEqual(want);
      // the algorithms did switch: large wrote part of the routed requests' output
      const routed = got.filter((_g, i) => WORKLOAD[i].model !== 'large');
      expect(routed.every((g) => (g.byModel?.large ?? 0) > 0 && (g.byModel?.small ?? 0) > 0)).toBe(true);
      await until(() => remote.service.cluster.activeRequests().next().done === true, 5000, 'all released');
      console.log(
        `[remote-handoff] NATS messages by path and kind: ${JSON.stringify(Object.fromEntries(tap.kinds))}; arrivals engine to engine by replica: ${JSON.stringify(Object.fromEntries(tap.peerArrivals))}`,
      );

      // the entry placed each request once, at its first model, and never passed a handoff on
      expect(tap.get('entry→engine arrivals')).toBe(WORKLOAD.length);
      expect(tap.get('entry→engine arrive')).toBeGreaterThan(0);
      expect(tap.get('engine→entry deliver')).toBe(0);
      // the handoffs went engine to engine: many, reaching both large replicas (each request's home there) and small
      const peerTotal = [...tap.peerArrivals.values()].reduce((a, b) => a + b, 0);
      expect(peerTotal).toBeGreaterThan(2 * routed.length);
      expect([...tap.peerArrivals.keys()].filter((s) => s.includes('.large.')).length).toBe(2);
      expect([...tap.peerArrivals.keys()].filter((s) => s.includes('.small.')).length).toBe(1);
      // the entry still knew where each request was: both large replicas took requests, and each was placed on one home there
      const views = large.replicaViews();
      expect(views.every((v) => v.placed > 0)).toBe(true);
      expect(views.reduce((a, v) => a + v.placed, 0)).toBe(WORKLOAD.length);
      expect(views.every((v) => v.requests === 0)).toBe(true);
    } finally {
      await remote.close();
    }
  }, 120_000);
});
