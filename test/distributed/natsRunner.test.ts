// NatsRunner against in-test sub-servers on a private nats-server: parity with in-process steps, replicas, failures.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NatsRunner } from '../../runtime/distributed/natsRunner.ts';
import { startNatsServer, type NatsServerProcess } from '../../runtime/bench/rigs/natsServerProcess.ts';
import { RemoteRunnerError } from '../../runtime/distributed/remoteRunnerError.ts';
import { decodeResult, decodeStep, encodeResult, encodeStep } from '../../runtime/distributed/stepCodec.ts';
import { simModel } from '../../runtime/distributed/simModel.ts';
import { GREEDY, type StepOutput, type StepRow } from '../../runtime/runner/modelRunner.ts';
import type { TokenSignals } from '../../shared/algorithm.ts';
import { driveSame, HAVE_NATS, sleep, startReplica, stepOf, until, ZERO, type TestReplica } from './helpers.ts';

/** A step's lookahead results per row, whether answered with the step or streamed after it. */
function aheadOf(out: StepOutput, n: number): Promise<TokenSignals[][]> {
  if (!out.aheadStream) return Promise.resolve((out.ahead ?? []).map((a) => [...a]));
  const rows: TokenSignals[][] = Array.from({ length: n }, () => []);
  return new Promise((resolve, reject) =>
    out.aheadStream!.listen(
      (part) => part.rows.forEach((sig, i) => sig && rows[i].push(sig)),
      (e) => (e ? reject(e) : resolve(rows)),
    ),
  );
}

/** A copy of `bytes` starting at an odd offset of a larger buffer, as a socket read may hand it over. */
function unaligned(bytes: Uint8Array): Uint8Array {
  const buf = new Uint8Array(bytes.length + 3);
  buf.set(bytes, 3);
  return buf.subarray(3);
}

describe('stepCodec', () => {
  it('round-trips rows exactly, from aligned and unaligned buffers', () => {
    const rows: StepRow[] = [
      { cacheId: 7, requestId: 'req-a', tokens: [1, 2, 3, 40000], position: 0, sampling: { temperature: 0.7, topP: 0.9, topK: 5, seed: 4294967295 }, wants: { topK: 4, hidden: true, heads: ['citer', 'r2r'] } },
      { cacheId: 2 ** 40, requestId: 'ünïcode', tokens: [9], position: 123, sampling: GREEDY, wants: { topK: 0, hidden: false, heads: [] } },
      { cacheId: 8, requestId: 'req-c', tokens: [5, 6], position: 17, sampling: { temperature: 1 / 3, topP: 1, topK: 0, seed: 12 }, wants: { topK: 4, hidden: true, heads: ['citer', 'r2r'] } },
      { cacheId: 9, requestId: 'req-d', tokens: [4], position: 30, sampling: { ...GREEDY, suppressEos: true }, wants: { topK: 0, hidden: false, heads: [] } },
    ];
    const meta = { entry: 'e1', seq: 3 };
    const bytes = encodeStep(meta, rows);
    for (const data of [bytes, unaligned(bytes)]) {
      const back = decodeStep(data);
      expect(back.meta).toEqual(meta);
      expect(back.rows).toEqual(rows);
    }
    // 4 rows, 8 tokens: a small header, ~70 bytes of JSON, then fixed columns; no JSON number arrays
    expect(bytes.length).toBeLessThan(460);
    expect(new TextDecoder().decode(bytes)).not.toContain('40000');
  });

  it('round-trips signals with top-k, heads and hidden states bit-exactly', () => {
    const sigs: TokenSignals[] = [
      { token: 11, entropy: 0.123456789012345, maxProb: 0.5, margin: 0.25, tokenProb: 0.5, topIds: [11, 3, 9], topProbs: [0.5, 0.25, 0.125], heads: { citer: 0.97, r2r: 1e-9 }, hidden: new Float32Array([1.5, -2, 3.25]) },
      { token: 2, entropy: Math.PI / 10, maxProb: 1, margin: 1, tokenProb: 1, topIds: [], topProbs: [], heads: {} },
    ];
    const bytes = encodeResult({ replica: 'tokenrouter.large.r.x.1', modelMs: 3.5 }, sigs);
    for (const data of [bytes, unaligned(bytes)]) {
      const back = decodeResult(data);
      expect(back.meta).toEqual({ replica: 'tokenrouter.large.r.x.1', modelMs: 3.5 });
      expect(back.rows).toEqual(sigs);
    }
  });
});

