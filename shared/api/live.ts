// Live-feed WebSocket messages (server → timeline), one discriminated union.
import type { TraceEvent } from '../trace.ts';

export interface LaneLiveStats {
  name: string;
  running: number;
  waiting: number;
  pendingReturn: number;
  kvBytes: number;
  threshold: number;
}

export type LiveMessage =
  | { type: 'snapshot'; events: TraceEvent[]; now: number }
  | { type: 'events'; events: TraceEvent[] }
  | { type: 'stats'; now: number; models: LaneLiveStats[] }
  /** Events this client missed because it read too slowly (the runtime never waits for a client). */
  | { type: 'dropped'; count: number }
  | { type: 'error'; message: string };
