// One engine's figures (its lane): what it reports with every step for /admin/status, /metrics and the benches.
import { z } from 'zod';

const int = z.number().int();

/** One engine's figures for /admin/status, /metrics and the benches; times in ms, summed over batches. */
export const laneStatsSchema = z.object({
  name: z.string(),
  threshold: int,
  ready: int,
  running: int,
  waitingAdmission: int,
  pendingReturn: int,
  executing: z.boolean(),
  kvBytes: z.number(),
  kvReservedBytes: z.number(),
  batches: int,
  rows: int,
  /** Rows that fed one chunk of a longer prompt (chunked prefill). */
  chunks: int,
  admissions: int,
  evictions: int,
  /** Launch → the runner's results; → the rows applied; inside the model as the runner timed it. */
  busyMs: z.number(),
  batchMs: z.number(),
  modelMs: z.number(),
  /** Prefix cache in tokens as vLLM counts them: looked up at admission, found; what it holds now. */
  prefixQueries: int,
  prefixHits: int,
  prefixEntries: int,
  kvPrefixBytes: z.number(),
  /** An engine in its own thread: that thread's CPU, GC pauses and run-queue wait since it started. */
  thread: z.object({ cpuMs: z.number(), gcMs: z.number(), waitMs: z.number() }).optional(),
});

export type LaneStats = z.infer<typeof laneStatsSchema>;
export type ThreadStats = NonNullable<LaneStats['thread']>;

/** A lane with nothing in it and nothing done (an engine not begun, or gone). */
export const EMPTY_LANE: Omit<LaneStats, 'name' | 'threshold'> = {
  ready: 0,
  running: 0,
  waitingAdmission: 0,
  pendingReturn: 0,
  executing: false,
  kvBytes: 0,
  kvReservedBytes: 0,
  batches: 0,
  rows: 0,
  chunks: 0,
  admissions: 0,
  evictions: 0,
  busyMs: 0,
  batchMs: 0,
  modelMs: 0,
  prefixQueries: 0,
  prefixHits: 0,
  prefixEntries: 0,
  kvPrefixBytes: 0,
};
