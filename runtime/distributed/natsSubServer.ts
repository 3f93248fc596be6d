// Sub-server side of the NATS transport: one model's runner answering hellos on its model's queue group and steps on its own subject.
import crypto from 'node:crypto';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { AheadStream, ModelRunner, StepOutput, StepRow } from '../runner/modelRunner.ts';
import { DEFAULT_SUBJECT_PREFIX, modelSubjects } from './modelSubjects.ts';
import { watchLink } from './natsConnection.ts';
import { WIRE_PROTOCOL, type ReplicaAnnouncement } from './replicaAnnouncement.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';
import { decodeControl, decodeRelease, decodeStep, encodeControl, encodeResult, wireKind, WireKind, type DecodedStep } from './stepCodec.ts';
import { AheadChannel } from '../runner/aheadChannel.ts';

export interface NatsSubServerOptions {
  /** Model name entries ask for (their config's model name). */
  model: string;
  /** Replica name, for logs and the entry's replica list; several processes may serve one model. */
  replica: string;
  subjectPrefix?: string;
  /** Heartbeat period; entries declare a replica dead after their heartbeatTimeoutMs of silence. Default 250 ms. */
  heartbeatMs?: number;
  /** KV tokens this replica can hold, announced so the entry can bound what it places here. */
  kvCapacityTokens: number;
  /** Caches of an entry silent this long (no keepalive, no step) are freed. Default 15 s. */
  entryTimeoutMs?: number;
  log?: (line: string) => void;
}

interface Incoming {
  msg: Msg;
  step: DecodedStep;
  arrived: number;
  /** The same part sent again while this one waited or ran (an entry that reconnected): answered alike. */
  also: Msg[];
}

/**
 * Answers kept for parts an entry may send again after a NATS reconnect: a repeated part is
 * answered from here instead of running twice (a second run would feed its tokens twice). Kept
 * as long as an entry waits for a step, within a count bound.
 */
const RECENT_MS = 30_000;
const RECENT_MAX = 4096;

/**
 * Receives step parts, merges whatever is queued when the runner is free into one batch (so steps
 * of several entries, or pipelined steps of one, share a forward pass), and answers each part with
 * its rows' signals. Cache ids are only unique per entry, so caches are keyed by (entry, cacheId)
 * and mapped to this runner's own ids.
 */