describe.skipIf(!HAVE_NATS)('NatsRunner over a real nats-server', () => {
  let nats: NatsServerProcess;
  const cleanup: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => {});
  });
  afterAll(async () => {
    await nats?.stop();
  });

  async function replica(name: string, opts: Parameters<typeof startReplica>[3] = {}): Promise<TestReplica> {
    const r = await startReplica(nats.url, 'large', name, opts);
    cleanup.push(() => r.close());
    return r;
  }

  async function runner(opts: Partial<Parameters<typeof NatsRunner.connect>[0]> = {}): Promise<NatsRunner> {
    const r = await NatsRunner.connect({ model: 'large', servers: nats.url, heartbeatTimeoutMs: 400, connectTimeoutMs: 5000, log: () => {}, ...opts });
    cleanup.push(() => r.close());
    return r;
  }

  it('answers every step exactly as the same runner in-process (prefill, decode, extend, release)', async () => {
    await replica('a');
    const remote = await runner();
    expect(remote.info).toEqual(simModel({ name: 'large', latency: ZERO }).info);
    const local = simModel({ name: 'large', latency: ZERO });
    const [want, got] = await driveSame([local, remote], 6, 8);
    expect(got).toEqual(want);
    for (let i = 0; i < 6; i++) remote.release(1000 + i);
    await until(() => remote.replicaViews()[0]?.caches === 0, 2000, 'entry-side release');
  });

  it('splits each answered part into network, wait at the replica and model time', async () => {
    await replica('a', { latency: { baseMs: 5, perRowMs: 0, perTokenMs: 0 } });
    const remote = await runner();
    await driveSame([simModel({ name: 'large', latency: ZERO }), remote], 3, 4);
    const s = remote.stats;
    expect(s.answered).toBe(s.parts);
    expect(s.answered).toBeGreaterThanOrEqual(5);
    // the replica sleeps 5 ms a step (Node timers may fire up to 1 ms early)
    expect(s.modelMs / s.answered).toBeGreaterThan(3.5);
    expect(s.queuedMs).toBeGreaterThanOrEqual(0);
    expect(s.networkMs).toBeGreaterThan(0);
  });

  it('spreads new caches over replicas and keeps each cache on the replica that holds it', async () => {
    const reps = [await replica('a'), await replica('b')];
    const remote = await runner();
    await until(() => remote.replicaViews().length === 2, 2000, 'both replicas known');
    expect(remote.kvCapacityTokens).toBe(20_000);
    const local = simModel({ name: 'large', latency: ZERO });
    const placements = new Map<number, string>();
    // one request per step, so each placement sees the load the earlier ones left
    for (let k = 0; k < 16; k++) {
      const [want, got] = await driveSame([local, remote], 1, 3, {
        cacheBase: 5000 + k * 10,
        between: async () => {
          const where = remote.placementOf(5000 + k * 10)!;
          if (placements.has(k)) expect(where).toBe(placements.get(k));
          placements.set(k, where);
        },
      });
      expect(got).toEqual(want);
    }
    // equal caches on equal capacities: placed by load, they split evenly
    expect(reps.map((r) => r.server.liveCaches)).toEqual([8, 8]);
    expect(new Set(placements.values()).size).toBe(2);
  });

  it('the KV capacity follows the live replicas: one joining raises it, one lost lowers it', async () => {
    await replica('a');
    const remote = await runner({ heartbeatTimeoutMs: 300 });
    expect(remote.kvCapacityTokens).toBe(10_000);
    const seen: number[] = [];
    remote.onCapacityChange((t) => seen.push(t));
    const b = await replica('b', { kvCapacityTokens: 30_000 });
    await until(() => seen.length === 1, 2000, 'capacity raised');
    expect(remote.kvCapacityTokens).toBe(40_000);
    await b.crash();
    await until(() => seen.length === 2, 2000, 'capacity lowered');
    expect(seen).toEqual([40_000, 10_000]);
  });

  it('places new caches by load: what other entries hold there counts', async () => {
    const a = await replica('a');
    // entry 1 fills replica a while it is the only one: 12 caches of 6 tokens
    const first = await runner();
    await driveSame([simModel({ name: 'large', latency: ZERO }), first], 12, 2, { cacheBase: 100 });
    expect(a.server.liveCaches).toBe(12);
    const b = await replica('b');
    // entry 2 learns both replicas, and a's load, from their heartbeats
    const second = await runner();
    await until(() => second.replicaViews().length === 2, 2000, 'both replicas known');
    await sleep(120);
    for (let k = 0; k < 12; k++) await driveSame([simModel({ name: 'large', latency: ZERO }), second], 1, 2, { cacheBase: 500 + 10 * k });
    // b catches up with a before a gets more (counting only its own caches, entry 2 would split 6/6);
    // a heartbeat taken mid-step may misjudge one step's tokens, hence one cache of slack
    expect(b.server.liveCaches).toBeGreaterThanOrEqual(11);
    expect(a.server.liveCaches + b.server.liveCaches).toBe(24);
  });

  it('places new caches by load: a replica with three times the capacity takes three times the caches', async () => {
    const big = await replica('big', { kvCapacityTokens: 30_000 });
    const small = await replica('small', { kvCapacityTokens: 10_000 });
    const remote = await runner();
    await until(() => remote.replicaViews().length === 2, 2000, 'both replicas known');
    for (let k = 0; k < 16; k++) await driveSame([simModel({ name: 'large', latency: ZERO }), remote], 1, 2, { cacheBase: 900 + 10 * k });
    expect(small.server.liveCaches).toBeGreaterThanOrEqual(3);
    expect(small.server.liveCaches).toBeLessThanOrEqual(5);
    expect(big.server.liveCaches).toBe(16 - small.server.liveCaches);
  });

  it('fail policy, two replicas: losing one fails only its caches (idle ones by onCachesLost, rows in flight by StepOutput.lost)', async () => {
    const reps = [await replica('a', { latency: { baseMs: 5, perRowMs: 0, perTokenMs: 0 } }), await replica('b', { latency: { baseMs: 5, perRowMs: 0, perTokenMs: 0 } })];
    const remote = await runner({ heartbeatTimeoutMs: 300 });
    await until(() => remote.replicaViews().length === 2, 2000, 'both replicas known');
    let failures = 0;
    remote.onFailure(() => failures++);
    const lostIdle: number[] = [];
    remote.onCachesLost((ids) => lostIdle.push(...ids));
    const local = simModel({ name: 'large', latency: ZERO });
    const rowsAt = (ids: number[], fed: Map<number, number>, tokens: Map<number, number[]>): StepRow[] =>
      ids.map((id) => ({ cacheId: id, requestId: `q${id}`, tokens: tokens.get(id)!, position: fed.get(id)!, sampling: { ...GREEDY, seed: id }, wants: { topK: 0, hidden: false, heads: [] } }));
    const ids = [1, 2, 3, 4, 5, 6, 7, 8];
    const fed = new Map(ids.map((id) => [id, 0]));
    const next = new Map(ids.map((id) => [id, [1, 4 + id, 6]]));
    const stepBoth = async (which: number[]) => {
      const rows = rowsAt(which, fed, next);
      const [want, got] = await Promise.all([Promise.resolve(local.step(rows)), remote.step(rows)]);
      return { rows, want, got };
    };
    const advance = (rows: StepRow[], sigs: TokenSignals[], skip: ReadonlySet<number> = new Set()) =>
      rows.forEach((r, i) => {
        if (skip.has(i)) return;
        fed.set(r.cacheId, r.position + r.tokens.length);
        next.set(r.cacheId, [sigs[i].token]);
      });
    const first = await stepBoth(ids);
    expect(first.got.rows).toEqual(first.want.rows);
    advance(first.rows, first.want.rows);
    const where = new Map(ids.map((id) => [id, remote.placementOf(id)!]));
    const victim = reps.find((r) => r.server.subject === where.get(1))!;
    const onVictim = ids.filter((id) => where.get(id) === victim.server.subject);
    expect(onVictim.length).toBeGreaterThan(0);
    expect(onVictim.length).toBeLessThan(ids.length);
    // a step in flight on both replicas when the victim dies: its rows there come back lost
    const inFlight = [onVictim[0], ...ids.filter((id) => !onVictim.includes(id)).slice(0, 2)];
    const pending = stepBoth(inFlight);
    await victim.crash();
    const mid = await pending;
    expect(mid.got.lost?.rows).toEqual([0]);
    expect(mid.got.lost?.error.message).toMatch(/gone/);
    expect(mid.got.rows.slice(1)).toEqual(mid.want.rows.slice(1));
    advance(mid.rows, mid.want.rows);
    // the victim's other caches were idle: reported once, by onCachesLost
    expect(lostIdle.sort()).toEqual(onVictim.slice(1).sort());
    // the survivors go on, token for token
    const survivors = ids.filter((id) => !onVictim.includes(id));
    for (let round = 0; round < 3; round++) {
      const s = await stepBoth(survivors);
      expect(s.got.lost).toBeUndefined();
      expect(s.got.rows).toEqual(s.want.rows);
      advance(s.rows, s.want.rows);
    }
    // a lost cache stepped anyway is reported lost again, not sent anywhere
    const again = await remote.step(rowsAt([onVictim[0]], fed, next));
    expect(again.lost?.rows).toEqual([0]);
    expect(failures).toBe(0);
    expect(remote.replicaViews()).toHaveLength(1);
  });

  it('fail policy: a replica that vanishes holding caches fires onFailure within the heartbeat bound', async () => {
    const rep = await replica('a');
    const remote = await runner({ heartbeatTimeoutMs: 400 });
    const local = simModel({ name: 'large', latency: ZERO });
    await driveSame([local, remote], 3, 2);
    let failedAt = 0;
    let error: Error | null = null;
    remote.onFailure((e) => {
      failedAt = performance.now();
      error = e;
    });
    const t0 = performance.now();
    await rep.crash();
    await until(() => error !== null, 3000, 'onFailure');
    expect(error).toBeInstanceOf(RemoteRunnerError);
    expect((error as unknown as RemoteRunnerError).code).toBe('replica_lost');
    expect(failedAt - t0).toBeLessThan(400 + 600);
    await expect(Promise.resolve(remote.step([]))).rejects.toThrow(/gone/);
  });

  it('fail policy: an idle replica without caches may die without failing anything', async () => {
    const reps = [await replica('a'), await replica('b')];
    const remote = await runner();
    await until(() => remote.replicaViews().length === 2, 2000, 'both replicas known');
    let failures = 0;
    remote.onFailure(() => failures++);
    // place caches until one replica holds some, then kill one that holds none
    await driveSame([simModel({ name: 'large', latency: ZERO }), remote], 1, 1, { cacheBase: 100 });
    const victim = reps.find((r) => r.server.subject !== remote.placementOf(100))!;
    await victim.crash();
    await until(() => remote.replicaViews().length === 1, 2000, 'idle replica dropped');
    expect(failures).toBe(0);
    const [want, got] = await driveSame([simModel({ name: 'large', latency: ZERO }), remote], 2, 3, { cacheBase: 300 });
    expect(got).toEqual(want);
  });

  it('recompute policy: caches on a dead replica are re-prefilled on a survivor; outputs do not change', async () => {
    const reps = [await replica('a'), await replica('b')];
    const remote = await runner({ onReplicaLoss: 'recompute' });
    await until(() => remote.replicaViews().length === 2, 2000, 'both replicas known');
    let failures = 0;
    remote.onFailure(() => failures++);
    const local = simModel({ name: 'large', latency: ZERO });
    const [want, got] = await driveSame([local, remote], 8, 9, {
      between: async (round) => {
        if (round !== 4) return;
        // kill whichever replica holds cache 1000, mid-conversation
        const victim = reps.find((r) => r.server.subject === remote.placementOf(1000))!;
        await victim.crash();
      },
    });
    expect(got).toEqual(want);
    expect(failures).toBe(0);
    expect(remote.stats.recomputedRows).toBeGreaterThan(0);
    expect(remote.replicaViews()).toHaveLength(1);
  });

  it('recompute policy: with no replica left the runner fails clearly', async () => {
    const rep = await replica('a');
    const remote = await runner({ onReplicaLoss: 'recompute' });
    await driveSame([simModel({ name: 'large', latency: ZERO }), remote], 2, 1);
    let error: Error | null = null;
    remote.onFailure((e) => (error = e));
    await rep.crash();
    await sleep(50);
    const rows: StepRow[] = [{ cacheId: 1000, requestId: 'r0', tokens: [4], position: 5, sampling: GREEDY, wants: { topK: 0, hidden: false, heads: [] } }];
    await expect(Promise.resolve(remote.step(rows))).rejects.toBeInstanceOf(RemoteRunnerError);
    await until(() => error !== null, 2000, 'onFailure');
  });

  it('a draining replica keeps serving its caches, takes no new one, and leaves once they are released', async () => {
    const rep = await replica('a');
    const remote = await runner();
    const row = (cacheId: number, position: number, tokens: number[]): StepRow => ({ cacheId, requestId: `q${cacheId}`, tokens, position, sampling: GREEDY, wants: { topK: 0, hidden: false, heads: [] } });
    const first = await remote.step([row(1, 0, [1, 5, 6])]);
    const draining = rep.server.drain(5000);
    await until(() => remote.replicaViews()[0]?.draining === true, 2000, 'drain announced');
    // the held cache steps on; the new one has nowhere to go and comes back lost, alone
    const out = await remote.step([row(1, 3, [first.rows[0].token]), row(2, 0, [1, 7])]);
    expect(out.lost?.rows).toEqual([1]);
    expect(out.lost?.error.message).toMatch(/no replica of model large takes new requests \(1 live, 1 of them draining\)/);
    expect(out.rows[0].token).toBe((await stepOf(simModel({ name: 'large', latency: ZERO }), [row(1, 0, [1, 5, 6, first.rows[0].token])]))[0].token);
    remote.release(1);
    expect(await draining).toBe(0);
    await until(() => remote.replicaViews().length === 0, 2000, 'replica gone after its goodbye');
  });

  it("lookahead: a step's extra passes stream back as they finish, equal to in-process, and a later row may start inside them", async () => {
    await replica('a', { maxAhead: 4 });
    // off unless asked for; then at most what the replica takes
    expect((await runner()).maxAhead).toBe(0);
    const remote = await runner({ lookahead: 6 });
    expect(remote.maxAhead).toBe(4);
    const local = simModel({ name: 'large', latency: ZERO, maxAhead: 4 });
    const row = (cacheId: number, position: number, tokens: number[], ahead: number): StepRow => ({ cacheId, requestId: `q${cacheId}`, tokens, position, sampling: { ...GREEDY, seed: cacheId }, wants: { topK: 0, hidden: false, heads: [] }, ahead });
    const both = async (rows: StepRow[]) => {
      const [want, got] = await Promise.all([Promise.resolve(local.step(rows)), remote.step(rows)]);
      expect(got.rows).toEqual(want.rows);
      expect(got.aheadStream).toBeDefined();
      const ahead = await aheadOf(got, rows.length);
      expect(ahead).toEqual(await aheadOf(want, rows.length));
      return { rows: got.rows, ahead };
    };
    const first = await both([row(1, 0, [1, 5, 6], 3), row(2, 0, [1, 7], 0), row(3, 0, [1, 8, 9, 4], 4)]);
    expect(first.ahead.map((a) => a.length)).toEqual([3, 0, 4]);
    // row 1 took two of its three lookahead results: it resumes inside them (the replica rolls back)
    const t = [first.rows[0].token, first.ahead[0][0].token, first.ahead[0][1].token];
    await both([row(1, 5, [t[2]], 2), row(2, 2, [first.rows[1].token], 1), row(3, 8, [first.ahead[2][3].token], 0)]);
  });

  it('recompute after lookahead: the kept tokens include what the passes fed, so a re-prefill rebuilds the same cache', async () => {
    const reps = [await replica('a', { maxAhead: 4 }), await replica('b', { maxAhead: 4 })];
    const remote = await runner({ onReplicaLoss: 'recompute', lookahead: 4 });
    await until(() => remote.replicaViews().length === 2, 2000, 'both replicas known');
    const local = simModel({ name: 'large', latency: ZERO, maxAhead: 4 });
    const row = (position: number, tokens: number[], ahead: number): StepRow => ({ cacheId: 1, requestId: 'q1', tokens, position, sampling: { ...GREEDY, seed: 3 }, wants: { topK: 0, hidden: false, heads: [] }, ahead });
    const step = async (r: StepRow) => {
      const [want, got] = await Promise.all([Promise.resolve(local.step([r])), remote.step([r])]);
      expect(got.rows).toEqual(want.rows);
      // the stream has ended (the entry's books have every pass) before the next step
      const ahead = await aheadOf(got, 1);
      expect(ahead).toEqual(await aheadOf(want, 1));
      return ahead;
    };
    const a = await step(row(0, [1, 5, 6], 4));
    // one lookahead result used, then the replica holding the cache dies
    await step(row(4, [a[0][0].token], 2));
    await reps.find((r) => r.server.subject === remote.placementOf(1))!.crash();
    await until(() => remote.replicaViews().length === 1, 2000, 'replica dropped');
    const before = remote.stats.recomputedRows;
    await step(row(5, [7], 0));
    expect(remote.stats.recomputedRows).toBe(before + 1);
  });

  it('connect() names the missing sub-server when none answers', async () => {
    await expect(NatsRunner.connect({ model: 'nobody', servers: nats.url, connectTimeoutMs: 300, log: () => {} })).rejects.toThrow(/no sub-server for model "nobody".*tokenrouter subserver --model nobody/s);
  });

  it('a replica frees the caches of an entry that closes or falls silent', async () => {
    const rep = await replica('a', { entryTimeoutMs: 300 });
    const remote = await runner();
    await driveSame([simModel({ name: 'large', latency: ZERO }), remote], 4, 1);
    expect(rep.server.liveCaches).toBe(4);
    await remote.close();
    await until(() => rep.server.liveCaches === 0, 2000, 'caches freed on goodbye');
  });
});
