// Entry-side ModelRunner for a model whose sub-servers run in other processes or hosts, reached over NATS.
import crypto from 'node:crypto';
import { RequestError, TimeoutError, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from '../runner/modelRunner.ts';
import { DEFAULT_SUBJECT_PREFIX, modelSubjects, type ModelSubjects } from './modelSubjects.ts';
import { openNats, type NatsAuthOptions } from './natsConnection.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';
import { decodeControl, decodeResult, encodeControl, encodeRelease, encodeStep, WireKind, type DecodedResult, type ResultMeta, type StepMeta } from './stepCodec.ts';

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
  /** Set in the last heartbeat of a sub-server shutting down. */
  bye?: boolean;
}

export interface ReplicaView {
  name: string;
  subject: string;
  /** Caches this entry placed there. */
  caches: number;
  kvCapacityTokens: number;
  msSinceHeard: number;
}

export const WIRE_PROTOCOL = 2;

interface Replica {
  name: string;
  subject: string;
  lastHeard: number;
  kvCapacityTokens: number;
  /** Cache ids this entry placed there. */
  cacheIds: Set<number>;
}

/** One in-flight request of a step: to a known replica (sticky) or to the queue group (admit, target null). */
interface Part {
  target: string | null;
  /** Cache ids of the rows it carries (to release them if an abandoned admit lands after all). */
  cacheIds: number[];
  settled: boolean;
  abandon(e: Error): void;
}

/** Placement of a cache whose replica died: re-prefill from the mirror on the next step (recompute policy). */
const LOST = '';
const MAX_RECOMPUTE_ROUNDS = 3;

/**
 * Speaks the runner contract over NATS. New caches (rows at position 0) go to the model's queue
 * group, so NATS spreads them over the replicas; the reply names the replica that took them, and
 * every later step or release of that cache goes to that replica's own subject (sticky: the KV
 * lives there). One Cluster step becomes at most one admit message plus one message per replica,
 * sent together; a sub-server merges the parts of one step into one batch.
 *
 * Failure detection is bounded: a replica that misses heartbeats for `heartbeatTimeoutMs`, whose
 * subject has no responders, or that lets a step time out is declared lost. Under the default
 * "fail" policy a lost replica that held caches kills this runner (onFailure fires, the service
 * fails the requests holding state on the model and starts a fresh NatsRunner on the surviving
 * replicas), exactly as a crashed local worker does. Under "recompute" the entry keeps every
 * cache's fed tokens and re-prefills lost caches on a surviving replica, invisibly to the Cluster.
 */
export class NatsRunner implements ModelRunner {
  private modelInfo: ModelInfo | null = null;
  readonly pipelineDepth: number;
  /** KV tokens the entry may place on this model: the sum over replicas seen at connect. */
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
  private readonly subs: Subscription[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private dead: Error | null = null;
  private closing = false;
  private stepSeq = 0;
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
    try {
      await runner.handshake(performance.now() + connectTimeout);
    } catch (e) {
      await nc.close().catch(() => {});
      throw e;
    }
    return runner;
  }

  get info(): ModelInfo {
    if (!this.modelInfo) throw new RemoteRunnerError('protocol', 'NatsRunner used before connect() finished');
    return this.modelInfo;
  }

  /** The replicas this entry currently considers alive. */
  replicaViews(): ReplicaView[] {
    const now = performance.now();
    return [...this.replicas.values()].map((r) => ({ name: r.name, subject: r.subject, caches: r.cacheIds.size, kvCapacityTokens: r.kvCapacityTokens, msSinceHeard: now - r.lastHeard }));
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
    this.kvCapacityTokens = [...this.replicas.values()].reduce((a, r) => a + r.kvCapacityTokens, 0);
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
  }

