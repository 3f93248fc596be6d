// One engine's figures for /admin/status, /metrics and the benches.

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
