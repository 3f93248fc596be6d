// Two replicas of the large model in their own processes: new requests spread by load, and losing one hits only its own requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { simModel, type SimLatency } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { HAVE_NATS, until } from './helpers.ts';
import { complete, serve, type Completion, type Served } from './serving.ts';

const SMALL: SimLatency = { baseMs: 1, perRowMs: 0, perTokenMs: 0 };
const LARGE: SimLatency = { baseMs: 8, perRowMs: 0, perTokenMs: 0 };
/** Simulated requests write until max_tokens, so every one of them holds a cache on the large model to the end. */
const WORKLOAD = ['r-stitch', 'r2r', 'co-llm', 'large'].flatMap((model, m) =>
  [0, 1, 2, 3].map((k) => ({ model, prompt: `${19 * (k + 2) + m}-${k}`, seed: 300 + 10 * m + k })),
);

describe.skipIf(!HAVE_NATS)('two replicas of the large model, each its own process', () => {
  let nats: NatsServerProcess;
  const subs = new Map<string, SubServerProcess>();
  let local: Served;
  const sim = (names: string[]) => new Map<string, ModelRunner>(names.map((n) => [n, simModel({ name: n, latency: n === 'small' ? SMALL : LARGE })]));
  const startReplica = async (name: string) => {
    subs.set(
      name,
      await spawnSubServer({
        args: ['--model', 'large', '--nats', nats.url, '--replica', name, '--heartbeat-ms', '100', '--sim', '--sim-latency', `${LARGE.baseMs},0,0`],
        timeoutMs: 90_000,
      }),
    );
  };
  let spawned = 0;
  /** Each test starts from two live replicas, whatever the one before it killed. */
  const ensureTwo = async () => {
    while (subs.size < 2) await startReplica(`large-${String.fromCharCode(97 + spawned++)}`);
  };
  // Detection time is not measured here; a generous timeout keeps a busy machine from declaring a
  // starved replica lost, which would fail requests this test expects to finish.
  const entry = async (onReplicaLoss: 'fail' | 'recompute' = 'recompute') => {
    await ensureTwo();
    const served = await serve(
      [{ name: 'small' }, { name: 'large', remote: { nats: nats.url, heartbeatTimeoutMs: 2500, connectTimeoutMs: 20_000, onReplicaLoss } }],
      sim(['small']),
    );
    const runner = served.service.threads.get('large') as RemoteEngine;
    await until(() => runner.replicaViews().length === 2, 5000, 'both replicas known');
    // the model's capacity counts both replicas' memory, whichever the entry heard first
    expect(runner.liveCapacityTokens).toBe(runner.replicaViews().reduce((a, v) => a + v.kvCapacityTokens, 0));
    return { served, runner };
  };
  const run = (s: Served, maxTokens: number) => WORKLOAD.map((w) => complete(s.server.url, w.model, w.prompt, w.seed, maxTokens));

  beforeAll(async () => {
    nats = await startNatsServer();
    await ensureTwo();
    local = await serve([{ name: 'small' }, { name: 'large' }], sim(['small', 'large']));
  }, 120_000);

  afterAll(async () => {
    await local?.close();
    for (const s of subs.values()) await s.kill();
    await nats?.stop();
  });

  /** Runs the workload in-process for reference, starts it on `remote`, and waits until its requests sit on both replicas. */
  async function startOnBoth(remote: { served: Served; runner: RemoteEngine }) {
    const want = await Promise.all(run(local, 160));
    const inflight = run(remote.served, 160);
    await until(() => remote.runner.replicaViews().every((v) => v.requests >= 3), 30_000, 'requests on both replicas');
    const views = remote.runner.replicaViews();
    // spread by load: with equal capacities neither replica holds much more than the other
    const [a, b] = views.map((v) => v.requests);
    expect(Math.abs(a - b)).toBeLessThanOrEqual(Math.max(3, (a + b) / 3));
    return { want, inflight, views };
  }

  /** Starts the workload on both replicas, kills one, and returns what happened. */
  async function killOneMidway(remote: { served: Served; runner: RemoteEngine }) {
    const { want, inflight, views } = await startOnBoth(remote);
    const killed = views[0].name;
    await subs.get(killed)!.kill();
    subs.delete(killed);
    const got: Completion[] = await Promise.all(inflight);
    return { want, got, killed };
  }

  it('fail policy: only the requests whose state was on the dead replica fail; the entry keeps serving on the other', async () => {
    const remote = await entry('fail');
    try {
      const { want, got, killed } = await killOneMidway(remote);
      const failed = got.filter((g) => g.status !== 200);
      // every failure is a request whose state was on the killed replica
      for (const f of failed) {
        expect(f.status).toBe(503);
        expect(f.error).toMatch(new RegExp(`model large cannot go on with this request: replica ${killed} of model large is gone`));
      }
      expect(failed.length).toBeGreaterThan(0);
      // everything else finished, token for token as in-process, among them requests held by the survivor
      const ok = got.filter((g) => g.status === 200);
      expect(ok.length).toBeGreaterThan(0);
      for (let i = 0; i < got.length; i++) if (got[i].status === 200) expect(got[i]).toEqual(want[i]);
      // the model stayed up: not down, new requests served at once by the survivor
      expect(remote.served.service.cluster.engine('large')?.down).toBe(false);
      // its capacity now counts only the survivor's memory
      expect(remote.runner.liveCapacityTokens).toBe(remote.runner.replicaViews()[0].kvCapacityTokens);
      expect(remote.runner.replicaViews().map((v) => v.name)).not.toContain(killed);
      // /metrics shows it: one replica left, one lost, every request placed
      const metrics = await (await fetch(`${remote.served.server.url}/metrics`)).text();
      const value = (name: string) => Number(new RegExp(`^${name}\\{model="large"\\} (\\S+)$`, 'm').exec(metrics)?.[1]);
      expect(value('tokenrouter_remote_replicas')).toBe(1);
      expect(value('tokenrouter_remote_replicas_lost_total')).toBe(1);
      expect(value('tokenrouter_remote_placements_total')).toBe(remote.runner.stats.placed);
      expect(value('tokenrouter_remote_placements_total')).toBeGreaterThanOrEqual(WORKLOAD.length);
      const again = await complete(remote.served.server.url, WORKLOAD[0].model, WORKLOAD[0].prompt, WORKLOAD[0].seed, 40);
      const ref = await complete(local.server.url, WORKLOAD[0].model, WORKLOAD[0].prompt, WORKLOAD[0].seed, 40);
      expect(again).toEqual(ref);
    } finally {
      await remote.served.close();
    }
  }, 120_000);

  it('SIGTERM drains a replica: no request fails, new ones go to the other, and the process leaves once its requests ended', async () => {
    const remote = await entry();
    try {
      const { want, inflight, views } = await startOnBoth(remote);
      const [victim, other] = views;
      const proc = subs.get(victim.name)!;
      subs.delete(victim.name);
      const exited = new Promise<number | null>((r) => proc.child.once('exit', (code) => r(code)));
      proc.child.kill('SIGTERM');
      // the entry hears it is draining, and new requests meanwhile are placed on the other replica only
      const view = (name: string) => remote.runner.replicaViews().find((v) => v.name === name);
      await until(() => view(victim.name)?.draining === true, 5000, 'drain announced');
      const placed = [view(victim.name)!.placed, view(other.name)!.placed];
      const more = [0, 1, 2].map((k) => complete(remote.served.server.url, 'large', `${k}*7`, 900 + k, 20));
      const moreWant = [0, 1, 2].map((k) => complete(local.server.url, 'large', `${k}*7`, 900 + k, 20));
      expect(await Promise.all(more)).toEqual(await Promise.all(moreWant));
      expect(view(victim.name)?.placed ?? placed[0]).toBe(placed[0]);
      expect(view(other.name)!.placed).toBeGreaterThanOrEqual(placed[1] + 3);
      const got = await Promise.all(inflight);
      for (let i = 0; i < got.length; i++) expect(got[i], got[i].error).toEqual(want[i]);
      // with its last request over, the process leaves by itself, well before the 30 s drain timeout
      expect(await exited).toBe(0);
      expect(proc.output()).toMatch(/drained; shutting down/);
      expect(remote.runner.replicaViews().map((v) => v.name)).toEqual([other.name]);
    } finally {
      await remote.served.close();
    }
  }, 120_000);
});