export class NatsSubServer {
  readonly incarnation = crypto.randomBytes(5).toString('hex');
  readonly subject: string;
  private readonly heartbeatSubject: string;
  private readonly caches = new Map<string, number>();
  /** Tokens each cache holds, and their sum: the load announced in heartbeats, for placement by load. */
  private readonly cacheTokens = new Map<string, number>();
  private kvTokens = 0;
  private readonly byEntry = new Map<string, Set<string>>();
  private readonly entryHeard = new Map<string, number>();
  private queue: Incoming[] = [];
  /** Parts waiting or running, and recent answers, by entry/seq. */
  private readonly pending = new Map<string, Incoming>();
  private readonly recent = new Map<string, { bytes: Uint8Array; at: number }>();
  private disconnected = false;
  private draining = false;
  /** Entry steps (entry/seq) in the batch running now: a yield for one of them cuts its lookahead short. */
  private running: Set<string> | null = null;
  /** Yields for steps still queued here, applied when they start. */
  private readonly yieldRequested = new Set<string>();
  private busy = false;
  private pumpScheduled = false;
  private nextInner = 1;
  private readonly subs: Subscription[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private closed = false;
  private readonly log: (line: string) => void;
  private readonly heartbeatMs: number;
  readonly stats = { batches: 0, rows: 0, parts: 0, releases: 0, entriesExpired: 0, repeats: 0 };

  private constructor(
    private readonly nc: NatsConnection,
    private readonly runner: ModelRunner,
    private readonly opts: NatsSubServerOptions,
  ) {
    const s = modelSubjects(opts.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX, opts.model);
    this.subject = s.replica(opts.replica, this.incarnation);
    this.heartbeatSubject = s.heartbeat;
    this.heartbeatMs = opts.heartbeatMs ?? 250;
    this.log = opts.log ?? ((l) => console.error(`[subserver ${opts.model}/${opts.replica}] ${l}`));
    const deliver = (handle: (msg: Msg) => void) => (err: Error | null, msg: Msg) => {
      if (!err) handle(msg);
    };
    this.subs.push(
      nc.subscribe(s.admit, { queue: s.queue, callback: deliver((m) => this.onMessage(m)) }),
      nc.subscribe(this.subject, { callback: deliver((m) => this.onMessage(m)) }),
      nc.subscribe(s.entries, { callback: deliver((m) => this.onEntry(m)) }),
    );
    this.timers.push(setInterval(() => this.heartbeat(), this.heartbeatMs));
    const entryTimeout = opts.entryTimeoutMs ?? 15_000;
    this.timers.push(setInterval(() => this.expireEntries(entryTimeout), Math.max(100, entryTimeout / 3)));
  }

  /** Subscribes and announces itself; resolves once the NATS server has the subscriptions. */
  static async start(nc: NatsConnection, runner: ModelRunner, opts: NatsSubServerOptions): Promise<NatsSubServer> {
    const s = new NatsSubServer(nc, runner, opts);
    watchLink(nc, { down: () => (s.disconnected = true), up: () => s.reconnected() });
    await nc.flush();
    s.heartbeat();
    return s;
  }

  /** Caches held for all entries. */
  get liveCaches(): number {
    return this.caches.size;
  }

  private announcement(bye = false): ReplicaAnnouncement {
    return {
      protocol: WIRE_PROTOCOL,
      replica: this.opts.replica,
      subject: this.subject,
      info: this.runner.info,
      kvCapacityTokens: this.opts.kvCapacityTokens,
      heartbeatMs: this.heartbeatMs,
      caches: this.caches.size,
      kvTokens: this.kvTokens,
      maxAhead: this.runner.maxAhead ?? 0,
      ...(this.draining ? { draining: true } : {}),
      ...(bye ? { bye: true } : {}),
    };
  }

  private heartbeat(bye = false): void {
    if (this.nc.isClosed()) return;
    try {
      this.nc.publish(this.heartbeatSubject, JSON.stringify(this.announcement(bye)));
    } catch {
      // reconnecting: the client buffers, or we are closing
    }
  }

  private onMessage(msg: Msg): void {
    if (this.closed) return;
    let kind: WireKind;
    try {
      kind = wireKind(msg.data);
    } catch (e) {
      return this.replyError(msg, e as Error);
    }
    if (kind === WireKind.Hello) {
      msg.respond(encodeControl(WireKind.Info, this.announcement()));
      return;
    }
    if (kind === WireKind.Release) {
      try {
        const { entry, cacheIds } = decodeRelease(msg.data);
        this.entryHeard.set(entry, performance.now());
        for (const id of cacheIds) this.drop(`${entry}/${id}`);
      } catch (e) {
        this.log(`bad release message: ${(e as Error).message}`);
      }
      return;
    }
    if (kind === WireKind.Yield) {
      try {
        const { entry, seq } = decodeControl<{ entry: string; seq: number }>(msg.data, WireKind.Yield);
        const key = `${entry}/${seq}`;
        if (this.running?.has(key)) this.runner.yieldAhead?.();
        else if (this.pending.has(key)) this.yieldRequested.add(key);
      } catch (e) {
        this.log(`bad yield message: ${(e as Error).message}`);
      }
      return;
    }
    if (kind !== WireKind.Step) return this.replyError(msg, new RemoteRunnerError('protocol', `unexpected message kind ${kind}`));
    let step: DecodedStep;
    try {
      step = decodeStep(msg.data);
    } catch (e) {
      return this.replyError(msg, e as Error);
    }
    this.entryHeard.set(step.meta.entry, performance.now());
    const key = `${step.meta.entry}/${step.meta.seq}`;
    const done = this.recent.get(key);
    const waiting = this.pending.get(key);
    if (done || waiting) {
      this.stats.repeats++;
      if (done) msg.respond(done.bytes);
      else waiting!.also.push(msg);
      return;
    }
    this.stats.parts++;
    const inc: Incoming = { msg, step, arrived: performance.now(), also: [] };
    this.pending.set(key, inc);
    this.queue.push(inc);
    this.schedulePump();
  }

  /** Keepalives missed while we were cut off from NATS are not held against the entries. */
  private reconnected(): void {
    this.disconnected = false;
    const now = performance.now();
    for (const entry of this.entryHeard.keys()) this.entryHeard.set(entry, now);
    // tell entries at once that we are back, rather than at the next period
    this.heartbeat();
  }

  private onEntry(msg: Msg): void {
    let body: { entry?: string; bye?: boolean };
    try {
      body = msg.json();
    } catch {
      return;
    }
    if (!body.entry) return;
    if (body.bye) this.dropEntry(body.entry, 'it closed');
    else if (this.byEntry.has(body.entry)) this.entryHeard.set(body.entry, performance.now());
  }

  private expireEntries(timeoutMs: number): void {
    // cut off ourselves, we hear no keepalive: that says nothing about the entries
    if (this.disconnected) return;
    const now = performance.now();
    for (const entry of [...this.byEntry.keys()]) {
      if (now - (this.entryHeard.get(entry) ?? 0) > timeoutMs) {
        this.stats.entriesExpired++;
        this.dropEntry(entry, `no keepalive for ${Math.round(now - (this.entryHeard.get(entry) ?? 0))} ms`);
      }
    }
  }

  private dropEntry(entry: string, why: string): void {
    const keys = this.byEntry.get(entry);
    if (keys?.size) this.log(`freeing ${keys.size} caches of entry ${entry}: ${why}`);
    for (const k of [...(keys ?? [])]) this.drop(k);
    this.byEntry.delete(entry);
    this.entryHeard.delete(entry);
  }

  private drop(key: string): void {
    const inner = this.caches.get(key);
    if (inner === undefined) return;
    this.caches.delete(key);
    this.kvTokens -= this.cacheTokens.get(key) ?? 0;
    this.cacheTokens.delete(key);
    this.byEntry.get(key.slice(0, key.indexOf('/')))?.delete(key);
    this.runner.release(inner);
    this.stats.releases++;
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // after the current socket read: every part that arrived in it joins the batch
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.busy || this.queue.length === 0 || this.closed) return;
    const take = this.queue;
    this.queue = [];
    void this.run(take);
  }

