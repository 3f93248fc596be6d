// `tokenrouter subserver`'s core: one model's engine server on NATS - heartbeats with its load, one ordered link per entry and per peer replica, drain.
import crypto from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { ModelRunner } from '../../runner/modelRunner.ts';
import type { Decoder } from '../../runner/incrementalDetokenizer.ts';
import { serveEngine, type PortedEngine } from '../serveEngine.ts';
import type { PortLike, ReplicaAnnouncement } from '../../../shared/protocol/engineProtocol.ts';
import { DEFAULT_SUBJECT_PREFIX, modelSubjects } from './modelSubjects.ts';
import { decodeFrame, NatsLink } from './natsLink.ts';
import { watchLink } from './natsConnection.ts';
import { NatsPeers, newPeerStats, peerSubject } from './natsPeers.ts';

/** 5: engine-to-engine handoffs (`remote-peers`, `${subject}.peer` frames). 6: a frame carries the messages of one turn and an ack. */
export const WIRE_PROTOCOL = 6;

export interface RemoteEngineServerOptions {
  /** Model name entries ask for (their config's model name). */
  model: string;
  /** Replica name, for logs and the entry's replica list; several processes may serve one model. */
  replica: string;
  subjectPrefix?: string;
  /** Heartbeat period; entries declare a replica dead after their heartbeatTimeoutMs of silence. Default 250 ms. */
  heartbeatMs?: number;
  /** KV tokens this replica holds: its engine's pool, announced so entries can weigh placements. */
  kvCapacityTokens: number;
  /** An entry silent this long (its link's keepalives stopped) is forgotten and what it held freed. Default 15 s. */
  entryTimeoutMs?: number;
  log?: (line: string) => void;
  /** The model's tokenizer, loaded beside its runner: the engine detokenises requests that ask for text. */
  decoder?: Decoder;
  /** Told of each message the engine could not handle; the entry's requests here have failed by then and the process serves on. */
  onError?: (e: Error) => void;
}

interface Session {
  link: NatsLink;
  gate: SessionGate;
  serving: { readonly server: PortedEngine | null };
  /** This deployment's remote peers, from its `begin` on. */
  peers: NatsPeers | null;
}

/** Messages of an engine thread's protocol that an entry across NATS sends (ports cannot travel). */
const ENTRY_MESSAGES = new Set(['begin', 'remote-peers', 'deploy', 'arrive', 'release', 'threshold', 'grant', 'down', 'peer-lost', 'close']);

/**
 * Stands between an entry's link and its engine server: only messages between the entry's `begin`
 * and its `close` reach the engine. An entry's messages can come late (the cancellations of a
 * shutting-down entry follow its `close`) or be of a kind this build does not know; the engine
 * would take either for a broken protocol, and one entry must never bring down a replica that
 * outlives it. So they are dropped and counted here.
 */
class SessionGate implements PortLike {
  private listener: ((m: unknown) => void) | null = null;
  private begun = false;
  private closed = false;

  constructor(
    private readonly link: NatsLink,
    private readonly ignored: (type: string, why: string) => void,
  ) {
    link.on('message', (m) => this.pass(m));
  }

  /** Between the entry's `begin` and its `close`: its peers' handoffs are taken too. */
  get open(): boolean {
    return this.begun && !this.closed;
  }

  private pass(m: unknown): void {
    const type = typeof (m as { type?: unknown })?.type === 'string' ? (m as { type: string }).type : '?';
    if (!ENTRY_MESSAGES.has(type)) return this.ignored(type, 'not a message an entry sends');
    if (this.closed) return this.ignored(type, 'after the entry closed');
    if (type === 'begin') this.begun = true;
    else if (!this.begun) return this.ignored(type, 'before the entry began');
    if (type === 'close') this.closed = true;
    this.listener?.(m);
  }

  postMessage(m: unknown): void {
    this.link.postMessage(m);
  }

  on(_event: 'message', listener: (m: unknown) => void): this {
    this.listener = listener;
    return this;
  }

  close(): void {
    this.closed = true;
    this.link.close();
  }
}

/**
 * Serves one model's engine to entries over NATS. An entry links to `${subject}.in` (frames carry
 * its session and inbox); the engine server answers on the entry's inbox. One entry at a time: a
 * new entry's `begin` takes the engine over, as a bench's next server does with a thread engine,
 * and what the one before held is freed.
 */
