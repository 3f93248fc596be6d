// Shared rig for the reliability and stress suites: a real server over crashable simulated runners, leak checks, seeded randomness.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { expect } from 'vitest';
import { parseServerConfig, type ServerConfig } from '../../runtime/config/serverConfig.ts';
import type { ModelInfo, ModelRunner, StepOutput, StepRow } from '../../runtime/runner/modelRunner.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { startServer, type RunningServer } from '../../runtime/http/createServer.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { mix } from '../../runtime/util/hash.ts';
import { charTokenizer, VOCAB } from '../http/testService.ts';
import { mulberry32 } from '../../shared/rng.ts';

/**
 * A simulated model that behaves like a worker runner: steps answer by promise after a real delay,
 * and `crash()` kills it the way a dead worker does (listeners first, then every pending step
 * rejects, every cache is gone). Tokens are digits from the fed context's hash; entropy straddles
 * R-Stitch's τ so routed requests really switch models.
 */
export class CrashableRunner implements ModelRunner {
  readonly info: ModelInfo;
  private readonly inner: SimRunner;
  private readonly listeners: ((e: Error) => void)[] = [];
  private readonly pending = new Set<{ timer: NodeJS.Timeout; reject: (e: Error) => void }>();
  private dead: Error | null = null;
  /** Rows this runner has stepped, for tests that wait for load to reach it. */
  rowsStepped = 0;

  constructor(
    name: string,
    private readonly stepMs: number,
    eosRate = 0,
  ) {
    const salt = name.length * 7919;
    this.inner = new SimRunner({
      name,
      vocabSize: VOCAB.length,
      eosTokenIds: [2],
      maxContext: 256,
      kvBytesPerToken: 4096,
      next: (ctx) => {
        const h = mix(ctx.contextHash, salt);
        const u = (h >>> 8) / 16777216;
        const token = u < eosRate ? 2 : 4 + (h % 10);
        const entropy = ((h >>> 4) % 1000) / 10000;
        return { token, entropy, maxProb: 1 - entropy, heads: { citer: 1 - entropy, r2r: entropy * 5, colm: entropy * 2 } };
      },
    });
    this.info = this.inner.info;
  }

  get liveCaches(): number {
    return this.dead ? 0 : this.inner.liveCaches;
  }

  get isDead(): boolean {
    return this.dead !== null;
  }

  step(rows: readonly StepRow[]): Promise<StepOutput> {
    if (this.dead) return Promise.reject(this.dead);
    let out: StepOutput;
    try {
      out = this.inner.step(rows);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    this.rowsStepped += rows.length;
    return new Promise<StepOutput>((resolve, reject) => {
      const entry = {
        timer: setTimeout(() => {
          this.pending.delete(entry);
          resolve({ rows: out.rows });
        }, this.stepMs),
        reject,
      };
      this.pending.add(entry);
    });
  }

  release(cacheId: number): void {
    if (!this.dead) this.inner.release(cacheId);
  }
  fork(source: number, target: number, tokens: number): boolean {
    return !this.dead && this.inner.fork(source, target, tokens);
  }

  onFailure(listener: (error: Error) => void): void {
    this.listeners.push(listener);
  }

  /** Dies as a worker thread does: failure listeners, then every step in flight rejects. */
  crash(message = 'worker crashed (injected by test)'): void {
    if (this.dead) return;
    this.dead = new Error(message);
    for (const l of this.listeners) l(this.dead);
    for (const p of this.pending) {
      clearTimeout(p.timer);
      p.reject(this.dead);
    }
    this.pending.clear();
  }

  async close(): Promise<void> {
    for (const p of this.pending) clearTimeout(p.timer);
    this.pending.clear();
  }
}

export interface RigOptions {
  config?: Record<string, unknown>;
  /** A trace reader from the start, as a live-feed client (the server keeps its trace window either way). */
  traced?: boolean;
  /** Real ms per step by model. */
  latency?: Partial<Record<string, number>>;
  dataDir?: string;
  eosRate?: number;
  /** Default true: the cluster checks its invariants after every batch. */
  checkInvariants?: boolean;
  /** Real ms a restarted runner takes to come up. */
  restartMs?: number;
  /** Restarts wait for this too (a test holds the runner down while it checks the down state). */
  restartGate?: Promise<void>;
}

export interface Rig {
  service: TokenRouterService;
  server: RunningServer;
  url: string;
  dataDir: string;
  config: ServerConfig;
  /** The runner serving `name` now (a restart replaces it). */
  runner(name: string): CrashableRunner;
  close(): Promise<void>;
}

/** A real listening server on loopback over CrashableRunners; crashed runners restart by themselves. */
export async function startRig(opts: RigOptions = {}): Promise<Rig> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tr-rel-'));
  const lat: Record<string, number> = { small: 2, medium: 3, large: 5, ...(opts.latency as Record<string, number>) };
  const config = parseServerConfig({ port: 0, dataDir, memory: { budgetMiB: 64 }, ...opts.config });
  const make = (name: string) => new CrashableRunner(name, lat[name] ?? 3, opts.eosRate ?? 0);
  const runners = new Map<string, ModelRunner>(config.models.map((m) => [m.name, make(m.name)]));
  const service = await TokenRouterService.start(config, {
    runners,
    tokenizer: charTokenizer(),
    checkInvariants: opts.checkInvariants ?? true,
    restartRunner: async (name) => {
      await opts.restartGate;
      await new Promise((r) => setTimeout(r, opts.restartMs ?? 30));
      return make(name);
    },
  });
  if (opts.traced) service.trace.subscribe(() => {});
  const server = await startServer(service, 0, '127.0.0.1');
  return {
    service,
    server,
    url: server.url,
    dataDir,
    config,
    runner: (name) => service.runners.get(name) as CrashableRunner,
    close: async () => {
      await server.close();
      await service.close();
    },
  };
}

