// Entry-side membership of a remote model's replicas: admission, heartbeats, liveness checks and the KV capacity they add up to.
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ModelInfo } from '../runner/modelRunner.ts';
import type { ModelSubjects } from './modelSubjects.ts';
import { WIRE_PROTOCOL, type ReplicaAnnouncement } from './replicaAnnouncement.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';
import { decodeControl, encodeControl, WireKind } from './stepCodec.ts';

/** A live replica as this entry sees it: what it announced, and the load this entry put there. */
export interface Replica {
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

export interface ReplicaSetOptions {
  model: string;
  servers: string;
  connectTimeoutMs?: number;
  keepaliveMs?: number;
  lookahead?: number;
}

/** What membership changes mean to the runner that owns the set: the caches, steps and streams are its own. */
export interface ReplicaSetHooks {
  /** The runner failed or closed: heartbeats no longer count, nobody is lost any more. */
  dead(): boolean;
  /** A replica unknown until now joined (a new one, or one declared lost that is alive after all). */
  joined(subject: string): void;
  /** A heartbeat came from `subject`. */
  beat(subject: string): void;
  /** A replica was taken out of the set; `reason` says why. */
  lost(replica: Replica, reason: string): void;
  publish(subject: string, data: Uint8Array | string): void;
  log(line: string): void;
}

const DECODER = new TextDecoder();

export class ReplicaSet {
  /** The model every replica must serve: the first one admitted says what it is. */
  info: ModelInfo | null = null;
  /** KV tokens the entry may place on this model: the sum over its live replicas, once connected. */
  kvCapacityTokens = 0;
  private readonly replicas = new Map<string, Replica>();
  private readonly capacityListeners: ((kvTokens: number) => void)[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private disconnected = false;
  private lastTick = performance.now();

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: ModelSubjects,
    private readonly entry: string,
    private readonly opts: ReplicaSetOptions,
    private readonly hbTimeout: number,
    private readonly hooks: ReplicaSetHooks,
  ) {}

  get size(): number {
    return this.replicas.size;
  }

  get(subject: string): Replica | undefined {
    return this.replicas.get(subject);
  }

  values(): IterableIterator<Replica> {
    return this.replicas.values();
  }

  /** Lookahead passes a step may ask for: the `lookahead` option, within what every live replica's runner takes. */
  get maxAhead(): number {
    let m = this.opts.lookahead ?? 0;
    for (const r of this.replicas.values()) m = Math.min(m, r.maxAhead);
    return this.replicas.size ? m : 0;
  }

  views(): ReplicaView[] {
    const now = performance.now();
    return [...this.replicas.values()].map((r) => ({ name: r.name, subject: r.subject, caches: r.cacheIds.size, placed: r.placed, draining: r.draining, kvCapacityTokens: r.kvCapacityTokens, msSinceHeard: now - r.lastHeard }));
  }

  /** Waits for a replica to admit the entry by deadline, learns the others from their heartbeats, then watches them all. */
  async admit(deadline: number): Promise<void> {
    const s = this.subjects;
    const onBeat = (err: Error | null, msg: { data: Uint8Array }) => {
      if (!err) this.onHeartbeat(msg.data);
    };
    this.nc.subscribe(s.heartbeat, { callback: onBeat });
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
    this.info = hello.info;
    this.heard(hello);
    // Other replicas announce themselves within one heartbeat period: count their memory too.
    await sleep(Math.min(1000, hello.heartbeatMs * 1.5));
    this.kvCapacityTokens = this.liveCapacity();
    const period = Math.max(10, Math.min(250, this.hbTimeout / 4));
    this.timers.push(setInterval(() => this.checkLiveness(period), period));
    const keepalive = this.opts.keepaliveMs ?? 1000;
    this.timers.push(setInterval(() => this.hooks.publish(s.entries, JSON.stringify({ entry: this.entry })), keepalive));
    for (const t of this.timers) t.unref();
  }

  private onHeartbeat(data: Uint8Array): void {
    let a: ReplicaAnnouncement;
    try {
      a = JSON.parse(DECODER.decode(data)) as ReplicaAnnouncement;
    } catch {
      return;
    }
    if (this.hooks.dead()) return;
    if (a.bye) {
      this.lose(a.subject, 'it shut down');
      return;
    }
    this.heard(a);
    this.hooks.beat(a.subject);
  }

  private heard(a: ReplicaAnnouncement): void {
    let r = this.replicas.get(a.subject);
    if (!r) {
      if (this.info && !sameInfo(this.info, a.info)) {
        this.hooks.log(`replica ${a.replica} of ${this.opts.model} serves a different model (${JSON.stringify(a.info)} vs ${JSON.stringify(this.info)}); it is ignored, but NATS may still send it new requests: stop it`);
        return;
      }
      r = { name: a.replica, subject: a.subject, lastHeard: performance.now(), kvCapacityTokens: a.kvCapacityTokens, cacheIds: new Set(), ourTokens: 0, othersTokens: 0, draining: false, placed: 0, maxAhead: a.maxAhead ?? 0 };
      this.replicas.set(a.subject, r);
      this.hooks.joined(a.subject);
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

  /** A step's answer came from `subject`: as good as a heartbeat. */
  answered(subject: string): void {
    const r = this.replicas.get(subject);
    if (r) r.lastHeard = performance.now();
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

  linkDown(): void {
    this.disconnected = true;
  }

  /** Back on NATS at `at`: heartbeats missed while we were away are not held against the replicas. */
  linkUp(at: number): void {
    this.disconnected = false;
    for (const r of this.replicas.values()) r.lastHeard = at;
  }

  /** Takes a replica out of the set; what it held is the owner's to settle (hooks.lost). */
  lose(subject: string, reason: string): void {
    const r = this.replicas.get(subject);
    if (!r || this.hooks.dead()) return;
    this.replicas.delete(subject);
    this.capacityMoved();
    this.hooks.lost(r, reason);
  }

  private liveCapacity(): number {
    let sum = 0;
    for (const r of this.replicas.values()) sum += r.kvCapacityTokens;
    return sum;
  }

  /** After connect, replicas joining or leaving change what the entry may place here. */
  private capacityMoved(): void {
    if (!this.info || this.timers.length === 0) return; // still connecting: admit() sums them once
    const now = this.liveCapacity();
    if (now === this.kvCapacityTokens || now === 0) return; // none left: the runner fails instead
    this.kvCapacityTokens = now;
    for (const l of this.capacityListeners) l(now);
  }

  onCapacityChange(listener: (kvTokens: number) => void): void {
    this.capacityListeners.push(listener);
  }

  /** Stops the liveness checks and the entry's keepalive; capacity no longer moves. */
  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
  }
}

function sameInfo(a: ModelInfo, b: ModelInfo): boolean {
  return a.vocabSize === b.vocabSize && a.eosTokenId === b.eosTokenId && a.maxContext === b.maxContext && a.kvBytesPerToken === b.kvBytesPerToken && a.hiddenSize === b.hiddenSize;
}