  /** Maps each part's (entry, cacheId) rows to this runner's caches; a part naming an unknown cache fails alone. */
  private translate(parts: Incoming[]): { rows: StepRow[]; keys: string[]; spans: { inc: Incoming; from: number; to: number }[] } {
    const rows: StepRow[] = [];
    const keys: string[] = [];
    const spans: { inc: Incoming; from: number; to: number }[] = [];
    for (const inc of parts) {
      const { entry } = inc.step.meta;
      const missing = inc.step.rows.find((r) => r.position !== 0 && !this.caches.has(`${entry}/${r.cacheId}`));
      if (missing) {
        this.answerError(inc, new RemoteRunnerError('remote_error', `replica ${this.opts.replica}: cache ${missing.cacheId} of ${missing.requestId} is not here (released, expired, or this replica restarted)`));
        continue;
      }
      const from = rows.length;
      for (const r of inc.step.rows) {
        const key = `${entry}/${r.cacheId}`;
        let inner = this.caches.get(key);
        if (r.position === 0) {
          if (inner !== undefined) this.runner.release(inner);
          inner = this.nextInner++;
          this.caches.set(key, inner);
          let set = this.byEntry.get(entry);
          if (!set) this.byEntry.set(entry, (set = new Set()));
          set.add(key);
        }
        rows.push({ ...r, cacheId: inner! });
        keys.push(key);
      }
      spans.push({ inc, from, to: rows.length });
    }
    return { rows, keys, spans };
  }

  private async run(parts: Incoming[]): Promise<void> {
    this.busy = true;
    const { rows, keys, spans } = this.translate(parts);
    try {
      if (rows.length === 0) return;
      const t0 = performance.now();
      let out: StepOutput;
      const running = new Set(spans.map((s) => `${s.inc.step.meta.entry}/${s.inc.step.meta.seq}`));
      this.running = running;
      try {
        const r = this.runner.step(rows);
        // an entry that got new work while this step waited here wants its lookahead cut short
        let yielded = false;
        for (const k of running) yielded = this.yieldRequested.delete(k) || yielded;
        if (yielded) this.runner.yieldAhead?.();
        out = r instanceof Promise ? await r : r;
        // A simulated runner reports how long the step takes: spend that time, as a model would.
        if (!(r instanceof Promise) && out.durationMs) await sleep(out.durationMs);
      } catch (e) {
        for (const s of spans) this.answerError(s.inc, e as Error);
        return;
      }
      const modelMs = out.modelMs ?? performance.now() - t0;
      this.stats.batches++;
      this.stats.rows += rows.length;
      const passes = new Array<number>(rows.length).fill(0);
      const held = () => {
        for (let i = 0; i < rows.length; i++) {
          // a cache released while its step ran is gone already
          if (!this.caches.has(keys[i])) continue;
          const n = rows[i].position + rows[i].tokens.length + passes[i];
          this.kvTokens += n - (this.cacheTokens.get(keys[i]) ?? 0);
          this.cacheTokens.set(keys[i], n);
        }
      };
      const now = performance.now();
      for (const s of spans) {
        const bytes = encodeResult({ replica: this.subject, modelMs, queuedMs: t0 - s.inc.arrived }, out.rows.slice(s.from, s.to));
        this.answer(s.inc, bytes);
        this.remember(s.inc, bytes, now);
      }
      const stream: AheadStream | null = out.aheadStream ?? (out.ahead ? finishedStream(out.ahead, rows.length) : null);
      if (!stream) return held();
      // Lookahead passes go to each entry's inbox for the step (aheadTo) as they finish, as a local
      // worker streams them; the model is busy until the last one.
      const streamed = spans.filter((s) => s.inc.step.meta.aheadTo);
      const kept: TokenSignals[][] = rows.map(() => []);
      const stopped = new Array<boolean>(rows.length).fill(false);
      let pass = 0;
      await new Promise<void>((resolve) =>
        stream.listen(
          (part) => {
            pass++;
            for (let i = 0; i < rows.length; i++) {
              const sig = part.rows[i];
              if (!sig) stopped[i] = true;
              else if (!stopped[i]) {
                kept[i].push(sig);
                passes[i]++;
              }
            }
            for (const s of streamed) {
              const slice = kept.slice(s.from, s.to).map((k, j) => (!stopped[s.from + j] && k.length === pass ? [k[pass - 1]] : []));
              this.publish(s.inc.step.meta.aheadTo!, encodeResult({ replica: this.subject, seq: s.inc.step.meta.seq, pass }, [], slice));
            }
          },
          // an error ending the stream is the runner dying (the process exits); what came before stands
          () => resolve(),
        ),
      );
      held();
      for (const s of streamed) this.publish(s.inc.step.meta.aheadTo!, encodeResult({ replica: this.subject, seq: s.inc.step.meta.seq, end: true }, []));
    } finally {
      this.running = null;
      this.busy = false;
      if (this.queue.length) this.schedulePump();
    }
  }

