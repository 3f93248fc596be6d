// One engine's figures for /admin/status, /metrics and the benches.
import type { Engine } from './engine.ts';

export interface LaneStats {
  name: string;
  threshold: number;
  ready: number;
  running: number;
  waitingAdmission: number;
  pendingReturn: number;
  executing: boolean;
  kvBytes: number;
  kvReservedBytes: number;
  batches: number;
  rows: number;
  admissions: number;
  evictions: number;
  busyMs: number;
  /** Row results taken from lookahead (included in rows). */
  aheadRows: number;
}

export function laneStats(l: Engine): LaneStats {
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
    admissions: l.stats.admissions,
    evictions: l.stats.evictions,
    busyMs: l.stats.busyMs,
    aheadRows: l.stats.aheadRows,
  };
}
