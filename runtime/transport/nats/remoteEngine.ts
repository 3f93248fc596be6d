// A remote model as the entry drives it: one engine proxy over the model's replicas, each an engine server reached by its own NATS link.
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { EngineProxy } from '../engineHandle.ts';
import type { EngineSettings, FromEngine, LaneStats, ToEngine, WireArrival } from '../../../shared/protocol/engineProtocol.ts';
import { type ErrorCode, TokenRouterError } from '../../errors.ts';
import type { ModelInfo } from '../../runner/modelRunner.ts';
import { parseRemoteModel, type RemoteModelConfig, type RemoteModelInput } from '../../config/remoteModelConfig.ts';
import { modelSubjects, openNats, RemoteRunnerError } from './natsConnection.ts';
import { type Replica, type ReplicaEvents, RemoteReplicas } from './remoteReplicas.ts';

/** The model's `remote` block of the config (its schema fills the defaults and refuses what is wrong), and what the entry adds. */
export type RemoteEngineOptions = RemoteModelInput & {
  model: string;
  /** The entry's other remote models: handoffs between them go replica to replica. Absent, they pass through the entry. */
  mesh?: RemoteMesh;
  log?: (line: string) => void;
};

type Options = RemoteModelConfig & { model: string; mesh?: RemoteMesh; log: (line: string) => void };

/**
 * The remote model's replicas behind one EngineProxy. A request is placed on a replica the first
 * time it comes to this model (by load; never on one draining) and that replica stays its home,
 * where its later handoffs go, until it ends. Controls go to every replica; the lane the entry
 * reads is their sum. A replica lost fails only the requests homed there.
 */
export class RemoteEngine extends EngineProxy implements ReplicaEvents {
  private settings: EngineSettings | null = null;
  /** Homed on a lost replica while away at another model: their next arrival re-prefills on a live replica. */
  private readonly orphans = new Set<string>();
  /**
   * `replicasLost`: declared dead (silent, malformed); `replicasDrained`: left on purpose, with a goodbye.
   * `failedOnLoss`: requests failed because their replica died; `spared`: away then, so recompute kept them;
   * `recomputed`: of those, re-prefilled on a live replica.
   */
  readonly stats = { placed: 0, replicasLost: 0, replicasDrained: 0, reconnects: 0, failedOnLoss: 0, spared: 0, recomputed: 0 };

  private constructor(
    private readonly nc: NatsConnection,
    private readonly replicas: RemoteReplicas,
    info: ModelInfo,
    private readonly opts: Options,
  ) {
    super(opts.model, info, false);
  }

  /** Connects to NATS, waits for a first replica to announce itself (none is an error saying how to start one), then for the others. */
  static async connect({ model, mesh, log, ...block }: RemoteEngineOptions): Promise<RemoteEngine> {
    const opts: Options = { ...parseRemoteModel(block, model), model, mesh, log: log ?? ((l) => console.error(`[tokenrouter] remote ${model}: ${l}`)) };
    const nc = await openNats({ ...opts, servers: opts.nats, name: `tokenrouter-entry:${model}` });
    const subjects = modelSubjects(opts.subjectPrefix, model);
    // the models of one mesh share a session: a replica finds the deployment a peer's frame belongs to by it
    const replicas = new RemoteReplicas(nc, subjects, mesh?.session ?? crypto.randomBytes(6).toString('hex'), opts);
    const deadline = performance.now() + opts.connectTimeoutMs;
    while (!replicas.info && performance.now() < deadline) await sleep(20);
    if (!replicas.info) {
      replicas.stop();
      await nc.close();
      throw new RemoteRunnerError(
        'no_replicas',
        `no sub-server for model "${model}" announced itself on ${opts.nats} (subject ${subjects.heartbeat}) within ${opts.connectTimeoutMs} ms; start one with: tokenrouter subserver --model ${model} --nats ${opts.nats}`,
      );
    }
    const engine = new RemoteEngine(nc, replicas, replicas.info, opts);
    replicas.attach(engine);
    mesh?.add(engine);
    // the others announce themselves within one heartbeat period
    await sleep(Math.min(1000, 1.5 * Math.max(...replicas.all.map((r) => r.announced.heartbeatMs))));
    return engine;
  }