  private publish(subject: string, data: Uint8Array): void {
    try {
      this.nc.publish(subject, data);
    } catch {
      // closing or reconnecting: the entry ends the stream when it sees us gone or reconnects
    }
  }

  private answer(inc: Incoming, bytes: Uint8Array): void {
    this.pending.delete(`${inc.step.meta.entry}/${inc.step.meta.seq}`);
    for (const m of [inc.msg, ...inc.also]) {
      try {
        m.respond(bytes);
      } catch {
        // closing: the entry's step times out or sees us gone
      }
    }
  }

  private answerError(inc: Incoming, e: Error): void {
    this.pending.delete(`${inc.step.meta.entry}/${inc.step.meta.seq}`);
    for (const m of [inc.msg, ...inc.also]) this.replyError(m, e);
  }

  private remember(inc: Incoming, bytes: Uint8Array, now: number): void {
    this.recent.set(`${inc.step.meta.entry}/${inc.step.meta.seq}`, { bytes, at: now });
    // insertion order is age order: drop from the front
    for (const [k, v] of this.recent) {
      if (this.recent.size <= RECENT_MAX && now - v.at <= RECENT_MS) break;
      this.recent.delete(k);
    }
  }

  private replyError(msg: Msg, e: Error): void {
    if (!msg.reply) return;
    try {
      msg.respond(encodeControl(WireKind.Error, { message: e.message }));
    } catch {
      // connection closing
    }
  }

  /**
   * Graceful leave: announces itself draining, so entries place no new request here, and goes on
   * serving the caches it holds until the entries have released them all (their requests ended)
   * or `timeoutMs` passed. Then it closes. Resolves with the caches still held at the end.
   */
  async drain(timeoutMs: number): Promise<number> {
    if (this.closed) return this.caches.size;
    if (!this.draining) {
      this.draining = true;
      // new entries are admitted by the others
      this.subs.shift()?.unsubscribe();
      this.heartbeat();
      this.log(`draining: ${this.caches.size} caches to finish (up to ${timeoutMs} ms)`);
    }
    const deadline = performance.now() + timeoutMs;
    while (this.caches.size > 0 && performance.now() < deadline && !this.closed) await sleep(Math.min(100, Math.max(1, deadline - performance.now())));
    const left = this.caches.size;
    await this.close();
    return left;
  }

  /** Stops taking work, tells entries this replica is leaving (so they react at once), unsubscribes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    for (const inc of this.queue) this.answerError(inc, new RemoteRunnerError('closed', `replica ${this.opts.replica} is shutting down`));
    this.queue = [];
    this.heartbeat(true);
    for (const s of this.subs) s.unsubscribe();
    if (!this.nc.isClosed()) await this.nc.flush().catch(() => {});
  }
}

/** Lookahead a runner answered all at once, as a stream that has already finished. */
function finishedStream(ahead: readonly (readonly TokenSignals[])[], n: number): AheadStream {
  const ch = new AheadChannel();
  const passes = Math.max(0, ...ahead.map((a) => a?.length ?? 0));
  for (let p = 0; p < passes; p++) ch.push({ rows: Array.from({ length: n }, (_, i) => ahead[i]?.[p]), modelMs: 0 });
  ch.end();
  return ch;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
