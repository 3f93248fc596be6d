// Live feed messages, no browser API: the /live protocol (snapshot, events, stats, dropped) validated at the edge, and its URL.
import { liveEnvelopeSchema, type LaneLiveStats } from '../../../shared/api/live.ts';
import { traceEventSchema, type TraceEvent } from '../../../shared/trace.ts';

export interface LiveStats {
  now: number;
  models: LaneLiveStats[];
}

export type FeedStatus = 'connecting' | 'open' | 'closed' | 'error';

export interface FeedHandlers {
  onSnapshot(events: TraceEvent[], now: number): void;
  onEvents(events: TraceEvent[]): void;
  onStats(stats: LiveStats): void;
  onDropped(count: number): void;
  onStatus(status: FeedStatus, detail?: string): void;
  /** Events or messages that failed validation (skipped). */
  onInvalid?(count: number, firstError: string): void;
}

export interface FeedConnection {
  close(): void;
}

/** ws(s)://<host>/live, with ?token= when an admin token is set. */
export function liveUrl(loc: { protocol: string; host: string }, token: string | null): string {
  const base = `${loc.protocol === 'https:' ? 'wss' : 'ws'}://${loc.host}/live`;
  return token ? `${base}?token=${encodeURIComponent(token)}` : base;
}

function validEvents(raw: unknown[], onInvalid?: FeedHandlers['onInvalid']): TraceEvent[] {
  const out: TraceEvent[] = [];
  let bad = 0;
  let first = '';
  for (const r of raw) {
    const res = traceEventSchema.safeParse(r);
    if (res.success) out.push(res.data);
    else {
      bad++;
      first ||= res.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    }
  }
  if (bad && onInvalid) onInvalid(bad, first);
  return out;
}

/** Parses and validates one server message (JSON text) and calls the matching handler. Shared by the WebSocket and the demo feed. */
export function createMessageHandler(handlers: FeedHandlers): (text: string) => void {
  return (text) => {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      handlers.onInvalid?.(1, 'message is not JSON');
      return;
    }
    const msg = liveEnvelopeSchema.safeParse(data);
    if (!msg.success) {
      handlers.onInvalid?.(1, `bad message: ${msg.error.issues[0]?.message ?? ''}`);
      return;
    }
    const m = msg.data;
    switch (m.type) {
      case 'snapshot':
        handlers.onSnapshot(validEvents(m.events, handlers.onInvalid), m.now);
        break;
      case 'events':
        handlers.onEvents(validEvents(m.events, handlers.onInvalid));
        break;
      case 'stats':
        handlers.onStats({ now: m.now, models: m.models });
        break;
      case 'dropped':
        handlers.onDropped(m.count);
        break;
      case 'error':
        handlers.onStatus('error', m.message);
        break;
    }
  };
}
