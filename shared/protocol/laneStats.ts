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

/** A lane with nothing in it and nothing done (an engine not begun, or gone): every figure 0, in the schema's order. */
export const EMPTY_LANE = Object.fromEntries(
  Object.keys(laneStatsSchema.shape)
    .filter((k) => k !== 'name' && k !== 'threshold' && k !== 'thread')
    .map((k) => [k, k === 'executing' ? false : 0]),
) as Omit<LaneStats, 'name' | 'threshold' | 'thread'>;