  /** KV tokens over the live replicas. */
  get liveCapacityTokens(): number {
    return this.replicas.all.reduce((n, r) => n + r.announced.kvCapacityTokens, 0);
  }

  /** No replica to place a request on, or NATS unreachable past the bound: new requests are refused at once rather than left waiting. */
  override get down(): boolean {
    return super.down || this.replicas.unreachable || this.replicas.all.every((r) => r.announced.draining);
  }

  private error(code: ErrorCode, why: string, retry = false): TokenRouterError {
    return new TokenRouterError(code, `model ${this.name} ${why}`, 'model', retry ? { retry_after_s: 1 } : undefined);
  }

  private cannotGoOn(why: string): TokenRouterError {
    return this.error('unavailable', `cannot go on with this request: ${why}`);
  }

  /**
   * Why a new request cannot start here now. Cut off from NATS even briefly, it could only wait,
   * holding an admission slot that local models need (the ones already here wait up to the bound, then fail).
   */
  override admissionError(): TokenRouterError | null {
    const cut = this.replicas.cutOffMs();
    if (cut === 0) return null;
    const how = this.replicas.unreachable ? 'is down' : 'cannot take requests';
    return this.error('model_unavailable', `${how}: its NATS server has been unreachable for ${Math.round(cut)} ms; retry shortly`, true);
  }

  private failHere(id: string, error: Error): void {
    this.orphans.delete(id);
    this.entry?.finish({ type: 'finish', requestId: id, status: 'failed', reason: 'error', error });
  }

  /**
   * NATS unreachable past the bound: the requests held on the replicas fail now and free their
   * admission slots; the replicas free them too once the link is back (the releases wait in it).
   */
  unreachable(ms: number): void {
    const ids = this.replicas.all.flatMap((r) => [...r.homes]);
    this.opts.log(`NATS unreachable for ${Math.round(ms)} ms: model ${this.name} is down; failing the ${ids.length} requests held there`);
    const error = this.error('model_unavailable', `cannot go on with this request: its NATS server has been unreachable for ${Math.round(ms)} ms`, true);
    for (const id of ids) this.failHere(id, error);
    this.entry?.reported(0);
  }

  reconnected(): void {
    this.stats.reconnects++;
  }

  draining(): void {
    this.opts.mesh?.changed();
  }

  replicaViews() {
    return this.replicas.views();
  }

  /** A replica that joins a running deployment begins with it, and the peers' replicas hear of it. */
  joined(r: Replica): void {
    if (this.settings) this.beginOn(r, this.settings);
    this.opts.mesh?.changed();
    this.opts.log(`replica ${r.announced.replica} joined (${this.replicas.all.length} live)`);
  }

  /** A replica's message; its step's `moved` events say where a peer's replica took the requests it handed away. */
  message(r: Replica, m: unknown): void {
    const malformed = this.receive(m, r);
    if (malformed) return this.replicas.lose(r, malformed.message, false);
    const { mesh } = this.opts;
    if (!mesh || !this.entry || (m as FromEngine).type !== 'step') return;
    for (const e of (m as Extract<FromEngine, { type: 'step' }>).events)
      if (e.type === 'moved' && e.replica !== undefined) mesh.placed(e.to, e.requestId, e.replica);
  }

