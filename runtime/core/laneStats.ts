// One engine's figures for /admin/status, /metrics and the benches.
import type { LaneStats } from '../../shared/protocol/engineProtocol.ts';

export type { LaneStats } from '../../shared/protocol/engineProtocol.ts';

/** What the figures are read from (an Engine; structural, so this module needs nothing of it). */
interface LaneSource {
  readonly name: string;
  readonly threshold: number;
  readonly readyCount: number;
  readonly inFlightRows: number;
  readonly executing: boolean;
  readonly queues: { readonly waitingAdmission: number; readonly pendingReturnCount: number; readonly prefix: { readonly size: number } | null };
  readonly pool: { readonly usedBytes: number; readonly reservedBytes: number; readonly prefixTokenCount: number; readonly kvBytesPerToken: number };
  readonly stats: {
    readonly batches: number;
    readonly rows: number;
    readonly chunks: number;
    readonly admissions: number;
    readonly evictions: number;
    readonly busyMs: number;
    readonly batchMs: number;
    readonly modelMs: number;
    readonly prefixQueries: number;
    readonly prefixHits: number;
  };
}

export function laneStats(l: LaneSource): LaneStats {
  return {
    name: l.name,
    threshold: l.threshold,
    ready: l.readyCount,
    running: l.readyCount + l.inFlightRows,
    waitingAdmission: l.queues.waitingAdmission,
    pendingReturn: l.queues.pendingReturnCount,
    executing: l.executing,
    kvBytes: l.pool.usedBytes,
    kvReservedBytes: l.pool.reservedBytes,
    batches: l.stats.batches,
    rows: l.stats.rows,
    chunks: l.stats.chunks,
    admissions: l.stats.admissions,
    evictions: l.stats.evictions,
    busyMs: l.stats.busyMs,
    batchMs: l.stats.batchMs,
    modelMs: l.stats.modelMs,
    prefixQueries: l.stats.prefixQueries,
    prefixHits: l.stats.prefixHits,
    prefixEntries: l.queues.prefix?.size ?? 0,
    kvPrefixBytes: l.pool.prefixTokenCount * l.pool.kvBytesPerToken,
  };
}