/** Nothing in flight anywhere: entry, lanes, KV pools and runner caches all empty but for what the prefix caches keep. */
export function leftovers(service: TokenRouterService): string[] {
  const out: string[] = [];
  const c = service.cluster;
  if (c.activeCount) out.push(`${c.activeCount} requests active`);
  // which, and where the entry last heard they were: a stuck one names its engine
  for (const r of c.activeRequests())
    out.push(
      `request ${r.id} (${r.spec.models.join('+')}): at ${r.whereabouts.model || 'none'} after ${r.whereabouts.hops} handoffs, ${r.output.length} tokens, ${r.finished ? 'finished' : 'open'}`,
    );
  if (c.queuedCount) out.push(`${c.queuedCount} requests queued at the entry`);
  for (const l of c.laneStats()) {
    if (l.kvBytes !== l.kvPrefixBytes) out.push(`${l.name}: ${l.kvBytes} KV bytes cached, ${l.kvPrefixBytes} of them in the prefix cache`);
    if (l.kvReservedBytes) out.push(`${l.name}: ${l.kvReservedBytes} KV bytes reserved`);
    if (l.running + l.pendingReturn + l.waitingAdmission)
      out.push(`${l.name}: ${l.running} running, ${l.pendingReturn} pending-return, ${l.waitingAdmission} waiting`);
    if (l.executing) out.push(`${l.name}: still executing a batch`);
  }
  const kept = new Map(c.laneStats().map((l) => [l.name, l.prefixEntries]));
  for (const [name, r] of service.runners) {
    const live = (r as Partial<CrashableRunner>).liveCaches;
    if (live && live !== kept.get(name)) out.push(`${name}: runner holds ${live} caches, ${kept.get(name) ?? 0} of them in the prefix cache`);
  }
  return out;
}

/** Waits until the cluster is idle and every batch has returned, then asserts nothing is left. */
export async function expectNothingLeft(service: TokenRouterService, ms = 5000): Promise<void> {
  await until(() => leftovers(service).length === 0, ms).catch(() => undefined);
  expect(leftovers(service)).toEqual([]);
}

/** Polls until `cond` holds or `ms` pass. */
export async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: { error?: { message: string; type: string; param: string | null; code: string | null; details?: unknown } } & Record<string, unknown>;
}

