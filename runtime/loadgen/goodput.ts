// Latency SLOs for goodput (vLLM's `--goodput ttft:MS tpot:MS e2el:MS`): parsing, and whether one request met every bound.
import { TokenRouterError } from '../errors.ts';

/** Upper bounds in ms; an absent bound is not checked. */
export interface Slo {
  ttftMs?: number;
  tpotMs?: number;
  e2elMs?: number;
}

const KEYS = { ttft: 'ttftMs', tpot: 'tpotMs', e2el: 'e2elMs' } as const;

/** `"ttft:500 tpot:50"` (pairs separated by spaces or commas) → an Slo; one-line errors naming the pair. */
export function parseGoodput(spec: string): Slo {
  const slo: Slo = {};
  const pairs = spec.split(/[\s,]+/).filter((p) => p !== '');
  if (pairs.length === 0) throw new TokenRouterError('invalid_request', '--goodput needs at least one of ttft:MS, tpot:MS, e2el:MS', 'goodput');
  for (const pair of pairs) {
    const [name, value, extra] = pair.split(':');
    if (value === undefined || extra !== undefined)
      throw new TokenRouterError('invalid_request', `--goodput takes metric:MS pairs (ttft, tpot, e2el), got "${pair}"`, 'goodput');
    if (!Object.hasOwn(KEYS, name)) throw new TokenRouterError('invalid_request', `--goodput: unknown metric "${name}"; known: ttft, tpot, e2el`, 'goodput');
    const key = KEYS[name as keyof typeof KEYS];
    const ms = Number(value);
    if (value.trim() === '' || !Number.isFinite(ms) || ms <= 0)
      throw new TokenRouterError('invalid_request', `--goodput: ${name} must be a number of ms > 0, got "${value}"`, 'goodput');
    if (slo[key] !== undefined) throw new TokenRouterError('invalid_request', `--goodput: ${name} is given twice`, 'goodput');
    slo[key] = ms;
  }
  return slo;
}

/**
 * Whether a request met every given bound. A one-token output has no TPOT and so meets any TPOT
 * bound, as in vLLM (which counts its TPOT as 0). `m` is typed structurally so requestMetrics.ts
 * can import this module without an import cycle.
 */
export function meetsSlo(m: { ttftMs: number; tpotMs: number | undefined; e2eMs: number }, slo: Slo): boolean {
  if (slo.ttftMs !== undefined && !(m.ttftMs <= slo.ttftMs)) return false;
  if (slo.tpotMs !== undefined && m.tpotMs !== undefined && !(m.tpotMs <= slo.tpotMs)) return false;
  if (slo.e2elMs !== undefined && !(m.e2eMs <= slo.e2elMs)) return false;
  return true;
}