export class RemoteEngineServer {
  readonly incarnation = crypto.randomBytes(5).toString('hex');
  readonly subject: string;
  private readonly session = crypto.randomBytes(6).toString('hex');
  private readonly heartbeatSubject: string;
  private readonly sessions = new Map<string, Session>();
  private readonly subs: Subscription[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private disconnected = false;
  private draining = false;
  private closed = false;
  private readonly log: (line: string) => void;
  private readonly heartbeatMs: number;
  /**
   * Entries' messages dropped rather than handled (`ignored`: late, stray or of an unknown kind;
   * `failed`: the engine threw on one, which failed that entry's requests here): never fatal.
   */
  readonly stats = { ignored: 0, failed: 0 };
  /** Handoffs to peer replicas of the entries' other remote models, over all entries. */
  readonly peerStats = newPeerStats();
  private lastIgnoredLog = -Infinity;
  private ignoredSinceLog = 0;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly runner: ModelRunner,
    private readonly opts: RemoteEngineServerOptions,
  ) {
    const s = modelSubjects(opts.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX, opts.model);
    this.subject = s.replica(opts.replica, this.incarnation);
    this.heartbeatSubject = s.heartbeat;
    this.heartbeatMs = opts.heartbeatMs ?? 250;
    this.log = opts.log ?? ((l) => console.error(`[subserver ${opts.model}/${opts.replica}] ${l}`));
    this.subs.push(nc.subscribe(`${this.subject}.in`, { callback: (err, msg) => void (err || this.onFrame(msg.data)) }));
    this.subs.push(nc.subscribe(peerSubject(this.subject), { callback: (err, msg) => void (err || this.onPeerFrame(msg.data)) }));
    this.timers.push(setInterval(() => this.heartbeat(), this.heartbeatMs));
    const entryTimeout = opts.entryTimeoutMs ?? 15_000;
    this.timers.push(setInterval(() => this.expireEntries(entryTimeout), Math.max(100, entryTimeout / 3)));
  }

  /** Subscribes and announces itself; resolves once the NATS server has the subscription. */
  static async start(nc: NatsConnection, runner: ModelRunner, opts: RemoteEngineServerOptions): Promise<RemoteEngineServer> {
    const s = new RemoteEngineServer(nc, runner, opts);
    watchLink(nc, { down: () => (s.disconnected = true), up: () => s.reconnected() });
    await nc.flush();
    s.heartbeat();
    return s;
  }

  /** Requests held for all entries. */
  get held(): number {
    let n = 0;
    for (const s of this.sessions.values()) n += s.serving.server?.held ?? 0;
    return n;
  }

  private announcement(bye: boolean): ReplicaAnnouncement {
    let kvBytes = 0;
    for (const s of this.sessions.values()) kvBytes += s.serving.server?.engine.laneStats().kvBytes ?? 0;
    return {
      protocol: WIRE_PROTOCOL,
      replica: this.opts.replica,
      subject: this.subject,
      info: this.runner.info,
      kvCapacityTokens: this.opts.kvCapacityTokens,
      heartbeatMs: this.heartbeatMs,
      requests: this.held,
      kvTokens: kvBytes / Math.max(1, this.runner.info.kvBytesPerToken),
      draining: this.draining,
      bye,
      ignoredMessages: this.stats.ignored + this.stats.failed,
    };
  }

  private heartbeat(bye = false): void {
    if (this.nc.isClosed()) return;
    try {
      this.nc.publish(this.heartbeatSubject, JSON.stringify(this.announcement(bye)));
    } catch {
      // reconnecting (the client buffers) or closing
    }
  }

  private onFrame(bytes: Uint8Array): void {
    if (this.closed) return;
    const f = decodeFrame(bytes);
    if (!f) return this.log('dropped a malformed frame');
    let s = this.sessions.get(f.session);
    if (!s) {
      // only an entry's first message opens a session: a stray ack or a late frame of a forgotten entry does not
      if (f.seq === undefined) return;
      if (f.seq !== 1 || !f.reply) return this.ignore(f.session, `frame ${f.seq}`, 'from an entry this replica does not serve (forgotten, or never began)');
      s = this.open(f.session, f.reply);
    }
    s.link.receive(f);
  }

  /** A peer replica's frame: taken only for an entry this replica serves (begun, not closed) and from a replica that entry listed. */
  private onPeerFrame(bytes: Uint8Array): void {
    if (this.closed) return;
    const f = decodeFrame(bytes);
    if (!f) return this.log('dropped a malformed peer frame');
    const s = f.entry === undefined ? undefined : this.sessions.get(f.entry);
    if (!s?.gate.open || !s.peers?.receiveFrame(f)) {
      // a frame of a link this side never heard of (acks, keepalives) is no handoff: only numbered ones count
      if (f.seq !== undefined) this.ignore(f.entry ?? '?', `peer frame ${f.seq} from ${f.reply ?? '?'}`, 'not from a peer of an entry this replica serves');
    }
  }

