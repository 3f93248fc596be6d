// `tokenrouter subserver`'s core: one model's engine server on NATS - heartbeats with its load, one ordered link per entry and per peer replica, drain.
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { ModelRunner } from '../../runner/modelRunner.ts';
import type { Decoder } from '../../runner/detokenizer.ts';
import { serveEngine } from '../serveEngine.ts';
import type { PortLike } from '../../../shared/protocol/engineProtocol.ts';
import { DEFAULT_SUBJECT_PREFIX, modelSubjects, remotePeersSchema, watchLink, type LinkFrame, type ReplicaAnnouncement } from './natsConnection.ts';
import { NatsLink, onFrames, WIRE_PROTOCOL } from './natsLink.ts';
import { NatsPeers, newPeerStats, peerSubject } from './natsPeers.ts';

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
}

interface Session {
  link: NatsLink;
  /** Only the messages between the entry's `begin` and its `close` reach the engine; its peers' handoffs too. */
  state: 'new' | 'open' | 'closed';
  serving: ReturnType<typeof serveEngine>;
  /** This deployment's remote peers, from its `begin` on. */
  peers: NatsPeers | null;
}

/** Messages of an engine thread's protocol that an entry across NATS sends (ports cannot travel). */
const ENTRY_MESSAGES = new Set(['begin', 'remote-peers', 'deploy', 'arrive', 'release', 'threshold', 'grant', 'down', 'peer-lost', 'close']);

/**
 * Serves one model's engine to entries over NATS. An entry links to `${subject}.in` (frames carry
 * its session and inbox); the engine server answers on the entry's inbox. One entry at a time: a
 * new entry's `begin` takes the engine over, as a bench's next server does with a thread engine,
 * and what the one before held is freed.
 */
