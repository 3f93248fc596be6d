// Entry-side ModelRunner for a model whose sub-servers run in other processes or hosts, reached over NATS.
import crypto from 'node:crypto';
import { createInbox, RequestError, TimeoutError, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from '../runner/modelRunner.ts';
import { DEFAULT_SUBJECT_PREFIX, modelSubjects, type ModelSubjects } from './modelSubjects.ts';
import { AheadAssembler } from './aheadAssembler.ts';
import { openNats, watchLink, type NatsAuthOptions } from './natsConnection.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';
import { decodeControl, decodeResult, encodeControl, encodeRelease, encodeStep, WireKind, type DecodedResult, type ResultMeta } from './stepCodec.ts';

export type ReplicaLossPolicy = 'fail' | 'recompute';

export interface NatsRunnerOptions extends NatsAuthOptions {
  /** Model name the sub-servers were started with (`tokenrouter subserver --model NAME`). */
  model: string;
  subjectPrefix?: string;
  /** A replica silent this long is declared dead; default 1500 ms. */
  heartbeatTimeoutMs?: number;
  /** Longest one remote step may take; default 30 s. */
  stepTimeoutMs?: number;
  /** How long connect() waits for a first replica; default 30 s. */
  connectTimeoutMs?: number;
  /** What a lost replica's caches become: failed requests (default) or re-prefills elsewhere. */
  onReplicaLoss?: ReplicaLossPolicy;
  /** Period of the entry keepalive replicas use to free the caches of a vanished entry; default 1 s. */
  keepaliveMs?: number;
  /**
   * Steps in flight at once (default 2): the next batch is already at the replica when the current
   * one finishes, so the model does not idle for a network round trip between steps. 1 = one at a time.
   */
  pipelineDepth?: number;
  /**
   * Lookahead passes a step may ask of the replicas, at most what their runners take (default 0:
   * none). Each replica streams the passes to an inbox of the step as they finish; each pass a
   * request uses saves it a round trip.
   */
  lookahead?: number;
  log?: (line: string) => void;
}

/** What a sub-server answers to hello and repeats in every heartbeat. */
export interface ReplicaAnnouncement {
  protocol: number;
  /** Human name (`--replica`). */
  replica: string;
  /** Sticky subject of this replica instance (a restarted process gets a new one). */
  subject: string;
  info: ModelInfo;
  kvCapacityTokens: number;
  heartbeatMs: number;
  /** Caches held, over all entries. */
  caches: number;
  /** KV tokens those caches hold: the replica's load, for placing new caches (absent from older sub-servers). */
  kvTokens?: number;
  /** Lookahead passes its runner takes in one step (ModelRunner.maxAhead); 0 or absent: none. */
  maxAhead?: number;
  /** Leaving gracefully: serves the caches it holds, takes no new ones. */
  draining?: boolean;
  /** Set in the last heartbeat of a sub-server shutting down. */
  bye?: boolean;
}

export interface ReplicaView {
  name: string;
  subject: string;
  /** Caches this entry holds there now, and has placed there in all. */
  caches: number;
  placed: number;
  draining: boolean;
  kvCapacityTokens: number;
  msSinceHeard: number;
}

export const WIRE_PROTOCOL = 3;

interface Replica {
  name: string;
  subject: string;
  lastHeard: number;
  kvCapacityTokens: number;
  /** Cache ids this entry placed there. */
  cacheIds: Set<number>;
  /** KV tokens of those caches, kept exactly. */
  ourTokens: number;
  /** KV tokens of other entries' caches there, as of its last heartbeat. */
  othersTokens: number;
  /** It announced a graceful leave: no new caches go there. */
  draining: boolean;
  placed: number;
  maxAhead: number;
}

/** One in-flight request of a step, to one replica. */
interface Part {
  target: string;
  /** Cache ids of all its rows, and of those that create a cache there (released if the part is abandoned but answered after all). */
  cacheIds: number[];
  newCacheIds: number[];
  state: 'pending' | 'answered' | 'abandoned';
  /** Waiting for its replica to be heard again before it is sent again (after a NATS reconnect). */
  parked: boolean;
  /** Sends it (again: replicas answer a repeated part from their cache of recent results, never running it twice). */
  send(): void;
  abandon(e: Error): void;
}

/** Placement of a cache whose replica died: re-prefill from the mirror on the next step (recompute policy). */
const LOST = '';
const MAX_RECOMPUTE_ROUNDS = 3;

/**
 * Speaks the runner contract over NATS. The entry is admitted by a hello on the model's queue
 * group and learns every replica from its heartbeats. A new cache (a row at position 0) goes to
 * the least-loaded live replica (KV tokens held over its capacity, from its heartbeats plus this
 * entry's own placements since), and every later step or release of that cache goes to the same
 * replica's subject: the KV lives there (sticky, pending-return included). One Cluster step
 * becomes at most one message per replica, sent in one flush.
 *
 * Failure detection is bounded: a replica that misses heartbeats for `heartbeatTimeoutMs`, whose
 * subject has no responders, or that lets a step time out is declared lost. Only the requests
 * whose caches were there are hit. Under the default "fail" policy they fail: rows of a step in
 * flight come back in `StepOutput.lost`, idle caches through `onCachesLost`; the runner keeps
 * serving on the other replicas, and dies (`onFailure`) only when the last replica holding caches
 * is gone. Under "recompute" the entry keeps every cache's fed tokens and re-prefills lost caches
 * on a surviving replica, invisibly to the Cluster. A row that was creating its cache is simply
 * placed again, under either policy: nothing was lost.
 */
export class NatsRunner implements ModelRunner {
  private modelInfo: ModelInfo | null = null;
  readonly pipelineDepth: number;
  /** KV tokens the entry may place on this model: the sum over its live replicas (onCapacityChange tells when it moves). */
  kvCapacityTokens = 0;
  private readonly entry = crypto.randomBytes(6).toString('hex');
  private readonly subjects: ModelSubjects;
  private readonly replicas = new Map<string, Replica>();
  /** cacheId → replica subject, or LOST. */
  private readonly placement = new Map<number, string>();
  /** cacheId → every token fed so far, kept only under the recompute policy. */
  private readonly mirror: Map<number, number[]> | null;
  /** Caches this entry gave up on a replica declared lost, released if that replica turns out alive. */
  private readonly abandonedOn = new Map<string, number[]>();
  private readonly inflight = new Set<Part>();
  private readonly releases = new Map<string, number[]>();
  private releaseScheduled = false;
  private readonly listeners: ((e: Error) => void)[] = [];
  private readonly lostListeners: ((cacheIds: readonly number[], e: Error) => void)[] = [];
  private readonly capacityListeners: ((kvTokens: number) => void)[] = [];
  /** cacheId → KV tokens it holds (its position after the last step), for load accounting. */
  private readonly cacheTokens = new Map<number, number>();
  /** Steps whose lookahead passes are still streaming in. */
  private readonly streams = new Set<AheadAssembler>();
  /** Caches that died with their replica under the "fail" policy: a later step reports their rows lost. */
  private readonly gone = new Map<number, RemoteRunnerError>();
  private readonly subs: Subscription[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private dead: Error | null = null;
  private closing = false;
  private stepSeq = 0;
  private disconnected = false;
  private reconnectedAt = -Infinity;
  private lastTick = performance.now();
  private readonly policy: ReplicaLossPolicy;
  private readonly hbTimeout: number;
  private readonly stepTimeout: number;
  private readonly log: (line: string) => void;
  /** Counters for tests and metrics. */
  readonly stats = {
    steps: 0,
    parts: 0,
    recomputedRows: 0,
    replicasLost: 0,
    bytesOut: 0,
    bytesIn: 0,
    /** Answered parts, and their time split: request → reply at the entry = network (and wake-ups) + wait at the replica + model. */
    answered: 0,
    /** NATS reconnects, and parts sent again after one. */
    reconnects: 0,
    resent: 0,
    networkMs: 0,
    queuedMs: 0,
    modelMs: 0,
  };

  private constructor(
    private readonly nc: NatsConnection,
    private readonly opts: NatsRunnerOptions,
  ) {
    this.subjects = modelSubjects(opts.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX, opts.model);
    this.policy = opts.onReplicaLoss ?? 'fail';
    this.mirror = this.policy === 'recompute' ? new Map() : null;
    this.hbTimeout = opts.heartbeatTimeoutMs ?? 1500;
    this.stepTimeout = opts.stepTimeoutMs ?? 30_000;
    const depth = opts.pipelineDepth ?? 2;
    if (!Number.isInteger(depth) || depth < 1) throw new RangeError(`pipelineDepth must be an integer ≥ 1, got ${depth}`);
    this.pipelineDepth = depth;
    this.log = opts.log ?? ((l) => console.error(`[tokenrouter] ${l}`));
  }

  /** Connects, waits for a replica of the model to answer, and learns the others from their heartbeats. */
  static async connect(opts: NatsRunnerOptions): Promise<NatsRunner> {
    const connectTimeout = opts.connectTimeoutMs ?? 30_000;
    const nc = await openNats({ ...opts, name: `tokenrouter-entry:${opts.model}`, connectTimeoutMs: connectTimeout });
    const runner = new NatsRunner(nc, opts);
    watchLink(nc, { down: () => (runner.disconnected = true), up: () => runner.reconnected() });
    try {
      await runner.handshake(performance.now() + connectTimeout);
    } catch (e) {
      await nc.close().catch(() => {});
      throw e;
    }
    return runner;
  }

  /** Lookahead passes a step may ask for: the `lookahead` option, within what every live replica's runner takes. */
  get maxAhead(): number {
    let m = this.opts.lookahead ?? 0;
    for (const r of this.replicas.values()) m = Math.min(m, r.maxAhead);
    return this.replicas.size ? m : 0;
  }

  get info(): ModelInfo {
    if (!this.modelInfo) throw new RemoteRunnerError('protocol', 'NatsRunner used before connect() finished');
    return this.modelInfo;
  }

  /** The replicas this entry currently considers alive. */
  replicaViews(): ReplicaView[] {
    const now = performance.now();
    return [...this.replicas.values()].map((r) => ({ name: r.name, subject: r.subject, caches: r.cacheIds.size, placed: r.placed, draining: r.draining, kvCapacityTokens: r.kvCapacityTokens, msSinceHeard: now - r.lastHeard }));
  }

  /** Replica subject holding a cache (undefined: none; '' : lost, awaiting recompute). */
  placementOf(cacheId: number): string | undefined {
    return this.placement.get(cacheId);
  }

  get failed(): Error | null {
    return this.dead;
  }

  private async handshake(deadline: number): Promise<void> {
    const s = this.subjects;
    const onBeat = (err: Error | null, msg: { data: Uint8Array }) => {
      if (!err) this.onHeartbeat(msg.data);
    };
    this.subs.push(this.nc.subscribe(s.heartbeat, { callback: onBeat }));
    let hello: ReplicaAnnouncement | null = null;
    let lastError = '';
    while (!hello) {
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new RemoteRunnerError(
          'no_replicas',
          `no sub-server for model "${this.opts.model}" answered on ${this.opts.servers} (subject ${s.admit}) within ${this.opts.connectTimeoutMs ?? 30_000} ms` +
            `${lastError ? ` (${lastError})` : ''}; start one with: tokenrouter subserver --model ${this.opts.model} --nats ${this.opts.servers}`,
        );
      }
      try {
        const reply = await this.nc.request(s.admit, encodeControl(WireKind.Hello, { entry: this.entry, protocol: WIRE_PROTOCOL }), { timeout: Math.max(50, Math.min(1000, left)) });
        hello = decodeControl<ReplicaAnnouncement>(reply.data, WireKind.Info);
      } catch (e) {
        if (e instanceof RemoteRunnerError) throw e;
        lastError = (e as Error).message;
        await sleep(Math.min(200, Math.max(0, deadline - performance.now())));
      }
    }
    if (hello.protocol !== WIRE_PROTOCOL) throw new RemoteRunnerError('protocol', `sub-server ${hello.replica} speaks wire protocol ${hello.protocol}, this entry ${WIRE_PROTOCOL}`);
    this.modelInfo = hello.info;
    this.heard(hello);
    // Other replicas announce themselves within one heartbeat period: count their memory too.
    await sleep(Math.min(1000, hello.heartbeatMs * 1.5));
    this.kvCapacityTokens = this.liveCapacity();
    const period = Math.max(10, Math.min(250, this.hbTimeout / 4));
    this.timers.push(setInterval(() => this.checkLiveness(period), period));
    const keepalive = this.opts.keepaliveMs ?? 1000;
    this.timers.push(setInterval(() => this.publish(s.entries, JSON.stringify({ entry: this.entry })), keepalive));
    for (const t of this.timers) t.unref();
  }

  private onHeartbeat(data: Uint8Array): void {
    let a: ReplicaAnnouncement;
    try {
      a = JSON.parse(DECODER.decode(data)) as ReplicaAnnouncement;
    } catch {
      return;
    }
    if (this.dead) return;
    if (a.bye) {
      this.lose(a.subject, 'it shut down');
      return;
    }
    this.heard(a);
    this.resendParked(a.subject);
  }

  private heard(a: ReplicaAnnouncement): void {
    let r = this.replicas.get(a.subject);
    if (!r) {
      if (this.modelInfo && !sameInfo(this.modelInfo, a.info)) {
        this.log(`replica ${a.replica} of ${this.opts.model} serves a different model (${JSON.stringify(a.info)} vs ${JSON.stringify(this.modelInfo)}); it is ignored, but NATS may still send it new requests: stop it`);
        return;
      }
      r = { name: a.replica, subject: a.subject, lastHeard: performance.now(), kvCapacityTokens: a.kvCapacityTokens, cacheIds: new Set(), ourTokens: 0, othersTokens: 0, draining: false, placed: 0, maxAhead: a.maxAhead ?? 0 };
      this.replicas.set(a.subject, r);
      // A replica we had given up on is alive after all: free what we abandoned there.
      const abandoned = this.abandonedOn.get(a.subject);
      if (abandoned) {
        this.abandonedOn.delete(a.subject);
        for (const id of abandoned) this.queueRelease(a.subject, id);
      }
    }
    r.name = a.replica;
    r.kvCapacityTokens = a.kvCapacityTokens;
    r.draining = a.draining === true;
    r.maxAhead = a.maxAhead ?? 0;
    r.lastHeard = performance.now();
    this.capacityMoved();
    // Its count includes our caches; steps in flight make the split approximate until the next beat.
    if (a.kvTokens !== undefined) r.othersTokens = Math.max(0, a.kvTokens - r.ourTokens);
  }

  private checkLiveness(period: number): void {
    const now = performance.now();
    const late = now - this.lastTick - period;
    this.lastTick = now;
    // Cut off from NATS ourselves: no heartbeat can reach us, which says nothing about the replicas.
    if (this.disconnected) return;
    if (late > this.hbTimeout / 2) {
      // Our own event loop stalled: the heartbeats are sitting unread in the socket. Not their fault.
      for (const r of this.replicas.values()) r.lastHeard = now;
      return;
    }
    for (const r of [...this.replicas.values()]) {
      if (now - r.lastHeard > this.hbTimeout) this.lose(r.subject, `no heartbeat for ${Math.round(now - r.lastHeard)} ms`);
    }
  }

  /**
   * A replica is gone. Its steps in flight are abandoned (runStep re-places new caches, recomputes
   * or reports rows lost, by policy); its idle caches are marked for recompute or reported lost.
   * Only when no replica is left and this one held something does the runner itself die.
   */
  private lose(subject: string, reason: string): void {
    const r = this.replicas.get(subject);
    if (!r || this.dead) return;
    this.replicas.delete(subject);
    this.stats.replicasLost++;
    this.capacityMoved();
    const held = [...r.cacheIds];
    const parts = [...this.inflight].filter((p) => p.target === subject);
    const err = new RemoteRunnerError('replica_lost', `replica ${r.name} of model ${this.opts.model} is gone (${reason}); it held ${held.length} caches`);
    this.log(err.message);
    if (held.length === 0 && parts.length === 0) return;
    // If it comes back after all (a false alarm), what we abandoned there is released.
    if (held.length) this.abandonedOn.set(subject, held);
    // nowhere left to run them (or recompute them): the service fails what the model held and reconnects
    if (this.replicas.size === 0) return this.fail(err);
    const inFlight = new Set(parts.flatMap((p) => p.cacheIds));
    const idle: number[] = [];
    for (const id of held) {
      this.forget(id);
      if (this.policy === 'recompute') this.placement.set(id, LOST);
      else {
        this.gone.set(id, err);
        if (!inFlight.has(id)) idle.push(id);
      }
    }
    for (const p of parts) p.abandon(err);
    for (const a of [...this.streams]) a.endReplica(subject);
    if (idle.length) for (const l of this.lostListeners) l(idle, err);
  }

  private liveCapacity(): number {
    let sum = 0;
    for (const r of this.replicas.values()) sum += r.kvCapacityTokens;
    return sum;
  }

  /** After connect, replicas joining or leaving change what the entry may place here. */
  private capacityMoved(): void {
    if (!this.modelInfo || this.timers.length === 0) return; // still connecting: connect() sums them once
    const now = this.liveCapacity();
    if (now === this.kvCapacityTokens || now === 0) return; // none left: the runner fails instead
    this.kvCapacityTokens = now;
    for (const l of this.capacityListeners) l(now);
  }

  onCapacityChange(listener: (kvTokens: number) => void): void {
    this.capacityListeners.push(listener);
  }

  /** Caches gone with a replica under the "fail" policy, other than rows of a step in flight (those come back in StepOutput.lost). */
  onCachesLost(listener: (cacheIds: readonly number[], error: Error) => void): void {
    this.lostListeners.push(listener);
  }

  onFailure(listener: (error: Error) => void): void {
    this.listeners.push(listener);
  }

  private fail(e: Error): void {
    if (this.dead) return;
    this.dead = e;
    if (!this.closing) for (const l of this.listeners) l(e);
    for (const p of [...this.inflight]) p.abandon(e);
    for (const a of [...this.streams]) a.endReplica(null);
    void this.shutdown();
  }

  step(rows: readonly StepRow[]): Promise<StepOutput> {
    if (this.dead) return Promise.reject(this.dead);
    return this.runStep(rows);
  }

  private async runStep(rows: readonly StepRow[]): Promise<StepOutput> {
    this.stats.steps++;
    this.flushReleases();
    const out: TokenSignals[] = new Array(rows.length);
    const streamed = this.maxAhead > 0 && rows.some((r) => (r.ahead ?? 0) > 0) ? this.openAheadStream(rows, out) : null;
    try {
      return await this.stepRounds(rows, out, streamed);
    } catch (e) {
      // no stream for a step that failed: close its inbox
      streamed?.assembler.endReplica(null);
      throw e;
    }
  }

  private async stepRounds(rows: readonly StepRow[], out: TokenSignals[], streamed: { inbox: string; assembler: AheadAssembler } | null): Promise<StepOutput> {
    const lost: number[] = [];
    let lostError: Error | null = null;
    let modelMs = 0;
    let pending = rows.map((_, i) => i);
    for (let round = 0; pending.length > 0; round++) {
      if (this.dead) throw this.dead;
      if (round > MAX_RECOMPUTE_ROUNDS) {
        const e = new RemoteRunnerError('replica_lost', `model ${this.opts.model}: replicas kept dying under a step; giving up after ${MAX_RECOMPUTE_ROUNDS} recomputes`);
        this.fail(e);
        throw e;
      }
      const seq = ++this.stepSeq;
      const groups = new Map<string, { idx: number[]; rows: StepRow[] }>();
      // tokens this step places on each replica, so that new caches of one step spread too
      const adding = new Map<Replica, number>();
      const add = (subject: string, i: number, row: StepRow) => {
        let g = groups.get(subject);
        if (!g) groups.set(subject, (g = { idx: [], rows: [] }));
        g.idx.push(i);
        g.rows.push(row);
      };
      for (const i of pending) {
        const row = rows[i];
        const died = row.position === 0 ? undefined : this.gone.get(row.cacheId);
        if (died) {
          lost.push(i);
          lostError ??= died;
          continue;
        }
        const where = row.position === 0 ? LOST : this.placement.get(row.cacheId);
        if (where === undefined) throw new RemoteRunnerError('protocol', `model ${this.opts.model}: cache ${row.cacheId} of ${row.requestId} is on no replica`);
        if (where !== LOST) {
          add(where, i, row);
          continue;
        }
        const fresh = row.position === 0 ? row : this.recomputeRow(row);
        if (fresh !== row) this.stats.recomputedRows++;
        const r = this.leastLoaded(adding, fresh.tokens.length);
        if (!r) {
          // nowhere to put it: this request fails, the rest of the step goes on
          lost.push(i);
          lostError ??= this.noPlaceError();
          continue;
        }
        adding.set(r, (adding.get(r) ?? 0) + fresh.tokens.length);
        // counted when decided: a step already on its way to a replica that starts draining is not a new placement
        r.placed++;
        add(r.subject, i, fresh);
      }
      const meta = { entry: this.entry, seq, ...(streamed ? { aheadTo: streamed.inbox } : {}) };
      const sends = [...groups].map(([subject, g]) => ({ ...g, target: subject, done: this.sendPart(subject, encodeStep(meta, g.rows), g.rows) }));
      if (streamed) for (const [subject, g] of groups) if (g.rows.some((r) => (r.ahead ?? 0) > 0)) streamed.assembler.asked(seq, subject);
      const settled = await Promise.allSettled(sends.map((s) => s.done));
      const retry: number[] = [];
      let fatal: Error | null = null;
      settled.forEach((res, k) => {
        const s = sends[k];
        if (res.status === 'fulfilled') {
          const { meta, rows: sigs } = res.value;
          if (sigs.length !== s.rows.length) {
            fatal ??= new RemoteRunnerError('protocol', `replica ${meta.replica} answered ${sigs.length} rows for ${s.rows.length}`);
            return;
          }
          modelMs = Math.max(modelMs, meta.modelMs ?? 0);
          const replica = this.replicas.get(s.target);
          if (replica) replica.lastHeard = performance.now();
          for (let j = 0; j < s.idx.length; j++) {
            const row = s.rows[j];
            out[s.idx[j]] = sigs[j];
            this.fed(row, s.target);
            if (this.mirror) {
              // what the cache holds now: up to the row's start (a row may start inside the last
              // step's lookahead), then its tokens; streamed passes add theirs (fedAhead)
              const m = row.position === 0 ? [] : this.mirror.get(row.cacheId) ?? [];
              m.length = Math.min(m.length, row.position);
              for (const t of row.tokens) m.push(t);
              this.mirror.set(row.cacheId, m);
            }
          }
          if (streamed && s.rows.some((r) => (r.ahead ?? 0) > 0)) streamed.assembler.expect(seq, s.target, s.idx);
          return;
        }
        const e = res.reason as Error;
        if (this.dead || !(e instanceof RemoteRunnerError) || e.code !== 'replica_lost') {
          fatal ??= this.dead ?? e;
          return;
        }
        for (let j = 0; j < s.idx.length; j++) {
          // a cache being created lost nothing: place it again; an existing one is recomputed or lost
          if (s.rows[j].position === 0 || this.policy === 'recompute') retry.push(s.idx[j]);
          else {
            lost.push(s.idx[j]);
            lostError ??= e;
          }
        }
      });
      if (fatal) throw fatal;
      pending = retry;
    }
    streamed?.assembler.settle();
    // parts that arrived already wait in the stream for the engine to listen
    const aheadStream = streamed?.assembler.streaming ? streamed.assembler.stream : undefined;
    return { rows: out, modelMs, ...(aheadStream ? { aheadStream } : {}), ...(lost.length ? { lost: { rows: lost, error: lostError! } } : {}) };
  }

  /**
   * Lookahead over NATS: each replica streams the step's passes to an inbox of this step as they
   * finish, as a local worker streams them; the engine routes each pass while the model runs on.
   * The entry's books (what each cache holds, the recompute mirror) follow every pass taken.
   */
  private openAheadStream(rows: readonly StepRow[], main: readonly TokenSignals[]): { inbox: string; assembler: AheadAssembler } {
    const inbox = createInbox();
    const last: (TokenSignals | undefined)[] = [];
    const assembler = new AheadAssembler(
      rows.length,
      (pass) =>
        pass.forEach((sig, i) => {
          if (!sig) return;
          // this pass fed the token the one before it sampled
          this.fedAhead(rows[i].cacheId, (last[i] ?? main[i]).token);
          last[i] = sig;
        }),
      () => {
        sub.unsubscribe();
        this.streams.delete(assembler);
      },
    );
    const sub = this.nc.subscribe(inbox, {
      callback: (err, msg) => {
        if (err) return;
        try {
          assembler.onMessage(decodeResult(msg.data));
        } catch (e) {
          this.log(`bad lookahead message: ${(e as Error).message}`);
        }
      },
    });
    this.streams.add(assembler);
    return { inbox, assembler };
  }

  /** A streamed lookahead pass fed `token` to a cache. */
  private fedAhead(cacheId: number, token: number): void {
    const where = this.placement.get(cacheId);
    const r = where ? this.replicas.get(where) : undefined;
    if (r?.cacheIds.has(cacheId)) {
      r.ourTokens++;
      this.cacheTokens.set(cacheId, (this.cacheTokens.get(cacheId) ?? 0) + 1);
    }
    this.mirror?.get(cacheId)?.push(token);
  }

  /** The engine has new work: replicas still looking ahead for us hand back what they have. */
  yieldAhead(): void {
    for (const a of this.streams) {
      for (const { seq, replica } of a.streamingReplicas()) this.publish(replica, encodeControl(WireKind.Yield, { entry: this.entry, seq }));
    }
  }

  /** The live, not draining replica with the lowest share of its KV capacity in use, counting what this step adds. */
  private leastLoaded(adding: ReadonlyMap<Replica, number>, tokens: number): Replica | null {
    let best: Replica | null = null;
    let bestLoad = Infinity;
    for (const r of this.replicas.values()) {
      if (r.draining) continue;
      const load = (r.othersTokens + r.ourTokens + (adding.get(r) ?? 0) + tokens) / Math.max(1, r.kvCapacityTokens);
      if (load < bestLoad) {
        best = r;
        bestLoad = load;
      }
    }
    return best;
  }

  private noPlaceError(): RemoteRunnerError {
    const draining = [...this.replicas.values()].filter((r) => r.draining).length;
    return new RemoteRunnerError('no_replicas', `no replica of model ${this.opts.model} takes new requests (${this.replicas.size} live, ${draining} of them draining)`);
  }

  /** The row that rebuilds a lost cache: everything it was fed, then this step's tokens, from position 0. */
  private recomputeRow(row: StepRow): StepRow {
    const fed = this.mirror?.get(row.cacheId);
    // the mirror may run past the row's start: lookahead tokens the engine did not use
    if (!fed || fed.length < row.position) {
      throw new RemoteRunnerError('protocol', `model ${this.opts.model}: cannot recompute cache ${row.cacheId} of ${row.requestId} (kept ${fed?.length ?? 0} tokens, row starts at ${row.position})`);
    }
    return { ...row, tokens: fed.slice(0, row.position).concat(row.tokens), position: 0 };
  }

  /** A row's step succeeded on `subject`: the cache lives there now, holding its position + tokens. */
  private fed(row: StepRow, subject: string): void {
    const r = this.replicas.get(subject);
    if (row.position === 0) {
      this.forget(row.cacheId);
      this.gone.delete(row.cacheId);
      if (r) {
        this.placement.set(row.cacheId, subject);
        r.cacheIds.add(row.cacheId);
      } else {
        // its replica was declared lost while the step ran: the new cache went with it
        this.abandonedOn.set(subject, [...(this.abandonedOn.get(subject) ?? []), row.cacheId]);
        if (this.policy === 'recompute') this.placement.set(row.cacheId, LOST);
        else this.gone.set(row.cacheId, new RemoteRunnerError('replica_lost', `replica ${subject} of model ${this.opts.model} was lost while it created cache ${row.cacheId}`));
        return;
      }
    } else if (this.placement.get(row.cacheId) !== subject) {
      return; // moved to recompute or lost while the step ran
    }
    const held = row.position + row.tokens.length;
    r!.ourTokens += held - (this.cacheTokens.get(row.cacheId) ?? 0);
    this.cacheTokens.set(row.cacheId, held);
  }

  /** Drops a cache from this entry's books (not from the replica). */
  private forget(cacheId: number): void {
    const where = this.placement.get(cacheId);
    if (where) {
      const r = this.replicas.get(where);
      if (r?.cacheIds.delete(cacheId)) r.ourTokens -= this.cacheTokens.get(cacheId) ?? 0;
    }
    this.placement.delete(cacheId);
    this.cacheTokens.delete(cacheId);
  }

  private sendPart(target: string, bytes: Uint8Array, rows: readonly StepRow[]): Promise<DecodedResult> {
    this.stats.parts++;
    this.stats.bytesOut += bytes.length;
    return new Promise<DecodedResult>((resolve, reject) => {
      const part: Part = {
        target,
        cacheIds: rows.map((r) => r.cacheId),
        newCacheIds: rows.filter((r) => r.position === 0).map((r) => r.cacheId),
        state: 'pending',
        parked: false,
        send: () => {
          part.parked = false;
          const sentAt = performance.now();
          this.nc.request(target, bytes, { timeout: this.stepTimeout }).then(
            (msg) => {
              this.stats.bytesIn += msg.data.length;
              if (part.state === 'abandoned') return this.lateReply(part);
              if (part.state === 'answered') return; // a repeated part answered twice
              part.state = 'answered';
              this.inflight.delete(part);
              try {
                const result = decodeResult(msg.data);
                this.account(performance.now() - sentAt, result.meta);
                resolve(result);
              } catch (e) {
                reject(e as Error);
              }
            },
            (e: Error) => {
              if (part.state !== 'pending' || part.parked) return;
              const err = this.classify(e, target);
              // Right after our reconnect the replica may not have resubscribed yet: wait to hear it.
              if (err.code === 'replica_lost' && e instanceof RequestError && e.isNoResponders() && performance.now() - this.reconnectedAt < this.hbTimeout) {
                part.parked = true;
                return;
              }
              // Attributable losses take the replica out now, which also abandons its other parts.
              if (err.code === 'replica_lost') this.lose(target, err.message);
              part.abandon(err);
            },
          );
        },
        abandon: (e) => {
          if (part.state !== 'pending') return;
          part.state = 'abandoned';
          this.inflight.delete(part);
          reject(e);
        },
      };
      this.inflight.add(part);
      part.send();
    });
  }

  /**
   * NATS dropped us and we are back (a broker restart, a network blip). Parts in flight may have
   * lost their request or their reply: each is sent again once its replica is heard again, and
   * the replica answers a part it already ran from its cache of recent results. Heartbeats missed
   * while we were away are not held against the replicas.
   */
  private reconnected(): void {
    this.disconnected = false;
    this.reconnectedAt = performance.now();
    this.stats.reconnects++;
    for (const r of this.replicas.values()) r.lastHeard = this.reconnectedAt;
    for (const p of this.inflight) p.parked = true;
    // passes streamed while we were away are lost; what came stands, the replicas roll back the rest
    for (const a of [...this.streams]) a.endReplica(null);
  }

  /** A replica was heard: send again the parts that wait for it. */
  private resendParked(subject: string): void {
    for (const p of this.inflight) {
      if (p.parked && p.target === subject) {
        this.stats.resent++;
        p.send();
      }
    }
  }

  private account(roundTripMs: number, meta: ResultMeta): void {
    const queued = meta.queuedMs ?? 0;
    const model = meta.modelMs ?? 0;
    this.stats.answered++;
    this.stats.queuedMs += queued;
    this.stats.modelMs += model;
    this.stats.networkMs += Math.max(0, roundTripMs - queued - model);
  }

  /** An abandoned part answered after all: the caches it created live on a replica we no longer use for them. */
  private lateReply(part: Part): void {
    if (this.dead) return;
    for (const id of part.newCacheIds) this.queueRelease(part.target, id);
  }

  private classify(e: Error, target: string): RemoteRunnerError {
    if (e instanceof RemoteRunnerError) return e;
    if (e instanceof RequestError && e.isNoResponders()) return new RemoteRunnerError('replica_lost', `replica subject ${target} has no responders (process gone)`, { cause: e });
    if (e instanceof TimeoutError) return new RemoteRunnerError('replica_lost', `a step on model ${this.opts.model} took longer than ${this.stepTimeout} ms`, { cause: e });
    return new RemoteRunnerError(this.closing ? 'closed' : 'remote_error', `model ${this.opts.model}: ${e.message}`, { cause: e });
  }

  release(cacheId: number): void {
    const where = this.placement.get(cacheId);
    this.forget(cacheId);
    this.gone.delete(cacheId);
    this.mirror?.delete(cacheId);
    if (where === undefined || where === LOST || this.dead) return;
    this.queueRelease(where, cacheId);
  }

  private queueRelease(subject: string, cacheId: number): void {
    let q = this.releases.get(subject);
    if (!q) this.releases.set(subject, (q = []));
    q.push(cacheId);
    if (!this.releaseScheduled) {
      this.releaseScheduled = true;
      // Releases come in bursts while the Cluster routes a batch: send one message per replica.
      setImmediate(() => this.flushReleases());
    }
  }

  private flushReleases(): void {
    this.releaseScheduled = false;
    if (this.releases.size === 0 || this.nc.isClosed()) return;
    for (const [subject, ids] of this.releases) this.publish(subject, encodeRelease(this.entry, ids));
    this.releases.clear();
  }

  private publish(subject: string, data: Uint8Array | string): void {
    try {
      this.nc.publish(subject, data);
    } catch {
      // closed or draining: the replica frees our caches when our keepalives stop
    }
  }

  private shutdownDone: Promise<void> | null = null;

  /** Idempotent: a failure and a close() may both get here, and flush() on a closing connection never settles. */
  private shutdown(): Promise<void> {
    this.shutdownDone ??= (async () => {
      for (const t of this.timers) clearInterval(t);
      this.timers.length = 0;
      if (this.nc.isClosed()) return;
      this.flushReleases();
      this.publish(this.subjects.entries, JSON.stringify({ entry: this.entry, bye: true }));
      // bounded: with NATS unreachable, replicas time our caches out instead
      await Promise.race([this.nc.flush().catch(() => {}), sleep(1000)]);
      await this.nc.close().catch(() => {});
    })();
    return this.shutdownDone;
  }

  async close(): Promise<void> {
    this.closing = true;
    const e = new RemoteRunnerError('closed', `runner for model ${this.opts.model} closed`);
    for (const p of [...this.inflight]) p.abandon(e);
    for (const a of [...this.streams]) a.endReplica(null);
    if (!this.dead) this.dead = e;
    await this.shutdown();
  }
}

const DECODER = new TextDecoder();

function sameInfo(a: ModelInfo, b: ModelInfo): boolean {
  return a.vocabSize === b.vocabSize && a.eosTokenId === b.eosTokenId && a.maxContext === b.maxContext && a.kvBytesPerToken === b.kvBytesPerToken && a.hiddenSize === b.hiddenSize;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
