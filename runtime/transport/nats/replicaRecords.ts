// The entry's records of a remote model's replicas: the link to each, the requests homed there, placement by load, their lanes summed.
import { EMPTY_LANE, type MirroredLane } from '../engineProxy.ts';
import { keepsOneReplica } from '../../core/servingPolicy.ts';
import type { EngineSettings, ToEngine } from '../../core/messages.ts';
import type { RemotePeer } from '../../../shared/protocol/engineProtocol.ts';
import type { NatsLink } from './natsLink.ts';
import type { RemoteReplicas } from './remoteReplicas.ts';

/** One replica's engine as this entry links to it. */
export interface Replica {
  subject: string;
  name: string;
  link: NatsLink;
  lane: MirroredLane | null;
  /** Requests placed here that have not ended: their KV is here, so their later handoffs come back here. */
  homes: Set<string>;
  placed: number;
}

export interface ReplicaView {
  name: string;
  subject: string;
  /** Requests this entry has there now, and has placed there in all. */
  requests: number;
  placed: number;
  draining: boolean;
  kvCapacityTokens: number;
  msSinceHeard: number;
}

const LANE_SUMS = [
  'ready',
  'running',
  'waitingAdmission',
  'pendingReturn',
  'kvBytes',
  'kvReservedBytes',
  'batches',
  'rows',
  'admissions',
  'evictions',
  'busyMs',
  'batchMs',
  'modelMs',
] as const;

/**
 * The live replicas by subject; each lists the requests homed there, the one record of where a
 * request's KV is. What each replica announced (capacity, draining) is read from the membership.
 */
export class ReplicaRecords {
  private readonly bySubject = new Map<string, Replica>();

  constructor(private readonly replicas: RemoteReplicas) {}

  get size(): number {
    return this.bySubject.size;
  }

  has(subject: string): boolean {
    return this.bySubject.has(subject);
  }

  get(subject: string): Replica | undefined {
    return this.bySubject.get(subject);
  }

  set(r: Replica): void {
    this.bySubject.set(r.subject, r);
  }

  delete(subject: string): void {
    this.bySubject.delete(subject);
  }

  values(): IterableIterator<Replica> {
    return this.bySubject.values();
  }

  /** The replica a request is homed on (a few replicas: a look at each beats keeping a second index). */
  homeOf(id: string): Replica | undefined {
    for (const r of this.bySubject.values()) if (r.homes.has(id)) return r;
    return undefined;
  }

  placeable(): Replica[] {
    return [...this.bySubject.values()].filter((r) => this.replicas.live.get(r.subject)?.draining === false);
  }

  /** Fewest requests per KV token of capacity; sync modes keep to one replica. */
  place(settings: EngineSettings | null): Replica | undefined {
    const open = this.placeable();
    if (settings && keepsOneReplica(settings.mode)) return open.sort((a, b) => a.subject.localeCompare(b.subject))[0];
    const load = (r: Replica) => (r.homes.size + 1) / Math.max(1, this.replicas.live.get(r.subject)!.kvCapacityTokens);
    let best: Replica | undefined;
    for (const r of open) if (!best || load(r) < load(best)) best = r;
    return best;
  }

  views(): ReplicaView[] {
    const now = performance.now();
    return [...this.bySubject.values()].map((r) => {
      const a = this.replicas.live.get(r.subject);
      return {
        name: r.name,
        subject: r.subject,
        requests: r.homes.size,
        placed: r.placed,
        draining: a?.draining ?? false,
        kvCapacityTokens: a?.kvCapacityTokens ?? 0,
        msSinceHeard: now - (a?.lastHeard ?? now),
      };
    });
  }

  peerReplicas(): RemotePeer['replicas'] {
    return [...this.bySubject.values()].map((r) => {
      const a = this.replicas.live.get(r.subject);
      return { subject: r.subject, kvCapacityTokens: a?.kvCapacityTokens ?? 0, draining: a?.draining ?? true };
    });
  }

  /** The lane the entry reads: the sum of the replicas' lanes. */
  sumLanes(name: string, threshold: number): MirroredLane {
    const sum: MirroredLane = { name, threshold, ...EMPTY_LANE };
    for (const r of this.bySubject.values()) {
      if (!r.lane) continue;
      for (const k of LANE_SUMS) sum[k] += r.lane[k];
      sum.executing ||= r.lane.executing;
    }
    return sum;
  }

  toAll(m: ToEngine): void {
    for (const r of this.bySubject.values()) r.link.postMessage(m);
  }

  /** Resends over the live links so far. */
  resent(): number {
    let n = 0;
    for (const r of this.bySubject.values()) n += r.link.stats.resent;
    return n;
  }
}
