// The entry's one record of each live replica of a remote model: what it announced, the link to it, its lane, the requests homed there.
import { isDeepStrictEqual } from 'node:util';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { EMPTY_LANE } from '../../../shared/protocol/laneStats.ts';
import { keepsOneReplica } from '../../core/servingPolicy.ts';
import type { EngineSettings, LaneStats, ToEngine } from '../../../shared/protocol/engineProtocol.ts';
import type { ModelInfo } from '../../runner/modelRunner.ts';
import { NatsLink, onFrames, WIRE_PROTOCOL } from './natsLink.ts';
import { replicaAnnouncementSchema, type modelSubjects, type RemotePeer, type RemotePeers, type ReplicaAnnouncement, watchLink } from './natsConnection.ts';

export interface Replica {
  /** Its last heartbeat: name, subject, capacity, draining. */
  announced: ReplicaAnnouncement;
  /** The entry's link to it; its `lastHeard` counts heartbeats too. */
  link: NatsLink;
  lane: LaneStats | null;
  /** Requests placed here that have not ended: their KV is here, so their later handoffs come back here. */
  homes: Set<string>;
  placed: number;
}

/** The lane figures summed over replicas (every count and time; `executing` is an or). */
const SUMMED = Object.keys(EMPTY_LANE).filter((k) => k !== 'executing') as Exclude<keyof typeof EMPTY_LANE, 'executing' | 'thread'>[];

const asPeer = ({ announced: { subject, kvCapacityTokens, draining } }: Replica) => ({ subject, kvCapacityTokens, draining });

/** What the remote model's engine does when its replicas change. */
export interface ReplicaEvents {
  joined(r: Replica): void;
  message(r: Replica, m: unknown): void;
  /** Declared lost (silent past the timeout, a malformed message) or, `drained`, it said goodbye. */
  lost(r: Replica, reason: string, drained: boolean): void;
  /** Cut off from NATS longer than the bound: no replica can be reached. */
  unreachable(cutOffMs: number): void;
  reconnected(): void;
  draining(): void;
}

/**
 * The entry's placement rule, which the peers' replicas apply too: fewest requests per KV token of
 * capacity, never on a draining replica; sync modes keep to one replica (their barrier counts one
 * engine per model).
 */
export function pickReplica(replicas: RemotePeer['replicas'], held: (subject: string) => number, oneReplica: boolean): string | undefined {
  const open = replicas.filter((r) => !r.draining);
  if (oneReplica) return open.map((r) => r.subject).sort((a, b) => a.localeCompare(b))[0];
  const load = (r: (typeof open)[number]) => (held(r.subject) + 1) / Math.max(1, r.kvCapacityTokens);
  return open.reduce<(typeof open)[number] | undefined>((best, r) => (!best || load(r) < load(best) ? r : best), undefined)?.subject;
}

/**
 * Heartbeats in, liveness out. The entry's own outages (cut off from NATS, a stalled event loop) are
 * not held against the replicas; but cut off longer than `unreachableAfterMs`, the model as a whole
 * cannot be reached.
 */
export class RemoteReplicas {
  readonly bySubject = new Map<string, Replica>();
  /** The model every replica must serve: the first one heard says what it is. */
  info: ModelInfo | null = null;
  /** The engine, once it exists (it needs the first replica's `info`). */
  private events: ReplicaEvents | null = null;
  private readonly inbox: string;
  private readonly timer: NodeJS.Timeout;
  /** When this entry lost NATS, while it has not got it back. */
  private cutOffAt: number | null = null;
  /** Cut off longer than the bound (reported to the engine). */
  unreachable = false;
  /** Frames resent over the links of replicas gone. */
  private resentByLost = 0;