/** One HTTP request; the body is sent as given when it is a string or bytes, else as JSON. */
export async function call(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const raw = body === undefined || typeof body === 'string' || body instanceof Uint8Array ? (body as string | Uint8Array | undefined) : JSON.stringify(body);
  const res = await fetch(url, { method, headers: { 'Content-Type': 'application/json', ...headers }, body: raw as RequestInit['body'] });
  const text = await res.text();
  let json: Reply['json'] = {};
  try {
    json = JSON.parse(text) as Reply['json'];
  } catch {
    // non-JSON answers (SSE, HTML) keep json empty
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** A completion any healthy server answers: proves the server still serves everyone else. */
export async function expectStillServing(url: string): Promise<void> {
  const r = await call(`${url}/v1/completions`, 'POST', { model: 'r-stitch', prompt: 'Q: 12*3=\nA: ', max_tokens: 4, temperature: 0 });
  expect(r.status, r.text).toBe(200);
  expect((r.json.choices as { text: string }[])[0].text.length).toBeGreaterThan(0);
}

/** A seeded generator, so a failing fuzz case replays exactly. */
export const rng = mulberry32;

/** node --expose-gc's gc(), or the same function obtained at run time when the flag was not given. */
export function gcFunction(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

/** Heap in use after full collections. */
export async function heapAfterGc(): Promise<number> {
  const gc = gcFunction();
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

/** Runs `tasks` with at most `limit` in flight. */
export async function pool<T>(count: number, limit: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      out[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  return out;
}

/** Nearest-rank percentile of `xs`. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export interface StreamResult {
  /** HTTP status of the response (a refused stream answers plain JSON). */
  status: number;
  /** Parsed `data:` payloads, [DONE] excluded. */
  chunks: Record<string, unknown>[];
  /** Concatenated content. */
  text: string;
  done: boolean;
  finishReason: string | null;
  /** The error: a JSON body, or an error event inside the stream. */
  error: { message: string; code: string | null; type: string } | null;
  /** Send → first content chunk, and send → end, in ms. */
  ttftMs: number | null;
  e2eMs: number;
  /** Set when the client hung up (abort) before the end. */
  aborted: boolean;
  /** The Retry-After header of a refused request. */
  retryAfter: string | null;
}

/**
 * Streams one chat completion. `hangUp` is asked after every chunk whether to drop the connection
 * (the client disappears mid-stream); `signal` aborts from outside (before the first token, say).
 */
export async function streamChat(
  url: string,
  body: Record<string, unknown>,
  opts: { hangUp?: (chunks: number, text: string) => boolean; signal?: AbortSignal } = {},
): Promise<StreamResult> {
  const ac = new AbortController();
  opts.signal?.addEventListener('abort', () => ac.abort());
  const t0 = performance.now();
  const out: StreamResult = {
    status: 0,
    chunks: [],
    text: '',
    done: false,
    finishReason: null,
    error: null,
    ttftMs: null,
    e2eMs: 0,
    aborted: false,
    retryAfter: null,
  };
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
      signal: ac.signal,
    });
    out.status = res.status;
    out.retryAfter = res.headers.get('retry-after');
    if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const j = (await res.json()) as { error?: StreamResult['error'] };
      out.error = j.error ?? null;
      out.e2eMs = performance.now() - t0;
      return out;
    }
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let k: number;
      while ((k = buf.indexOf('\n\n')) >= 0) {
        const line = buf.slice(0, k);
        buf = buf.slice(k + 2);
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') {
          out.done = true;
          continue;
        }
        const j = JSON.parse(data) as { error?: StreamResult['error']; choices?: { delta?: { content?: string }; finish_reason?: string | null }[] };
        out.chunks.push(j);
        if (j.error) out.error = j.error;
        const c = j.choices?.[0];
        if (c?.delta?.content) {
          out.text += c.delta.content;
          out.ttftMs ??= performance.now() - t0;
        }
        if (c?.finish_reason) out.finishReason = c.finish_reason;
      }
      if (opts.hangUp?.(out.chunks.length, out.text)) {
        out.aborted = true;
        ac.abort();
        break;
      }
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e;
    out.aborted = true;
  }
  out.e2eMs = performance.now() - t0;
  return out;
}