  private open(entry: string, reply: string): Session {
    const link = new NatsLink({ session: this.session, reply: this.subject, publish: (b) => this.nc.publish(reply, b) });
    const gate = new SessionGate(link, (type, why) => this.ignore(entry, `"${type}"`, why));
    const session: Session = {
      link,
      gate,
      peers: null,
      serving: serveEngine(gate, this.runner, {
        decoder: this.opts.decoder,
        remotePeers: (server, m) => session.peers?.setPeers(server, m.session, m.peers),
        // the entry is done with this engine: free what it held (a takeover by a later entry would too)
        onClose: async () => this.forget(entry, 'it closed'),
        onError: (e) => this.engineFailed(entry, e),
        // one entry at a time: a new deployment takes the model over from the ones before
        onBegin: () => {
          for (const other of [...this.sessions.keys()]) if (other !== entry) this.forget(other, 'another entry took the model over');
          session.peers?.close();
          session.peers = new NatsPeers({
            nc: this.nc,
            model: this.opts.model,
            subject: this.subject,
            stats: this.peerStats,
            log: (l) => this.log(`entry ${entry}: ${l}`),
          });
        },
      }),
    };
    this.sessions.set(entry, session);
    return session;
  }

  /** One line a second at most: a shutting-down entry's cancellations come in bursts. */
  private ignore(entry: string, what: string, why: string): void {
    this.stats.ignored++;
    this.ignoredSinceLog++;
    const now = performance.now();
    if (now - this.lastIgnoredLog < 1000) return;
    this.log(
      `ignored ${this.ignoredSinceLog === 1 ? '' : `${this.ignoredSinceLog} messages, last `}${what} of entry ${entry} (${why}); ${this.stats.ignored} ignored in all`,
    );
    this.lastIgnoredLog = now;
    this.ignoredSinceLog = 0;
  }

  /**
   * The engine threw on an entry's message (malformed, or a bug). The replica outlives it: that
   * entry's requests here fail, and the entry hears so (their state may be off), the others' are
   * untouched, and the engine serves on.
   */
  private engineFailed(entry: string, e: Error): void {
    this.stats.failed++;
    this.log(
      `entry ${entry}: the engine could not handle a message: ${e.message}; failing that entry's requests here (${this.stats.failed} such messages in all)`,
    );
    const server = this.sessions.get(entry)?.serving.server;
    server?.host.failHeld(e);
    this.opts.onError?.(e);
  }

  private forget(entry: string, why: string): void {
    const s = this.sessions.get(entry);
    if (!s) return;
    this.sessions.delete(entry);
    const server = s.serving.server;
    if (server && server.held > 0) this.log(`freeing ${server.held} requests of entry ${entry}: ${why}`);
    server?.engine.failAll(new Error(why));
    server?.dispose();
    s.peers?.close();
    s.gate.close();
  }

  private expireEntries(timeoutMs: number): void {
    // cut off ourselves, we hear no keepalive: that says nothing about the entries
    if (this.disconnected) return;
    const now = performance.now();
    for (const [entry, s] of [...this.sessions])
      if (now - s.link.lastHeard > timeoutMs) this.forget(entry, `no keepalive for ${Math.round(now - s.link.lastHeard)} ms`);
  }

  /** Back on NATS: keepalives missed meanwhile are not held against the entries; what was in flight goes again. */
  private reconnected(): void {
    this.disconnected = false;
    const now = performance.now();
    for (const s of this.sessions.values()) {
      s.link.lastHeard = now;
      s.link.resend();
      s.peers?.resend();
    }
    this.heartbeat();
  }

  /**
   * Graceful leave: announces itself draining, so entries place no new request here, and goes on
   * serving the requests it holds until none has been held for a quiet period or `timeoutMs` passed. Then it closes.
   * Resolves with the requests still held at the end.
   */
  async drain(timeoutMs: number): Promise<number> {
    if (this.closed) return this.held;
    if (!this.draining) {
      this.draining = true;
      this.heartbeat();
      this.log(`draining: ${this.held} requests to finish (up to ${timeoutMs} ms)`);
    }
    const deadline = performance.now() + timeoutMs;
    // Empty is not done: an entry's placement sent before it heard the draining heartbeat may still be on the
    // wire, and closing then fails it. Done is empty for a quiet period of a few heartbeats.
    const quietMs = Math.max(4 * this.heartbeatMs, 500);
    let emptySince = this.held === 0 ? performance.now() : Infinity;
    while (performance.now() < deadline && !this.closed && performance.now() - emptySince < quietMs) {
      await new Promise((r) => setTimeout(r, Math.min(50, Math.max(1, deadline - performance.now()))));
      if (this.held > 0) emptySince = Infinity;
      else if (emptySince === Infinity) emptySince = performance.now();
    }
    const left = this.held;
    await this.close();
    return left;
  }

  /** Stops taking work, tells entries this replica is leaving (so they react at once), unsubscribes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.stats.ignored + this.stats.failed > 0) this.log(`entries' messages ignored: ${this.stats.ignored}, failed in the engine: ${this.stats.failed}`);
    for (const t of this.timers) clearInterval(t);
    this.heartbeat(true);
    for (const entry of [...this.sessions.keys()]) this.forget(entry, 'this replica is shutting down');
    for (const s of this.subs) s.unsubscribe();
    if (!this.nc.isClosed()) await this.nc.flush().catch(() => {});
  }
}
