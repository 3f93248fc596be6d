// The requests of steps in flight to replicas, one part per replica: sent, answered, parked across a NATS reconnect, or abandoned.
import { RequestError, TimeoutError, type NatsConnection } from '@nats-io/transport-node';
import type { StepRow } from '../runner/modelRunner.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';
import { decodeResult, type DecodedResult, type ResultMeta } from './stepCodec.ts';

/** One in-flight request of a step, to one replica. */
export interface Part {
  target: string;
  /** Cache ids of all its rows, and of those that create a cache there (released if the part is abandoned but answered after all). */
  cacheIds: number[];
  newCacheIds: number[];
  state: 'pending' | 'answered' | 'abandoned';
  /** Waiting for its replica to be heard again before it is sent again (after a NATS reconnect). */
  parked: boolean;
  /** Sends it (again: replicas answer a repeated part from their cache of recent results, never running it twice). */
  send(): void;
  abandon(e: Error): void;
}

/** The counters of NatsRunner.stats that parts move. */
export interface PartStats {
  parts: number;
  bytesOut: number;
  bytesIn: number;
  answered: number;
  resent: number;
  networkMs: number;
  queuedMs: number;
  modelMs: number;
}

export interface InflightPartsOptions {
  model: string;
  stepTimeoutMs: number;
  heartbeatTimeoutMs: number;
}

export interface InflightPartsHooks {
  /** A part's failure names its replica as lost (no responders, a step timed out). */
  lose(subject: string, reason: string): void;
  /** An abandoned part answered after all: the caches it created live on a replica we no longer use for them. */
  lateReply(part: Part): void;
  /** The runner is closing: errors of parts cut short are that, not the replica's. */
  closing(): boolean;
}

export class InflightParts {
  private readonly parts = new Set<Part>();
  private reconnectedAt = -Infinity;

  constructor(
    private readonly nc: NatsConnection,
    private readonly stats: PartStats,
    private readonly opts: InflightPartsOptions,
    private readonly hooks: InflightPartsHooks,
  ) {}

  /** Parts waiting for an answer from `subject`. */
  to(subject: string): Part[] {
    return [...this.parts].filter((p) => p.target === subject);
  }

  abandonAll(e: Error): void {
    for (const p of [...this.parts]) p.abandon(e);
  }

  send(target: string, bytes: Uint8Array, rows: readonly StepRow[]): Promise<DecodedResult> {
    this.stats.parts++;
    this.stats.bytesOut += bytes.length;
    return new Promise<DecodedResult>((resolve, reject) => {
      const part: Part = {
        target,
        cacheIds: rows.map((r) => r.cacheId),
        newCacheIds: rows.filter((r) => r.position === 0).map((r) => r.cacheId),
        state: 'pending',
        parked: false,
        send: () => {
          part.parked = false;
          const sentAt = performance.now();
          this.nc.request(target, bytes, { timeout: this.opts.stepTimeoutMs }).then(
            (msg) => {
              this.stats.bytesIn += msg.data.length;
              if (part.state === 'abandoned') return this.hooks.lateReply(part);
              if (part.state === 'answered') return; // a repeated part answered twice
              part.state = 'answered';
              this.parts.delete(part);
              try {
                const result = decodeResult(msg.data);
                this.account(performance.now() - sentAt, result.meta);
                resolve(result);
              } catch (e) {
                reject(e as Error);
              }
            },
            (e: Error) => {
              if (part.state !== 'pending' || part.parked) return;
              const err = this.classify(e, target);
              // Right after our reconnect the replica may not have resubscribed yet: wait to hear it.
              if (err.code === 'replica_lost' && e instanceof RequestError && e.isNoResponders() && performance.now() - this.reconnectedAt < this.opts.heartbeatTimeoutMs) {
                part.parked = true;
                return;
              }
              // Attributable losses take the replica out now, which also abandons its other parts.
              if (err.code === 'replica_lost') this.hooks.lose(target, err.message);
              part.abandon(err);
            },
          );
        },
        abandon: (e) => {
          if (part.state !== 'pending') return;
          part.state = 'abandoned';
          this.parts.delete(part);
          reject(e);
        },
      };
      this.parts.add(part);
      part.send();
    });
  }

  /**
   * Back on NATS at `at` after a drop: each part may have lost its request or its reply, so it
   * waits to hear its replica again and goes again (resendParked).
   */
  reconnected(at: number): void {
    this.reconnectedAt = at;
    for (const p of this.parts) p.parked = true;
  }

  /** A replica was heard: send again the parts that wait for it. */
  resendParked(subject: string): void {
    for (const p of this.parts) {
      if (p.parked && p.target === subject) {
        this.stats.resent++;
        p.send();
      }
    }
  }

  private account(roundTripMs: number, meta: ResultMeta): void {
    const queued = meta.queuedMs ?? 0;
    const model = meta.modelMs ?? 0;
    this.stats.answered++;
    this.stats.queuedMs += queued;
    this.stats.modelMs += model;
    this.stats.networkMs += Math.max(0, roundTripMs - queued - model);
  }

  private classify(e: Error, target: string): RemoteRunnerError {
    if (e instanceof RemoteRunnerError) return e;
    if (e instanceof RequestError && e.isNoResponders()) return new RemoteRunnerError('replica_lost', `replica subject ${target} has no responders (process gone)`, { cause: e });
    if (e instanceof TimeoutError) return new RemoteRunnerError('replica_lost', `a step on model ${this.opts.model} took longer than ${this.opts.stepTimeoutMs} ms`, { cause: e });
    return new RemoteRunnerError(this.hooks.closing() ? 'closed' : 'remote_error', `model ${this.opts.model}: ${e.message}`, { cause: e });
  }
}
