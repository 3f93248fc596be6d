// A remote model as the entry drives it: one engine proxy over the model's replicas, each an engine server reached by its own NATS link.
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { EngineProxy, type MirroredLane } from '../engineProxy.ts';
import type { EngineSettings, FromEngine, ToEngine, WireArrival } from '../../core/messages.ts';
import { TokenRouterError } from '../../errors.ts';
import type { ModelInfo } from '../../runner/modelRunner.ts';
import type { RemotePeer, ReplicaAnnouncement } from '../../../shared/protocol/engineProtocol.ts';
import { modelSubjects } from './modelSubjects.ts';
import { watchLink } from './natsConnection.ts';
import { type EngineOptions, openRemoteModel, type RemoteEngineOptions } from './openRemoteModel.ts';
import { decodeFrame, NatsLink } from './natsLink.ts';
import type { RemoteReplicas } from './remoteReplicas.ts';
import { type Replica, ReplicaRecords, type ReplicaView } from './replicaRecords.ts';
import type { MeshMember } from './remoteMesh.ts';
import { Orphans } from './orphans.ts';

/**
 * The remote model's replicas behind one EngineProxy. A request is placed on a replica the first
 * time it comes to this model (by load: requests held per KV token of capacity; never on one
 * draining) and that replica stays its home, where its later handoffs go, until it ends. Controls
 * go to every replica; the lane the entry reads is their sum. A replica lost fails only the
 * requests homed there. Sync modes place every request on one replica: their barrier counts one
 * engine per model.
 */
export class RemoteEngine extends EngineProxy implements MeshMember {
  private readonly session: string;
  private readonly inbox: string;
  /** The live replicas by subject; each lists the requests homed there, the one record of where a request's KV is. */
  private readonly records: ReplicaRecords;
  private settings: EngineSettings | null = null;
  private wentDown = false;
  /** Away when their home died: their next visit re-prefills on a live replica. */
  private readonly orphans: Orphans;
  /**
   * `replicasLost`: declared dead (silent, malformed); `replicasDrained`: left on purpose, with a goodbye.
   * `failedOnLoss`: requests failed because their replica died; `spared`: away then, so recompute kept them;
   * `recomputed`: of those, re-prefilled on a live replica. `outages`: times NATS stayed unreachable past the
   * bound; `failedUnreachable`: requests failed by it (held there, or arriving while it lasted).
   */
  readonly stats = {
    placed: 0,
    replicasLost: 0,
    replicasDrained: 0,
    reconnects: 0,
    resent: 0,
    failedOnLoss: 0,
    spared: 0,
    recomputed: 0,
    outages: 0,
    failedUnreachable: 0,
  };

  private constructor(
    private readonly nc: NatsConnection,
    private readonly replicas: RemoteReplicas,
    info: ModelInfo,
    private readonly opts: EngineOptions,
  ) {
    // every message is routed to replicas by send() below
    super(opts.model, info, { postMessage: () => {} }, false);
    this.session = opts.mesh?.session ?? crypto.randomBytes(6).toString('hex');
    this.inbox = `${modelSubjects(opts.subjectPrefix, opts.model).entries}.${this.session}`;
    this.records = new ReplicaRecords(replicas);
    this.orphans = new Orphans(this.name, () => this.entry, this.stats);
    nc.subscribe(this.inbox, {
      callback: (err, msg) => {
        const f = err ? null : decodeFrame(msg.data);
        const r = f?.reply ? this.records.get(f.reply) : undefined;
        if (!f || !r) return;
        this.replicas.heard(r.subject);
        r.link.receive(f);
      },
    });
    watchLink(nc, {
      down: () => replicas.linkDown(),
      up: () => {
        replicas.linkUp();
        this.stats.reconnects++;
        for (const r of this.records.values()) r.link.resend();
      },
    });
  }

