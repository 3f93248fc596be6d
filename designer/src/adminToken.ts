// The admin token in this browser, shared by the designer and the timeline: taken once from the URL (then removed from history), kept in localStorage, forgotten on request.

const KEY = 'tokenrouterAdminToken';

/** Where an operator finds the token; the pages say it when they ask for it. */
export const TOKEN_HINT = 'The server prints it at start ("admin token: …"); it is the file <dataDir>/admin-token, or the config’s "adminToken".';

type Storage = { getItem(k: string): string | null; setItem(k: string, v: string): void; removeItem(k: string): void };

// Read through globalThis: this module also runs in Node (unit tests), where there is no storage.
function storage(): Storage | null {
  try {
    return (globalThis as { localStorage?: Storage }).localStorage ?? null;
  } catch {
    return null; // storage blocked by privacy settings
  }
}

/** The kept token, or null (loopback dev mode needs none). */
export function storedAdminToken(): string | null {
  try {
    return storage()?.getItem(KEY) || null;
  } catch {
    return null;
  }
}

export function keepAdminToken(token: string): void {
  const t = token.trim();
  if (!t) return;
  try {
    storage()?.setItem(KEY, t);
  } catch {
    // storage full or blocked: the token works for this page only
  }
  memory = t;
}

export function forgetAdminToken(): void {
  memory = null;
  try {
    storage()?.removeItem(KEY);
  } catch {
    // nothing kept
  }
}

// A token given on a page whose storage is blocked still serves that page.
let memory: string | null = null;

/** The token to send: the kept one, else one given on this page. */
export function adminToken(): string | null {
  return storedAdminToken() ?? memory;
}

type UrlParts = { pathname: string; search: string; hash: string };
type HistoryLike = { state: unknown; replaceState(state: unknown, unused: string, url: string): void };

/**
 * A first visit's link may carry the token (`#token=…`, or `?token=…`): keep it, and replace the
 * address so the token is neither in history nor in a copied link. True when one was found.
 */
export function adoptTokenFromUrl(loc: UrlParts, hist: HistoryLike): boolean {
  const hash = new URLSearchParams(loc.hash.replace(/^#/, ''));
  const query = new URLSearchParams(loc.search);
  const token = hash.get('token') ?? query.get('token');
  if (!token) return false;
  keepAdminToken(token);
  hash.delete('token');
  query.delete('token');
  const q = query.toString();
  const h = hash.toString();
  hist.replaceState(hist.state, '', `${loc.pathname}${q ? `?${q}` : ''}${h ? `#${h}` : ''}`);
  return true;
}
