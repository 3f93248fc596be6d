// The page's side of trace files: fetching one by URL (with the admin token on this server's own URLs) and saving one as a download.
import { adminToken } from './feed.ts';

/** The text at `url`; same-origin trace URLs (e.g. /admin/trace?format=jsonl) may need the admin token. Rejects on a non-2xx answer. */
export async function fetchTraceText(url: string): Promise<string> {
  const token = adminToken();
  const sameOrigin = new URL(url, location.href).origin === location.origin;
  const res = await fetch(url, token && sameOrigin ? { headers: { authorization: `Bearer ${token}` } } : undefined);
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  return res.text();
}

/** Saves `json` as a download named `name`. */
export function saveJsonFile(json: string, name: string): void {
  const blob = new Blob([json], { type: 'application/json' });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  // the browser reads the blob after click() returns
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}