  lost(r: Replica, reason: string, drained: boolean): void {
    // a drain is a planned leave (a rolling restart), not the failure an alert on losses is for
    this.stats[drained ? 'replicasDrained' : 'replicasLost']++;
    this.sumLanes();
    const name = r.announced.replica;
    // Recompute spares the requests away at another model: the entry's copy of their sequence re-prefills them elsewhere.
    // Those decoding there fail: their routing state died with the replica.
    const away = (id: string) => (this.entry?.whereabouts?.(id)?.model ?? this.name) !== this.name;
    const spared = this.opts.onReplicaLoss === 'recompute' ? [...r.homes].filter(away) : [];
    const failed = [...r.homes].filter((id) => !spared.includes(id));
    this.opts.log(
      `replica ${name} left (${reason}); ${failed.length} requests decoding there fail${spared.length ? `, ${spared.length} away from it re-prefill elsewhere when they come back` : ''}`,
    );
    for (const id of spared) this.orphans.add(id);
    this.stats.spared += spared.length;
    this.stats.failedOnLoss += failed.length;
    const error = this.cannotGoOn(`replica ${name} of model ${this.name} is gone (${reason})`);
    for (const id of failed) this.failHere(id, error);
    this.entry?.reported(0);
    // the peers' replicas place the spared requests anew, with their whole sequence
    this.opts.mesh?.changed();
  }

  /** Tells the replicas where the other models of the mesh begun with the same entry have theirs: at every `begin` and change. */
  sendPeers(): void {
    const { mesh } = this.opts;
    if (!this.settings || !mesh || this.closing) return;
    const others = [...mesh.members.values()].filter((o) => o !== this && o.entry === this.entry);
    this.replicas.toAll({ type: 'remote-peers', session: mesh.session, peers: others.map((o) => ({ model: o.name, replicas: o.replicas.peerReplicas() })) });
  }

  /**
   * A peer's replica sent a request straight to replica `subject` of this model: it is homed there
   * now. If that replica is gone already, the request went down with it. A placement heard after the
   * request ended (the entry no longer knows where it is) makes no home.
   */
  placedByPeer(id: string, subject: string): void {
    if (this.closing || !this.entry?.whereabouts?.(id)) return;
    const r = this.replicas.bySubject.get(subject);
    if (!r) {
      this.stats.failedOnLoss++;
      const error = this.cannotGoOn(`it was handed to a replica of model ${this.name} that is gone`);
      return this.entry.cascade(() => this.failHere(id, error));
    }
    const was = this.replicas.homeOf(id);
    if (was !== r) {
      was?.homes.delete(id);
      this.home(r, id);
    }
    if (this.orphans.delete(id)) this.stats.recomputed++;
  }

  private home(r: Replica, id: string): void {
    r.homes.add(id);
    r.placed++;
    this.stats.placed++;
  }

  private beginOn(r: Replica, settings: EngineSettings): void {
    r.link.postMessage({ type: 'begin', settings: { ...settings, kvCapacityTokens: r.announced.kvCapacityTokens }, peers: {} } satisfies ToEngine);
    for (const ref of this.deployed.values()) r.link.postMessage({ type: 'deploy', ref } satisfies ToEngine);
    if (super.down) r.link.postMessage({ type: 'down', down: true } satisfies ToEngine);
  }

  protected override post(m: ToEngine): void {
    // Closed: the replicas have forgotten this entry; what its shutdown still ends (the cancellations of its cut clients) is moot there.
    if (this.closing) return;
    switch (m.type) {
      case 'begin':
        this.settings = m.settings;
        this.orphans.clear();
        for (const r of this.replicas.all) {
          r.homes.clear();
          r.lane = null;
          this.beginOn(r, m.settings);
        }
        // the peers begun with the same entry before this one now list it
        return this.opts.mesh?.changed();
      case 'arrive': {
        // one message per replica: it admits them together, as a thread engine does, instead of launching on the first few
        const byReplica = new Map<Replica, WireArrival[]>();
        for (const a of m.arrivals) {
          const placed = this.arriveOn(a);
          if (placed) byReplica.get(placed[0])?.push(placed[1]) ?? byReplica.set(placed[0], [placed[1]]);
        }
        for (const [r, arrivals] of byReplica) r.link.postMessage({ type: 'arrive', arrivals } satisfies ToEngine);
        return;
      }
      case 'release': {
        this.orphans.delete(m.id);
        const r = this.replicas.homeOf(m.id);
        r?.homes.delete(m.id);
        if (r) return r.link.postMessage(m);
        // with a mesh a peer may have sent it here before the entry heard where: every replica lets it go (or drops it on arrival)
        if (this.opts.mesh) this.replicas.toAll(m);
        return;
      }
      case 'trace':
        // a replica that joins later begins with tracing as it stands now
        if (this.settings) this.settings = { ...this.settings, trace: m.on };
        return this.replicas.toAll(m);
      default:
        return this.replicas.toAll(m);
    }
  }

