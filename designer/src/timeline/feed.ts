// Live feed client: the /live WebSocket (messages parsed by feedMessages.ts) and POST /admin/load.
import { loadResponseSchema } from '../../../shared/api/admin.ts';
import { adminToken } from '../adminToken.ts';
import { createMessageHandler, liveUrl, type FeedConnection, type FeedHandlers } from './feedMessages.ts';

export { adminToken };

/** Connects and reconnects (1 s, 2 s, then every 5 s) until closed. Each connection starts with a snapshot. */
export function connectFeed(handlers: FeedHandlers, url = (): string => liveUrl(location, adminToken())): FeedConnection {
  let ws: WebSocket | null = null;
  let closed = false;
  let attempt = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const onMessage = createMessageHandler(handlers);

  const open = (): void => {
    handlers.onStatus('connecting');
    ws = new WebSocket(url()); // read each time: a token given after a refusal is used on the next try
    ws.onopen = () => {
      attempt = 0;
      handlers.onStatus('open');
    };
    ws.onmessage = (ev: MessageEvent) => onMessage(typeof ev.data === 'string' ? ev.data : '');
    ws.onerror = () => handlers.onStatus('error', 'connection error');
    ws.onclose = (ev) => {
      ws = null;
      if (closed) return;
      handlers.onStatus('closed', ev.reason || `closed (${ev.code})`);
      const delay = [1000, 2000][attempt] ?? 5000;
      attempt++;
      timer = setTimeout(open, delay);
    };
  };
  open();
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      ws?.close();
    },
  };
}

export interface LoadResult {
  ok: boolean;
  status: number;
  message: string;
}

/** Asks the server to generate load (8 concurrent, 32 requests, up to 128 tokens each: a bundled word-problem answer is 41–84 tokens after its think block). */
export async function generateLoad(body = { concurrency: 8, requests: 32, maxTokens: 128 }): Promise<LoadResult> {
  const token = adminToken();
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  try {
    const res = await fetch('/admin/load', { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    const parsed = loadResponseSchema.safeParse(safeJson(text));
    if (res.status === 202 && parsed.success) return { ok: true, status: res.status, message: 'load started' };
    return { ok: false, status: res.status, message: text.slice(0, 200) || res.statusText };
  } catch (err) {
    return { ok: false, status: 0, message: String(err) };
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Whether the admin endpoints let this page in: a closed feed says no more than 1006, so ask over HTTP. */
export async function adminAccess(): Promise<'ok' | 'refused' | 'unreachable'> {
  const token = adminToken();
  try {
    const res = await fetch('/admin/status', { headers: token ? { authorization: `Bearer ${token}` } : {} });
    return res.status === 401 ? 'refused' : 'ok';
  } catch {
    return 'unreachable';
  }
}