  constructor(
    private readonly nc: NatsConnection,
    subjects: ReturnType<typeof modelSubjects>,
    private readonly session: string,
    private readonly opts: { model: string; heartbeatTimeoutMs: number; unreachableAfterMs: number; log(line: string): void },
  ) {
    this.inbox = `${subjects.entries}.${session}`;
    nc.subscribe(subjects.heartbeat, { callback: (err, msg) => void (err || this.onHeartbeat(msg)) });
    onFrames(nc, this.inbox, (f) => f?.reply && this.bySubject.get(f.reply)?.link.receive(f));
    const period = Math.max(10, Math.min(250, opts.heartbeatTimeoutMs / 4));
    let lastTick = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      // our own event loop stalled: the heartbeats are sitting unread in the socket, not the replicas' fault
      if (now - lastTick - period > opts.heartbeatTimeoutMs / 2) this.hearAll(now);
      lastTick = now;
      this.check(now);
    }, period);
    this.timer.unref();
    watchLink(nc, {
      down: () => (this.cutOffAt ??= performance.now()),
      up: () => {
        this.cutOffAt = null;
        // heartbeats missed meanwhile are not held against the replicas; what was in flight goes again
        this.hearAll(performance.now());
        for (const r of this.bySubject.values()) r.link.resend();
        if (this.unreachable) opts.log(`NATS is back: model ${opts.model} takes requests again`);
        this.unreachable = false;
        this.events?.reconnected();
      },
    });
  }

  /** The engine takes the events from here on, the joins of the replicas known so far first. */
  attach(events: ReplicaEvents): void {
    this.events = events;
    for (const r of this.bySubject.values()) events.joined(r);
  }

  private onHeartbeat(msg: Msg): void {
    const { model, log } = this.opts;
    let a: ReplicaAnnouncement;
    try {
      a = replicaAnnouncementSchema.parse(msg.json());
    } catch {
      return log(`ignored a malformed heartbeat on model ${model}`);
    }
    const known = this.bySubject.get(a.subject);
    if (a.bye) return known && this.lose(known, a.draining ? 'it drained and shut down' : 'it shut down', true);
    if (known) {
      const was = known.announced.draining;
      known.announced = a;
      known.link.lastHeard = performance.now();
      if (was !== a.draining) this.events?.draining();
      return;
    }
    if (a.protocol !== WIRE_PROTOCOL) return log(`replica ${a.replica} of ${model} speaks wire protocol ${a.protocol}, this entry ${WIRE_PROTOCOL}: ignored`);
    // the folder's name may differ from host to host
    if (this.info && !isDeepStrictEqual({ ...this.info, name: '' }, { ...a.info, name: '' }))
      return log(`replica ${a.replica} of ${model} serves a different model (${JSON.stringify(a.info)} vs ${JSON.stringify(this.info)}): ignored`);
    this.info ??= a.info;
    const link = new NatsLink({ session: this.session, reply: this.inbox, publish: (b) => this.nc.publish(`${a.subject}.in`, b) });
    const r: Replica = { announced: a, link, lane: null, homes: new Set(), placed: 0 };
    link.on('message', (m) => this.events?.message(r, m));
    this.bySubject.set(a.subject, r);
    this.events?.joined(r);
  }

  private check(now: number): void {
    // cut off ourselves, no heartbeat reaches us, which says nothing about the replicas; but past the bound
    // nothing of the model can be reached, and the requests waiting for it must not wait on
    if (this.cutOffAt !== null) {
      if (!this.unreachable && now - this.cutOffAt > this.opts.unreachableAfterMs) {
        this.unreachable = true;
        this.events?.unreachable(now - this.cutOffAt);
      }
      return;
    }
    for (const r of [...this.bySubject.values()]) {
      const silent = now - r.link.lastHeard;
      if (silent > this.opts.heartbeatTimeoutMs) this.lose(r, `no heartbeat for ${Math.round(silent)} ms`, false);
    }
  }

  private hearAll(now: number): void {
    for (const r of this.bySubject.values()) r.link.lastHeard = now;
  }

  lose(r: Replica, reason: string, drained: boolean): void {
    if (this.bySubject.get(r.announced.subject) !== r) return;
    this.bySubject.delete(r.announced.subject);
    r.link.close();
    this.resentByLost += r.link.stats.resent;
    this.events?.lost(r, reason, drained);
  }

  /** How long this entry has been cut off from NATS (0 while connected). */
  cutOffMs(): number {
    return this.cutOffAt === null ? 0 : performance.now() - this.cutOffAt;
  }

  get all(): Replica[] {
    return [...this.bySubject.values()];
  }

  /** The replica a request is homed on (a few replicas: a look at each beats keeping a second index). */
  homeOf(id: string): Replica | undefined {
    return this.all.find((r) => r.homes.has(id));
  }

  place(settings: EngineSettings | null): Replica | undefined {
    const subject = pickReplica(this.peerReplicas(), (s) => this.bySubject.get(s)!.homes.size, !!settings && keepsOneReplica(settings.mode));
    return subject === undefined ? undefined : this.bySubject.get(subject);
  }

  peerReplicas(): RemotePeer['replicas'] {
    return this.all.map(asPeer);
  }

  /** Each replica with the requests homed there now and placed there in all. */
  views() {
    return this.all.map((r) => ({ ...asPeer(r), name: r.announced.replica, requests: r.homes.size, placed: r.placed }));
  }

  /** The lane the entry reads: the sum of the replicas' lanes. */
  sumLanes(name: string, threshold: number): LaneStats {
    const sum: LaneStats = { name, threshold, ...EMPTY_LANE };
    for (const { lane } of this.bySubject.values()) {
      if (!lane) continue;
      for (const k of SUMMED) sum[k] += lane[k];
      sum.executing ||= lane.executing;
    }
    return sum;
  }

  toAll(m: ToEngine | RemotePeers): void {
    for (const r of this.bySubject.values()) r.link.postMessage(m);
  }

  /** Frames resent so far (a NATS restart makes the links send what was in flight again). */
  get resent(): number {
    return this.all.reduce((n, r) => n + r.link.stats.resent, this.resentByLost);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