  /** Where an arrival goes (its home, or a replica placed now), or nothing when it failed here. */
  private arriveOn(a: WireArrival): [Replica, WireArrival] | undefined {
    const id = a.spec.id;
    const fail = (error: Error) => void queueMicrotask(() => this.failHere(id, error));
    if (this.replicas.unreachable) return fail(this.admissionError()!);
    // an orphan lands on a replica holding nothing of it: the entry has the prompt and every commit before the handoff's anchor
    const { anchor, tokens } = a.handoff;
    if (this.orphans.delete(id) && !a.context && anchor > 0) {
      const committed = this.entry?.sequence?.(id) ?? [];
      if (committed.length < anchor)
        return fail(this.cannotGoOn(`its replica was lost and this entry has ${committed.length} of the ${anchor} tokens it held`));
      this.stats.recomputed++;
      a = { ...a, context: [...committed.slice(0, anchor), ...tokens] };
    }
    let r = this.replicas.homeOf(id);
    if (!r) {
      r = this.replicas.place(this.settings);
      if (!r) return fail(this.error('unavailable', 'has no live replica to take this request; retry shortly'));
      this.home(r, id);
    }
    return [r, a];
  }

  protected override mirror(lane: LaneStats, from: unknown): void {
    (from as Replica).lane = lane;
    this.sumLanes();
  }

  private sumLanes(): void {
    this.lane = this.replicas.sumLanes(this.name, this.threshold);
  }

  override async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.opts.mesh?.remove(this);
    // the replicas forget this entry and free what it held; they outlive it
    this.replicas.toAll({ type: 'close' });
    for (const r of this.replicas.all) r.link.flush();
    await this.nc.flush().catch(() => {});
    for (const r of this.replicas.all) r.link.close();
    this.replicas.stop();
    await this.nc.close().catch(() => {});
  }

  /** This entry's NATS traffic for the model so far (frames and bytes each way; heartbeats included): what a token costs on the wire. */
  wireStats(): { framesOut: number; framesIn: number; bytesOut: number; bytesIn: number } {
    const s = this.nc.stats();
    return { framesOut: s.outMsgs, framesIn: s.inMsgs, bytesOut: s.outBytes, bytesIn: s.inBytes };
  }

  get resent(): number {
    return this.replicas.resent;
  }
}

/**
 * The remote models of one entry: one session at all their replicas, and each told of the others'
 * replicas, so that handoffs between them go engine to engine. Without a mesh, a remote engine
 * knows no peer: its handoffs go through the entry, which passes them on.
 */
export class RemoteMesh {
  readonly session = crypto.randomBytes(6).toString('hex');
  readonly members = new Map<string, RemoteEngine>();

  add(m: RemoteEngine): void {
    this.members.set(m.name, m);
    this.changed();
  }

  remove(m: RemoteEngine): void {
    if (this.members.get(m.name) === m) this.members.delete(m.name);
    this.changed();
  }

  /** A member's replicas changed (joined, lost, draining): every member tells its replicas. */
  changed(): void {
    for (const m of this.members.values()) m.sendPeers();
  }

  /** A `moved` event a member heard names the replica of another member the request went to. */
  placed(model: string, id: string, subject: string): void {
    this.members.get(model)?.placedByPeer(id, subject);
  }
}