  private heard(a: ReplicaAnnouncement): void {
    let r = this.replicas.get(a.subject);
    if (!r) {
      if (this.modelInfo && !sameInfo(this.modelInfo, a.info)) {
        this.log(`replica ${a.replica} of ${this.opts.model} serves a different model (${JSON.stringify(a.info)} vs ${JSON.stringify(this.modelInfo)}); it is ignored, but NATS may still send it new requests: stop it`);
        return;
      }
      r = { name: a.replica, subject: a.subject, lastHeard: performance.now(), kvCapacityTokens: a.kvCapacityTokens, cacheIds: new Set() };
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
    r.lastHeard = performance.now();
  }

  private checkLiveness(period: number): void {
    const now = performance.now();
    const late = now - this.lastTick - period;
    this.lastTick = now;
    if (late > this.hbTimeout / 2) {
      // Our own event loop stalled: the heartbeats are sitting unread in the socket. Not their fault.
      for (const r of this.replicas.values()) r.lastHeard = now;
      return;
    }
    for (const r of [...this.replicas.values()]) {
      if (now - r.lastHeard > this.hbTimeout) this.lose(r.subject, `no heartbeat for ${Math.round(now - r.lastHeard)} ms`);
    }
  }

  /** A replica is gone: fail the runner, or mark its caches for recompute (policy). */
  private lose(subject: string, reason: string): void {
    const r = this.replicas.get(subject);
    if (!r || this.dead) return;
    this.replicas.delete(subject);
    this.stats.replicasLost++;
    const held = [...r.cacheIds];
    const sticky = [...this.inflight].filter((p) => p.target === subject);
    const admits = [...this.inflight].filter((p) => p.target === null);
    const err = new RemoteRunnerError('replica_lost', `replica ${r.name} of model ${this.opts.model} is gone (${reason}); it held ${held.length} caches`);
    this.log(`${err.message}`);
    if (this.policy === 'fail') {
      // An admit in flight went to some replica; with none left it was this one. With survivors it
      // most likely was not, and if it was, the step timeout still catches it.
      if (held.length > 0 || sticky.length > 0 || (admits.length > 0 && this.replicas.size === 0)) this.fail(err);
      return;
    }
    const touched = [...sticky, ...admits];
    if (held.length === 0 && touched.length === 0) return;
    for (const id of held) this.placement.set(id, LOST);
    if (held.length) this.abandonedOn.set(subject, held);
    for (const p of touched) p.abandon(err);
  }

  onFailure(listener: (error: Error) => void): void {
    this.listeners.push(listener);
  }

  private fail(e: Error): void {
    if (this.dead) return;
    this.dead = e;
    if (!this.closing) for (const l of this.listeners) l(e);
    for (const p of [...this.inflight]) p.abandon(e);
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
      const admit: { idx: number[]; rows: StepRow[] } = { idx: [], rows: [] };
      const sticky = new Map<string, { idx: number[]; rows: StepRow[] }>();
      for (const i of pending) {
        const row = rows[i];
        if (row.position === 0) {
          admit.idx.push(i);
          admit.rows.push(row);
          continue;
        }
        const where = this.placement.get(row.cacheId);
        if (where === undefined) throw new RemoteRunnerError('protocol', `model ${this.opts.model}: cache ${row.cacheId} of ${row.requestId} is on no replica`);
        if (where === LOST) {
          admit.idx.push(i);
          admit.rows.push(this.recomputeRow(row));
          continue;
        }
        let g = sticky.get(where);
        if (!g) sticky.set(where, (g = { idx: [], rows: [] }));
        g.idx.push(i);
        g.rows.push(row);
      }
      const sends: { idx: number[]; rows: StepRow[]; target: string | null; done: Promise<DecodedResult> }[] = [];
      // The admit part goes first: NATS delivers one publisher's messages in order, so a replica
      // that gets both parts sees the admit first and can wait for its sticky partner.
      if (admit.rows.length) {
        const meta: StepMeta = { entry: this.entry, seq, admit: true, stickyOn: [...sticky.keys()] };
        sends.push({ ...admit, target: null, done: this.sendPart(null, this.subjects.admit, encodeStep(meta, admit.rows), admit.rows) });
      }
      for (const [subject, g] of sticky) {
        const meta: StepMeta = { entry: this.entry, seq, hasAdmit: admit.rows.length > 0 };
        sends.push({ ...g, target: subject, done: this.sendPart(subject, subject, encodeStep(meta, g.rows), g.rows) });
      }
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
          const replica = this.replicas.get(meta.replica);
          if (replica) replica.lastHeard = performance.now();
          for (let j = 0; j < s.idx.length; j++) {
            const row = s.rows[j];
            out[s.idx[j]] = sigs[j];
            if (s.target === null) this.placed(row.cacheId, meta.replica);
            if (this.mirror) {
              const m = row.position === 0 ? [] : this.mirror.get(row.cacheId) ?? [];
              for (const t of row.tokens) m.push(t);
              this.mirror.set(row.cacheId, m);
            }
          }
          return;
        }
        const e = res.reason as Error;
        if (!this.dead && this.policy === 'recompute' && e instanceof RemoteRunnerError && e.code === 'replica_lost') retry.push(...s.idx);
        else fatal ??= this.dead ?? e;
      });
      if (fatal) throw fatal;
      if (retry.length) this.stats.recomputedRows += retry.length;
      pending = retry;
    }
    return { rows: out, modelMs };
  }

  /** The row that rebuilds a lost cache: everything it was fed, then this step's tokens, from position 0. */
  private recomputeRow(row: StepRow): StepRow {
    const fed = this.mirror?.get(row.cacheId);
    if (!fed || fed.length !== row.position) {
      throw new RemoteRunnerError('protocol', `model ${this.opts.model}: cannot recompute cache ${row.cacheId} of ${row.requestId} (kept ${fed?.length ?? 0} tokens, row starts at ${row.position})`);
    }
    return { ...row, tokens: fed.concat(row.tokens), position: 0 };
  }

  private placed(cacheId: number, subject: string): void {
    const old = this.placement.get(cacheId);
    if (old) this.replicas.get(old)?.cacheIds.delete(cacheId);
    let r = this.replicas.get(subject);
    if (!r) {
      // A replica we have not heard from yet (its first heartbeat is on the way) took the cache.
      r = { name: subject, subject, lastHeard: performance.now(), kvCapacityTokens: 0, cacheIds: new Set() };
      this.replicas.set(subject, r);
    }
    r.cacheIds.add(cacheId);
    this.placement.set(cacheId, subject);
  }

  private sendPart(target: string | null, subject: string, bytes: Uint8Array, rows: readonly StepRow[]): Promise<DecodedResult> {
    this.stats.parts++;
    this.stats.bytesOut += bytes.length;
    return new Promise<DecodedResult>((resolve, reject) => {
      const part: Part = {
        target,
        cacheIds: target === null ? rows.map((r) => r.cacheId) : [],
        settled: false,
        abandon: (e) => {
          if (part.settled) return;
          part.settled = true;
          this.inflight.delete(part);
          reject(e);
        },
      };
      this.inflight.add(part);
      const sentAt = performance.now();
      this.nc.request(subject, bytes, { timeout: this.stepTimeout }).then(
        (msg) => {
          this.stats.bytesIn += msg.data.length;
          if (part.settled) return this.lateReply(part, msg.data);
          part.settled = true;
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
          if (part.settled) return;
          const err = this.classify(e, target);
          // Attributable losses take the replica out now, which also abandons its other parts.
          if (err.code === 'replica_lost' && target !== null) this.lose(target, err.message);
          else if (err.code === 'no_replicas' || err.code === 'timeout') this.fail(err);
          part.abandon(err);
        },
      );
    });
  }

  private account(roundTripMs: number, meta: ResultMeta): void {
    const queued = meta.queuedMs ?? 0;
    const model = meta.modelMs ?? 0;
    this.stats.answered++;
    this.stats.queuedMs += queued;
    this.stats.modelMs += model;
    this.stats.networkMs += Math.max(0, roundTripMs - queued - model);
  }

  /** An abandoned admit part answered after all: its new caches live on a replica we will not use. */
  private lateReply(part: Part, data: Uint8Array): void {
    if (part.target !== null || this.dead) return;
    try {
      const { meta } = decodeResult(data);
      for (const id of part.cacheIds) this.queueRelease(meta.replica, id);
    } catch {
      // an error reply holds no caches
    }
  }

  private classify(e: Error, target: string | null): RemoteRunnerError {
    if (e instanceof RemoteRunnerError) return e;
    const noResponders = e instanceof RequestError && e.isNoResponders();
    if (noResponders) {
      return target === null
        ? new RemoteRunnerError('no_replicas', `no sub-server of model ${this.opts.model} is subscribed to ${this.subjects.admit}`, { cause: e })
        : new RemoteRunnerError('replica_lost', `replica subject ${target} has no responders (process gone)`, { cause: e });
    }
    if (e instanceof TimeoutError) {
      const msg = `a step on model ${this.opts.model} took longer than ${this.stepTimeout} ms`;
      return target === null ? new RemoteRunnerError('timeout', msg, { cause: e }) : new RemoteRunnerError('replica_lost', msg, { cause: e });
    }
    return new RemoteRunnerError(this.closing ? 'closed' : 'remote_error', `model ${this.opts.model}: ${e.message}`, { cause: e });
  }

  release(cacheId: number): void {
    const where = this.placement.get(cacheId);
    this.placement.delete(cacheId);
    this.mirror?.delete(cacheId);
    if (where === undefined || where === LOST || this.dead) return;
    this.replicas.get(where)?.cacheIds.delete(cacheId);
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