  /** Connects to NATS, waits for a first replica to announce itself, then for the others (one heartbeat period). */
  static async connect(options: RemoteEngineOptions): Promise<RemoteEngine> {
    let engine: RemoteEngine | null = null;
    const { nc, replicas, info, opts } = await openRemoteModel(options, {
      joined: (a) => engine?.join(a),
      lost: (subject, reason, drained) => engine?.lose(subject, reason, drained),
      unreachable: (ms) => engine?.cutOff(ms),
    });
    engine = new RemoteEngine(nc, replicas, info, opts);
    for (const a of replicas.live.values()) engine.join(a);
    opts.mesh?.add(engine);
    // the others announce themselves within one heartbeat period
    const period = Math.max(...[...replicas.live.values()].map((a) => a.heartbeatMs));
    await sleep(Math.min(1000, period * 1.5));
    return engine;
  }

  /** KV tokens over the live replicas. */
  get liveCapacityTokens(): number {
    let sum = 0;
    for (const a of this.replicas.live.values()) sum += a.kvCapacityTokens;
    return sum;
  }

  /** No replica to place a request on, or NATS unreachable past the bound: new requests are refused at once rather than left waiting. */
  override get down(): boolean {
    return super.down || this.replicas.unreachable || this.records.placeable().length === 0;
  }

  /**
   * Why a new request cannot start here now, if it cannot. Cut off from NATS even briefly, a new
   * request could only wait, holding an admission slot that local models need: it is refused
   * (the ones already here wait up to the bound, then fail).
   */
  admissionError(): TokenRouterError | null {
    const cut = this.replicas.cutOffMs();
    if (cut === 0) return null;
    const how = this.replicas.unreachable ? 'is down' : 'cannot take requests';
    return new TokenRouterError(
      'model_unavailable',
      `model ${this.name} ${how}: its NATS server has been unreachable for ${Math.round(cut)} ms; retry shortly`,
      'model',
      { retry_after_s: 1 },
    );
  }

  /**
   * NATS unreachable past the bound: the requests held on the replicas fail now, with a clear error,
   * and free their admission slots; the replicas free them too once the link is back (the releases
   * wait in it). Requests that hand off here while it lasts fail on arrival (arriveOn).
   */
  private cutOff(ms: number): void {
    this.stats.outages++;
    const error = new TokenRouterError(
      'model_unavailable',
      `model ${this.name} cannot go on with this request: its NATS server has been unreachable for ${Math.round(ms)} ms`,
      'model',
      { retry_after_s: 1 },
    );
    const ids = [...this.records.values()].flatMap((r) => [...r.homes]);
    this.opts.log?.(`NATS unreachable for ${Math.round(ms)} ms: model ${this.name} is down; failing the ${ids.length} requests held there`);
    for (const id of ids) {
      this.stats.failedUnreachable++;
      this.entry?.finish({ type: 'finish', requestId: id, status: 'failed', reason: 'error', error });
    }
    this.entry?.reported(0);
  }

  replicaViews(): ReplicaView[] {
    return this.records.views();
  }

  private join(a: ReplicaAnnouncement): void {
    if (this.records.has(a.subject)) return;
    const link = new NatsLink({ session: this.session, reply: this.inbox, publish: (b) => this.nc.publish(`${a.subject}.in`, b) });
    const r: Replica = { subject: a.subject, name: a.replica, link, lane: null, homes: new Set(), placed: 0 };
    link.on('message', (m) => {
      const malformed = this.receive(m, r);
      if (malformed) this.replicas.lose(r.subject, malformed.message, false);
      else this.track(m as FromEngine);
    });
    this.records.set(r);
    // a replica that joins a running deployment begins with it, and the peers' replicas hear of it
    if (this.settings) this.beginOn(r, this.settings);
    this.opts.mesh?.changed();
    this.opts.log?.(`replica ${a.replica} joined (${this.records.size} live)`);
  }

