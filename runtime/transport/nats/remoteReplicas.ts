// Entry-side membership of a remote model's replicas: who is alive (heartbeats), what each announced, when one is lost.
import type { NatsConnection } from '@nats-io/transport-node';
import type { ModelInfo } from '../../runner/modelRunner.ts';
import { replicaAnnouncementSchema, type ReplicaAnnouncement } from '../../../shared/protocol/engineProtocol.ts';
import { WIRE_PROTOCOL } from './remoteEngineServer.ts';

export interface ReplicaHooks {
  /** A replica unknown until now announced itself (a new process, or one declared lost that is alive after all). */
  joined(a: ReplicaAnnouncement): void;
  /** A replica is gone: declared lost (silent past the timeout, a malformed message) or, `drained`, it said goodbye; `reason` says why. */
  lost(subject: string, reason: string, drained: boolean): void;
  /** This entry has been cut off from NATS for longer than the bound: no replica can be reached. */
  unreachable?(cutOffMs: number): void;
  /** Back on NATS after being unreachable. */
  reachable?(): void;
  /** A live replica started (or stopped) draining. */
  draining?(a: ReplicaAnnouncement): void;
  log(line: string): void;
}

const DECODER = new TextDecoder();

/**
 * Heartbeats in, liveness out. The entry's own outages (cut off from NATS, a stalled event loop) are
 * not held against the replicas; but cut off longer than `unreachableAfterMs`, the model as a whole
 * cannot be reached, which the `unreachable` hook reports.
 */
export class RemoteReplicas {
  /** What each live replica last announced, by subject. */
  readonly live = new Map<string, ReplicaAnnouncement & { lastHeard: number }>();
  /** The model every replica must serve: the first one heard says what it is. */
  info: ModelInfo | null = null;
  private timer: NodeJS.Timeout | null = null;
  private disconnected = false;
  /** When this entry lost NATS, while it has not got it back. */
  private cutOffAt: number | null = null;
  private reportedUnreachable = false;
  private lastTick = performance.now();

  constructor(
    nc: NatsConnection,
    heartbeatSubject: string,
    private readonly model: string,
    private readonly timeoutMs: number,
    private readonly hooks: ReplicaHooks,
    private readonly unreachableAfterMs = Infinity,
  ) {
    nc.subscribe(heartbeatSubject, { callback: (err, msg) => void (err || this.onHeartbeat(msg.data)) });
    const period = Math.max(10, Math.min(250, timeoutMs / 4));
    this.timer = setInterval(() => this.check(period), period);
    this.timer.unref();
  }

  private onHeartbeat(data: Uint8Array): void {
    let a: ReplicaAnnouncement;
    try {
      a = replicaAnnouncementSchema.parse(JSON.parse(DECODER.decode(data)));
    } catch {
      return this.hooks.log(`ignored a malformed heartbeat on model ${this.model}`);
    }
    if (a.bye) return this.lose(a.subject, a.draining ? 'it drained and shut down' : 'it shut down', true);
    const known = this.live.get(a.subject);
    if (!known) {
      if (a.protocol !== WIRE_PROTOCOL)
        return this.hooks.log(`replica ${a.replica} of ${this.model} speaks wire protocol ${a.protocol}, this entry ${WIRE_PROTOCOL}: ignored`);
      if (this.info && !sameInfo(this.info, a.info))
        return this.hooks.log(
          `replica ${a.replica} of ${this.model} serves a different model (${JSON.stringify(a.info)} vs ${JSON.stringify(this.info)}): ignored`,
        );
      this.info ??= a.info;
    }
    this.live.set(a.subject, { ...a, lastHeard: performance.now() });
    if (!known) this.hooks.joined(a);
    else if (known.draining !== a.draining) this.hooks.draining?.(a);
  }

  /** Any frame from a replica is as good as a heartbeat. */
  heard(subject: string): void {
    const r = this.live.get(subject);
    if (r) r.lastHeard = performance.now();
  }

  private check(period: number): void {
    const now = performance.now();
    const late = now - this.lastTick - period;
    this.lastTick = now;
    // Cut off from NATS ourselves: no heartbeat can reach us, which says nothing about the replicas;
    // but past the bound nothing of the model can be reached, and the requests waiting for it must not wait on.
    if (this.disconnected) {
      const cut = now - (this.cutOffAt ?? now);
      if (!this.reportedUnreachable && cut > this.unreachableAfterMs) {
        this.reportedUnreachable = true;
        this.hooks.unreachable?.(cut);
      }
      return;
    }
    if (late > this.timeoutMs / 2) {
      // Our own event loop stalled: the heartbeats are sitting unread in the socket. Not their fault.
      for (const r of this.live.values()) r.lastHeard = now;
      return;
    }
    for (const r of [...this.live.values()])
      if (now - r.lastHeard > this.timeoutMs) this.lose(r.subject, `no heartbeat for ${Math.round(now - r.lastHeard)} ms`);
  }

  linkDown(): void {
    if (!this.disconnected) this.cutOffAt = performance.now();
    this.disconnected = true;
  }

  /** Back on NATS: heartbeats missed while we were away are not held against the replicas. */
  linkUp(): void {
    this.disconnected = false;
    this.cutOffAt = null;
    const now = performance.now();
    for (const r of this.live.values()) r.lastHeard = now;
    if (this.reportedUnreachable) {
      this.reportedUnreachable = false;
      this.hooks.reachable?.();
    }
  }

  /** How long this entry has been cut off from NATS (0 while connected). */
  cutOffMs(now = performance.now()): number {
    return this.cutOffAt === null ? 0 : now - this.cutOffAt;
  }

  /** Cut off from NATS longer than the bound (reported through `unreachable`). */
  get unreachable(): boolean {
    return this.reportedUnreachable;
  }

  lose(subject: string, reason: string, drained = false): void {
    if (!this.live.delete(subject)) return;
    this.hooks.lost(subject, reason, drained);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

function sameInfo(a: ModelInfo, b: ModelInfo): boolean {
  return (
    a.vocabSize === b.vocabSize &&
    a.eosTokenIds.join() === b.eosTokenIds.join() &&
    a.maxContext === b.maxContext &&
    a.kvBytesPerToken === b.kvBytesPerToken &&
    a.hiddenSize === b.hiddenSize
  );
}