export class RemoteEngineServer {
  readonly subject: string;
  private readonly session = crypto.randomBytes(6).toString('hex');
  private readonly heartbeatSubject: string;
  private readonly sessions = new Map<string, Session>();
  private readonly subs: Subscription[];
  private readonly timers: NodeJS.Timeout[];
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
    this.subject = s.replica(opts.replica, crypto.randomBytes(5).toString('hex'));
    this.heartbeatSubject = s.heartbeat;
    this.heartbeatMs = opts.heartbeatMs ?? 250;
    this.log = opts.log ?? ((l) => console.error(`[subserver ${opts.model}/${opts.replica}] ${l}`));
    this.subs = [onFrames(nc, `${this.subject}.in`, (f) => this.onFrame(f)), onFrames(nc, peerSubject(this.subject), (f) => this.onPeerFrame(f))];
    const entryTimeout = opts.entryTimeoutMs ?? 15_000;
    this.timers = [setInterval(() => this.heartbeat(), this.heartbeatMs), setInterval(() => this.expireEntries(entryTimeout), Math.max(100, entryTimeout / 3))];
    watchLink(nc, { down: () => (this.disconnected = true), up: () => this.reconnected() });
  }

  /** Subscribes and announces itself; resolves once the NATS server has the subscription. */
  static async start(nc: NatsConnection, runner: ModelRunner, opts: RemoteEngineServerOptions): Promise<RemoteEngineServer> {
    const s = new RemoteEngineServer(nc, runner, opts);
    await nc.flush();
    s.heartbeat();
    return s;
  }

  /** Requests held for all entries. */
  get held(): number {
    return [...this.sessions.values()].reduce((n, s) => n + (s.serving.server?.host.held ?? 0), 0);
  }

  private heartbeat(bye = false): void {
    if (this.nc.isClosed()) return;
    const kvBytes = [...this.sessions.values()].reduce((n, s) => n + (s.serving.server?.host.engine.laneStats().kvBytes ?? 0), 0);
    const a: ReplicaAnnouncement = {
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
    try {
      this.nc.publish(this.heartbeatSubject, JSON.stringify(a));
    } catch {
      // reconnecting (the client buffers) or closing
    }
  }

  private onFrame(f: LinkFrame | null): void {
    if (this.closed) return;
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
  private onPeerFrame(f: LinkFrame | null): void {
    if (this.closed) return;
    if (!f) return this.log('dropped a malformed peer frame');
    const s = f.entry === undefined ? undefined : this.sessions.get(f.entry);
    // a frame of a link this side never heard of (acks, keepalives) is no handoff: only numbered ones count
    if ((s?.state !== 'open' || !s.peers?.receiveFrame(f)) && f.seq !== undefined)
      this.ignore(f.entry ?? '?', `peer frame ${f.seq} from ${f.reply ?? '?'}`, 'not from a peer of an entry this replica serves');
  }

  /**
   * An entry's session. Its messages can come late (the cancellations of a shutting-down entry
   * follow its `close`) or be of a kind this build does not know; the engine would take either for
   * a broken protocol, and one entry must never bring down a replica that outlives it: they are
   * dropped and counted here.
   */
  private open(entry: string, reply: string): Session {
    const link = new NatsLink({ session: this.session, reply: this.subject, publish: (b) => this.nc.publish(reply, b) });
    let toEngine: (m: unknown) => void = () => {};
    const port: PortLike = { postMessage: (m) => link.postMessage(m), on: (_e, l) => (toEngine = l), close: () => link.close() };
    const s: Session = {
      link,
      state: 'new',
      peers: null,
      serving: serveEngine(port, this.runner, {
        decoder: this.opts.decoder,
        // the entry is done with this engine: free what it held (a takeover by a later entry would too)
        onClose: async () => this.forget(entry, 'it closed'),
        onError: (e) => this.engineFailed(entry, e),
        // one entry at a time: a new deployment takes the model over from the ones before
        onBegin: (server) => {
          for (const other of [...this.sessions.keys()]) if (other !== entry) this.forget(other, 'another entry took the model over');
          s.peers?.close();
          const log = (l: string) => this.log(`entry ${entry}: ${l}`);
          s.peers = new NatsPeers({ nc: this.nc, server, entry, model: this.opts.model, subject: this.subject, stats: this.peerStats, log });
        },
      }),
    };
    link.on('message', (m) => {
      const type = (m as { type?: unknown })?.type;
      const name = typeof type === 'string' ? type : '?';
      if (!ENTRY_MESSAGES.has(name)) return this.ignore(entry, `"${name}"`, 'not a message an entry sends');
      if (s.state === 'closed') return this.ignore(entry, `"${name}"`, 'after the entry closed');
      if (s.state === 'new' && name !== 'begin') return this.ignore(entry, `"${name}"`, 'before the entry began');
      s.state = name === 'close' ? 'closed' : 'open';
      if (name !== 'remote-peers') return toEngine(m);
      // the engine protocol does not know it: checked here, applied in order with the entry's other messages
      const parsed = remotePeersSchema.safeParse(m);
      if (!parsed.success) return this.engineFailed(entry, new Error(`malformed engine message: ${parsed.error.issues[0]?.message}`));
      s.serving.inOrder(() => s.peers?.setPeers(parsed.data.peers));
    });
    this.sessions.set(entry, s);
    return s;
  }

  /** One line a second at most: a shutting-down entry's cancellations come in bursts. */
  private ignore(entry: string, what: string, why: string): void {
    this.stats.ignored++;
    this.ignoredSinceLog++;
    const now = performance.now();
    if (now - this.lastIgnoredLog < 1000) return;
    const many = this.ignoredSinceLog === 1 ? '' : `${this.ignoredSinceLog} messages, last `;
    this.log(`ignored ${many}${what} of entry ${entry} (${why}); ${this.stats.ignored} ignored in all`);
    this.lastIgnoredLog = now;
    this.ignoredSinceLog = 0;
  }

  /**
   * The engine threw on an entry's message (malformed, or a bug). The replica outlives it: that
   * entry's requests here fail, and the entry hears so, the others' are untouched, and the engine serves on.
   */
  private engineFailed(entry: string, e: Error): void {
    this.stats.failed++;
    this.log(
      `entry ${entry}: the engine could not handle a message: ${e.message}; failing that entry's requests here (${this.stats.failed} such messages in all)`,
    );
    const host = this.sessions.get(entry)?.serving.server?.host;
    host?.input(() => host.engine.failAll(e));
  }

  private forget(entry: string, why: string): void {
    const s = this.sessions.get(entry);
    if (!s) return;
    this.sessions.delete(entry);
    const server = s.serving.server;
    if (server && server.host.held > 0) this.log(`freeing ${server.host.held} requests of entry ${entry}: ${why}`);
    server?.host.engine.failAll(new Error(why));
    server?.host.dispose();
    s.peers?.close();
    s.state = 'closed';
    s.link.close();
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
   * Graceful leave: announces itself draining, so entries place no new request here, and serves
   * the requests it holds until none has been held for a quiet period or `timeoutMs` passed; then
   * it closes. Resolves with the requests still held at the end.
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
    const emptySince = (since: number) => (this.held > 0 ? Infinity : Math.min(since, performance.now()));
    let since = emptySince(Infinity);
    while (performance.now() < deadline && !this.closed && performance.now() - since < quietMs) {
      await sleep(Math.min(50, Math.max(1, deadline - performance.now())));
      since = emptySince(since);
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