  private lose(subject: string, reason: string, drained: boolean): void {
    const r = this.records.get(subject);
    if (!r) return;
    this.records.delete(subject);
    r.link.close();
    // a drain is a planned leave (a rolling restart), not the failure an alert on losses is for
    if (drained) this.stats.replicasDrained++;
    else this.stats.replicasLost++;
    this.stats.resent += r.link.stats.resent;
    this.sumLanes();
    const error = new TokenRouterError(
      'unavailable',
      `model ${this.name} cannot go on with this request: replica ${r.name} of model ${this.name} is gone (${reason})`,
      'model',
    );
    // Recompute spares the requests away at another model: the entry's copy of what the replica held re-prefills them elsewhere.
    // Those decoding there fail: their routing state died with the replica.
    const spared = this.opts.onReplicaLoss === 'recompute' ? this.orphans.awayOf(r.homes) : [];
    this.opts.log?.(
      `replica ${r.name} left (${reason}); ${r.homes.size - spared.length} requests decoding there fail${spared.length ? `, ${spared.length} away from it re-prefill elsewhere when they come back` : ''}`,
    );
    for (const id of r.homes) {
      if (spared.includes(id)) {
        this.orphans.spare(id);
        continue;
      }
      this.stats.failedOnLoss++;
      this.orphans.forget(id);
      this.entry?.finish({ type: 'finish', requestId: id, status: 'failed', reason: 'error', error });
    }
    this.entry?.reported(0);
    // the peers' replicas place the spared requests anew, with their whole sequence
    this.opts.mesh?.changed();
  }

  get deployment(): object | null {
    return this.entry;
  }

  peerReplicas(): RemotePeer['replicas'] {
    return this.records.peerReplicas();
  }

  /** At every member's `begin` and at every change of a member's replicas. */
  sendPeers(): void {
    const mesh = this.opts.mesh;
    if (!this.settings || !mesh || this.closing) return;
    this.records.toAll({ type: 'remote-peers', session: mesh.session, peers: mesh.peersOf(this) });
  }

  /**
   * A peer's replica sent a request straight to replica `subject` of this model: it is homed there
   * now. If that replica is gone already, the request went down with it. A placement heard after the
   * request ended (the entry no longer knows where it is) makes no home.
   */
  placedByPeer(id: string, subject: string): void {
    if (this.closing || !this.entry?.whereabouts?.(id)) return;
    const r = this.records.get(subject);
    if (!r) {
      const error = new TokenRouterError(
        'unavailable',
        `model ${this.name} cannot go on with this request: it was handed to a replica of model ${this.name} that is gone`,
        'model',
      );
      this.stats.failedOnLoss++;
      this.orphans.forget(id);
      return this.entry?.cascade(() => this.entry?.finish({ type: 'finish', requestId: id, status: 'failed', reason: 'error', error }));
    }
    const was = this.records.homeOf(id);
    if (was !== r) {
      was?.homes.delete(id);
      r.homes.add(id);
      r.placed++;
      this.stats.placed++;
    }
    this.orphans.placed(id);
  }

  private beginOn(r: Replica, settings: EngineSettings): void {
    const capacity = this.replicas.live.get(r.subject)?.kvCapacityTokens ?? settings.kvCapacityTokens;
    r.link.postMessage({ type: 'begin', settings: { ...settings, kvCapacityTokens: capacity }, peers: {} } satisfies ToEngine);
    for (const ref of this.deployed.values()) r.link.postMessage({ type: 'deploy', ref } satisfies ToEngine);
    if (this.wentDown) r.link.postMessage({ type: 'down', down: true } satisfies ToEngine);
  }

