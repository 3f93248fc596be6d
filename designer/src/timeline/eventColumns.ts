// Row layouts of the event store's rings (one typed array per field) and the ring types built on them.
import type { ColumnRing } from './columnRing.ts';

export const EVENT_COLUMNS = {
  batch: {
    lane: Uint16Array,
    batchId: Float64Array,
    phase: Uint8Array,
    size: Uint32Array,
    tokens: Float64Array,
    start: Float64Array,
    end: Float64Array,
    /** Forward passes (1 + lookahead steps) and row results taken from lookahead. */
    steps: Uint16Array,
    aheadRows: Uint32Array,
    /** Prompt tokens its rows took from the prefix cache instead of feeding them. */
    cached: Uint32Array,
    /** Rows whose draw a grammar masked (structured outputs, tool calls). */
    masked: Uint32Array,
    /** Running max of `end` over the ring: non-decreasing, so binary search works on slightly unordered input. */
    maxEnd: Float64Array,
    /** Absolute position of the first request index in the member ring. */
    members: Float64Array,
  },
  handoff: {
    t: Float64Array,
    maxT: Float64Array,
    from: Uint16Array,
    to: Uint16Array,
    req: Int32Array,
    batchId: Float64Array,
    tokens: Float64Array,
    kept: Uint8Array,
    /** Absolute batch ids of the sending and receiving batch, -1 until known. */
    fromAbs: Float64Array,
    toAbs: Float64Array,
  },
  queue: { t: Float64Array, maxT: Float64Array, lane: Uint16Array, length: Int32Array },
  state: { t: Float64Array, maxT: Float64Array, lane: Int16Array, req: Int32Array, state: Uint8Array },
};

export type BatchRing = ColumnRing<typeof EVENT_COLUMNS.batch>;
export type HandoffRing = ColumnRing<typeof EVENT_COLUMNS.handoff>;
export type QueueRing = ColumnRing<typeof EVENT_COLUMNS.queue>;
export type StateRing = ColumnRing<typeof EVENT_COLUMNS.state>;
