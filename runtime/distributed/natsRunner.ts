// Entry-side ModelRunner for a model whose sub-servers run in other processes or hosts, reached over NATS.
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from '../runner/modelRunner.ts';
import { DEFAULT_SUBJECT_PREFIX, modelSubjects, type ModelSubjects } from './modelSubjects.ts';
import { AheadStreams, type AheadStep } from './aheadStreams.ts';
import { CachePlacement, LOST } from './cachePlacement.ts';
import { InflightParts, type Part } from './inflightParts.ts';
import { openNats, watchLink, type NatsAuthOptions } from './natsConnection.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';
import { ReplicaSet, type Replica, type ReplicaView } from './replicaSet.ts';
import { encodeRelease, encodeStep, type DecodedResult } from './stepCodec.ts';

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

/** One round's rows for one replica: their indices in the step, and the rows as sent (a lost cache's rebuild in its place). */
interface RowGroup {
  idx: number[];
  rows: StepRow[];
}

/** A step's rows that fail, and why the first of them did. */
interface LostRows {
  rows: number[];
  error: Error | null;
}

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
  readonly pipelineDepth: number;
  private readonly entry = crypto.randomBytes(6).toString('hex');
  private readonly subjects: ModelSubjects;
  private readonly replicas: ReplicaSet;
  private readonly placement: CachePlacement;
  private readonly ahead: AheadStreams;
  private readonly parts: InflightParts;
  private readonly releases = new Map<string, number[]>();
  private releaseScheduled = false;
  private readonly listeners: ((e: Error) => void)[] = [];
  private readonly lostListeners: ((cacheIds: readonly number[], e: Error) => void)[] = [];
  private dead: Error | null = null;
  private closing = false;
  private stepSeq = 0;
  private readonly policy: ReplicaLossPolicy;
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
    const heartbeatTimeoutMs = opts.heartbeatTimeoutMs ?? 1500;
    const depth = opts.pipelineDepth ?? 2;
    if (!Number.isInteger(depth) || depth < 1) throw new RangeError(`pipelineDepth must be an integer ≥ 1, got ${depth}`);
    this.pipelineDepth = depth;
    this.log = opts.log ?? ((l) => console.error(`[tokenrouter] ${l}`));
    const publish = (subject: string, data: Uint8Array | string) => this.publish(subject, data);
    this.replicas = new ReplicaSet(nc, this.subjects, this.entry, opts, heartbeatTimeoutMs, {
      dead: () => this.dead !== null,
      // a replica we had given up on is alive after all: free what we abandoned there
      joined: (subject) => {
        for (const id of this.placement.takeAbandoned(subject)) this.queueRelease(subject, id);
      },
      beat: (subject) => this.parts.resendParked(subject),
      lost: (r, reason) => this.replicaLost(r, reason),
      publish,
      log: this.log,
    });
    this.placement = new CachePlacement(this.replicas, opts.model, this.policy === 'recompute');
    this.parts = new InflightParts(nc, this.stats, { model: opts.model, stepTimeoutMs: opts.stepTimeoutMs ?? 30_000, heartbeatTimeoutMs }, {
      lose: (subject, reason) => this.replicas.lose(subject, reason),
      lateReply: (part) => this.lateReply(part),
      closing: () => this.closing,
    });
    this.ahead = new AheadStreams(nc, this.entry, { fedAhead: (id, token) => this.placement.fedAhead(id, token), publish, log: this.log });
  }

  /** Connects, waits for a replica of the model to answer, and learns the others from their heartbeats. */
  static async connect(opts: NatsRunnerOptions): Promise<NatsRunner> {
    const connectTimeout = opts.connectTimeoutMs ?? 30_000;
    const nc = await openNats({ ...opts, name: `tokenrouter-entry:${opts.model}`, connectTimeoutMs: connectTimeout });
    const runner = new NatsRunner(nc, opts);
    watchLink(nc, { down: () => runner.replicas.linkDown(), up: () => runner.reconnected() });
    try {
      await runner.replicas.admit(performance.now() + connectTimeout);
    } catch (e) {
      await nc.close().catch(() => {});
      throw e;
    }
    return runner;
  }

  /** Lookahead passes a step may ask for: the `lookahead` option, within what every live replica's runner takes. */
  get maxAhead(): number {
    return this.replicas.maxAhead;
  }

  /** KV tokens the entry may place on this model: the sum over its live replicas (onCapacityChange tells when it moves). */
  get kvCapacityTokens(): number {
    return this.replicas.kvCapacityTokens;
  }

  get info(): ModelInfo {
    if (!this.replicas.info) throw new RemoteRunnerError('protocol', 'NatsRunner used before connect() finished');
    return this.replicas.info;
  }

  /** The replicas this entry currently considers alive. */
  replicaViews(): ReplicaView[] {
    return this.replicas.views();
  }

  /** Replica subject holding a cache (undefined: none; '' : lost, awaiting recompute). */
  placementOf(cacheId: number): string | undefined {
    return this.placement.of(cacheId);
  }

  get failed(): Error | null {
    return this.dead;
  }

  /**
   * A replica is gone. Its steps in flight are abandoned (runStep re-places new caches, recomputes
   * or reports rows lost, by policy); its idle caches are marked for recompute or reported lost.
   * Only when no replica is left and this one held something does the runner itself die.
   */
  private replicaLost(r: Replica, reason: string): void {
    this.stats.replicasLost++;
    const held = [...r.cacheIds];
    const parts = this.parts.to(r.subject);
    const err = new RemoteRunnerError('replica_lost', `replica ${r.name} of model ${this.opts.model} is gone (${reason}); it held ${held.length} caches`);
    this.log(err.message);
    if (held.length === 0 && parts.length === 0) return;
    // If it comes back after all (a false alarm), what we abandoned there is released.
    if (held.length) this.placement.abandon(r.subject, held);
    // nowhere left to run them (or recompute them): the service fails what the model held and reconnects
    if (this.replicas.size === 0) return this.fail(err);
    const idle = this.placement.dropLost(held, err, new Set(parts.flatMap((p) => p.cacheIds)));
    for (const p of parts) p.abandon(err);
    this.ahead.end(r.subject);
    if (idle.length) for (const l of this.lostListeners) l(idle, err);
  }

  onCapacityChange(listener: (kvTokens: number) => void): void {
    this.replicas.onCapacityChange(listener);
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
    this.parts.abandonAll(e);
    this.ahead.end(null);
    void this.shutdown();
  }

  step(rows: readonly StepRow[]): Promise<StepOutput> {
    if (this.dead) return Promise.reject(this.dead);
    return this.runStep(rows);
  }

  /** The engine has new work: replicas still looking ahead for us hand back what they have. */
  yieldAhead(): void {
    this.ahead.yieldAll();
  }

  private async runStep(rows: readonly StepRow[]): Promise<StepOutput> {
    this.stats.steps++;
    this.flushReleases();
    const out: TokenSignals[] = new Array(rows.length);
    const streamed = this.maxAhead > 0 && rows.some((r) => (r.ahead ?? 0) > 0) ? this.ahead.open(rows, out) : null;
    try {
      return await this.stepRounds(rows, out, streamed);
    } catch (e) {
      // no stream for a step that failed: close its inbox
      streamed?.assembler.endReplica(null);
      throw e;
    }
  }

  /** Sends the step's rows, one part per replica, until each has its answer or is lost; rows of lost replicas go again in the next round. */
  private async stepRounds(rows: readonly StepRow[], out: TokenSignals[], streamed: AheadStep | null): Promise<StepOutput> {
    const lost: LostRows = { rows: [], error: null };
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
      const groups = this.group(rows, pending, lost);
      const meta = { entry: this.entry, seq, ...(streamed ? { aheadTo: streamed.inbox } : {}) };
      const sends = [...groups].map(([subject, g]) => ({ ...g, target: subject, done: this.parts.send(subject, encodeStep(meta, g.rows), g.rows) }));
      if (streamed) for (const [subject, g] of groups) if (g.rows.some((r) => (r.ahead ?? 0) > 0)) streamed.assembler.asked(seq, subject);
      const settled = await Promise.allSettled(sends.map((s) => s.done));
      const retry: number[] = [];
      let fatal: Error | null = null;
      settled.forEach((res, k) => {
        const s = sends[k];
        if (res.status === 'fulfilled') {
          const bad = this.took(s, res.value, out);
          if (bad) fatal ??= bad;
          else {
            modelMs = Math.max(modelMs, res.value.meta.modelMs ?? 0);
            if (streamed && s.rows.some((r) => (r.ahead ?? 0) > 0)) streamed.assembler.expect(seq, s.target, s.idx);
          }
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
            lost.rows.push(s.idx[j]);
            lost.error ??= e;
          }
        }
      });
      if (fatal) throw fatal;
      pending = retry;
    }
    streamed?.assembler.settle();
    // parts that arrived already wait in the stream for the engine to listen
    const aheadStream = streamed?.assembler.streaming ? streamed.assembler.stream : undefined;
    return { rows: out, modelMs, ...(aheadStream ? { aheadStream } : {}), ...(lost.rows.length ? { lost: { rows: lost.rows, error: lost.error! } } : {}) };
  }

  /**
   * One round's rows by the replica they go to: where their cache lives, or for a new or lost
   * cache the least-loaded replica. Rows that cannot go anywhere join `lost`.
   */
  private group(rows: readonly StepRow[], pending: readonly number[], lost: LostRows): Map<string, RowGroup> {
    const groups = new Map<string, RowGroup>();
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
      const died = row.position === 0 ? undefined : this.placement.goneError(row.cacheId);
      if (died) {
        lost.rows.push(i);
        lost.error ??= died;
        continue;
      }
      const where = row.position === 0 ? LOST : this.placement.of(row.cacheId);
      if (where === undefined) throw new RemoteRunnerError('protocol', `model ${this.opts.model}: cache ${row.cacheId} of ${row.requestId} is on no replica`);
      if (where !== LOST) {
        add(where, i, row);
        continue;
      }
      const fresh = row.position === 0 ? row : this.placement.recomputeRow(row);
      if (fresh !== row) this.stats.recomputedRows++;
      const r = this.placement.leastLoaded(adding, fresh.tokens.length);
      if (!r) {
        // nowhere to put it: this request fails, the rest of the step goes on
        lost.rows.push(i);
        lost.error ??= this.placement.noPlaceError();
        continue;
      }
      adding.set(r, (adding.get(r) ?? 0) + fresh.tokens.length);
      // counted when decided: a step already on its way to a replica that starts draining is not a new placement
      r.placed++;
      add(r.subject, i, fresh);
    }
    return groups;
  }

  /** A part's answer: its rows' results go to `out` and into the books. Answers the error if it does not fit the part. */
  private took(s: RowGroup & { target: string }, answer: DecodedResult, out: TokenSignals[]): RemoteRunnerError | null {
    const { meta, rows: sigs } = answer;
    if (sigs.length !== s.rows.length) return new RemoteRunnerError('protocol', `replica ${meta.replica} answered ${sigs.length} rows for ${s.rows.length}`);
    this.replicas.answered(s.target);
    for (let j = 0; j < s.idx.length; j++) {
      out[s.idx[j]] = sigs[j];
      this.placement.fed(s.rows[j], s.target);
    }
    return null;
  }

  /**
   * NATS dropped us and we are back (a broker restart, a network blip). Parts in flight may have
   * lost their request or their reply: each is sent again once its replica is heard again, and
   * the replica answers a part it already ran from its cache of recent results. Heartbeats missed
   * while we were away are not held against the replicas.
   */
  private reconnected(): void {
    const now = performance.now();
    this.stats.reconnects++;
    this.replicas.linkUp(now);
    this.parts.reconnected(now);
    // passes streamed while we were away are lost; what came stands, the replicas roll back the rest
    this.ahead.end(null);
  }

  /** An abandoned part answered after all: the caches it created live on a replica we no longer use for them. */
  private lateReply(part: Part): void {
    if (this.dead) return;
    for (const id of part.newCacheIds) this.queueRelease(part.target, id);
  }

  release(cacheId: number): void {
    const where = this.placement.release(cacheId);
    if (where === undefined || this.dead) return;
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
      this.replicas.stop();
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
    this.parts.abandonAll(e);
    this.ahead.end(null);
    if (!this.dead) this.dead = e;
    await this.shutdown();
  }
}