  protected override post(m: ToEngine): void {
    // Closed: the replicas have forgotten this entry; what its shutdown still ends (the cancellations of its cut clients) is moot there.
    if (this.closing) return;
    switch (m.type) {
      case 'begin':
        this.settings = m.settings;
        this.orphans.clear();
        for (const r of this.records.values()) {
          r.homes.clear();
          r.lane = null;
          this.beginOn(r, m.settings);
        }
        // the peers begun with the same entry before this one now list it
        return this.opts.mesh?.changed();
      case 'deploy':
        return this.records.toAll(m);
      case 'arrive': {
        // each to its replica (the request's home there, or one placed now), one message per replica:
        // the replica admits them together, as a thread engine does, instead of launching on the first few
        const byReplica = new Map<Replica, WireArrival[]>();
        for (const a of m.arrivals) {
          const placed = this.arriveOn(a);
          if (!placed) continue;
          const list = byReplica.get(placed.r);
          if (list) list.push(placed.arrival);
          else byReplica.set(placed.r, [placed.arrival]);
        }
        for (const [r, arrivals] of byReplica) r.link.postMessage({ type: 'arrive', arrivals } satisfies ToEngine);
        return;
      }
      case 'release': {
        this.orphans.forget(m.id);
        const r = this.records.homeOf(m.id);
        // With a mesh a peer may have sent it here before the entry heard where: every replica lets it go (or drops it on arrival).
        if (!r) return this.opts.mesh ? this.records.toAll(m) : undefined;
        r.homes.delete(m.id);
        return r.link.postMessage(m);
      }
      case 'down':
        this.wentDown = m.down;
        return this.records.toAll(m);
      case 'trace':
        // a replica that joins later begins with tracing as it stands now
        if (this.settings) this.settings = { ...this.settings, trace: m.on };
        return this.records.toAll(m);
      case 'threshold':
      case 'grant':
      case 'peer-lost':
      case 'close':
        return this.records.toAll(m);
      default:
      // 'peer', 'crash': threads only
    }
  }

  /** Where an arrival goes (its home, or a replica placed now), or nothing when it failed here. */
  private arriveOn(arrival: WireArrival): { r: Replica; arrival: WireArrival } | undefined {
    const id = arrival.spec.id;
    if (this.replicas.unreachable) {
      this.stats.failedUnreachable++;
      const error = this.admissionError()!;
      return void queueMicrotask(() => this.entry?.finish({ type: 'finish', requestId: id, status: 'failed', reason: 'error', error }));
    }
    if (this.opts.onReplicaLoss === 'recompute') {
      const rebuilt = this.orphans.rehome(arrival);
      if (rebuilt instanceof Error)
        return void queueMicrotask(() => this.entry?.finish({ type: 'finish', requestId: id, status: 'failed', reason: 'error', error: rebuilt }));
      arrival = rebuilt;
    }
    let r = this.records.homeOf(id);
    if (!r) {
      r = this.records.place(this.settings);
      if (!r) {
        const error = new TokenRouterError('unavailable', `model ${this.name} has no live replica to take this request; retry shortly`, 'model');
        return void queueMicrotask(() => this.entry?.finish({ type: 'finish', requestId: id, status: 'failed', reason: 'error', error }));
      }
      r.homes.add(id);
      r.placed++;
      this.stats.placed++;
    }
    return { r, arrival };
  }

  /** A replica's report (validated, applied at the entry already): where a peer's replica took the requests it handed away. */
  private track(m: FromEngine): void {
    if (m.type !== 'step' || !this.opts.mesh) return;
    for (const e of m.events) if (e.type === 'moved' && e.replica !== undefined) this.opts.mesh.placed(e.to, e.requestId, e.replica);
  }

  protected override mirror(lane: MirroredLane, from: unknown): void {
    (from as Replica).lane = lane;
    this.sumLanes();
  }

  private sumLanes(): void {
    this.lane = this.records.sumLanes(this.name, this.threshold);
  }

  override async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.opts.mesh?.remove(this);
    // the replicas forget this entry and free what it held; they outlive it
    this.records.toAll({ type: 'close' });
    for (const r of this.records.values()) r.link.flush();
    await this.nc.flush().catch(() => {});
    for (const r of this.records.values()) r.link.close();
    this.replicas.stop();
    await this.nc.close().catch(() => {});
  }

  /** This entry's NATS traffic for the model so far (frames and bytes each way; heartbeats included): what a token costs on the wire. */
  wireStats(): { framesOut: number; framesIn: number; bytesOut: number; bytesIn: number } {
    const s = this.nc.stats();
    return { framesOut: s.outMsgs, framesIn: s.inMsgs, bytesOut: s.outBytes, bytesIn: s.inBytes };
  }

  /** Resends over all live links so far (a NATS restart makes the links send what was in flight again). */
  get resent(): number {
    return this.stats.resent + this.records.resent();
  }
}
