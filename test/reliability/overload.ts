// Overload driver shared by the 200-client test and the 1,000-client stress run: clients in their own process, server watched here.
import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, type Rig } from './harness.ts';

const CLIENT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'loadClient.mjs');

interface ClientOutcome {
  status: number;
  done: boolean;
  finish: string | null;
  error: string | null;
  ttftMs: number | null;
  e2eMs: number;
  retryAfter: string | null;
  chars: number;
}

export interface OverloadReport {
  clients: number;
  admitted: number;
  completed: number;
  /** 429 answers, and how many carried a Retry-After of at least one second. */
  refused429: number;
  withRetryAfter: number;
  /** Anything else: errors, truncated streams, other statuses. */
  other: { status: number; error: string | null; done: boolean }[];
  e2eMs: { p50: number; p99: number; max: number };
  ttftMs: { p50: number; p99: number };
  refusedMs: { p50: number; p99: number };
  /** The same seen by the server: request parsed → response finished (client-side queuing excluded). */
  serverE2eMs: { p50: number; p99: number };
  serverRefusedMs: { p50: number; p99: number };
  /** Peak resident set and heap of the server process (the clients run in another one), MiB. */
  peakRssMiB: number;
  peakHeapMiB: number;
  /** Highest entry-queue length and in-flight count the server reached. */
  peakQueued: number;
  peakActive: number;
  /** The server's event-loop delay while it ran, ms: how long any ready callback waited. */
  loopDelayMs: { p50: number; p99: number; max: number };
  wallMs: number;
}

function runClients(url: string, clients: number, maxTokens: number): Promise<{ wallMs: number; results: ClientOutcome[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLIENT, JSON.stringify({ url, clients, maxTokens })], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load client exited ${code}: ${err.slice(0, 500)}`));
      resolve(JSON.parse(out) as { wallMs: number; results: ClientOutcome[] });
    });
  });
}

/** Fires `clients` streaming chats at once from a separate process; each asks for `maxTokens` tokens. */
export async function runOverload(rig: Rig, clients: number, maxTokens: number): Promise<OverloadReport> {
  const c = rig.service.cluster;
  let peakRss = 0;
  let peakHeap = 0;
  let peakQueued = 0;
  let peakActive = 0;
  let ticks = 0;
  const sample = () => {
    // rss() alone is cheap; the full reading (heap) walks more, so it runs every fifth tick.
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    if (ticks++ % 5 === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    peakQueued = Math.max(peakQueued, c.queuedCount);
    peakActive = Math.max(peakActive, c.activeCount);
  };
  // The queue and in-flight peaks are also caught exactly, at every state change the trace reports.
  const unsubscribe = rig.service.trace.subscribe(() => {
    peakQueued = Math.max(peakQueued, c.queuedCount);
    peakActive = Math.max(peakActive, c.activeCount);
  });
  const serverOk: number[] = [];
  const serverRefused: number[] = [];
  const onRequest = (_req: IncomingMessage, res: ServerResponse) => {
    const t = performance.now();
    res.once('finish', () => (res.statusCode === 429 ? serverRefused : res.statusCode === 200 ? serverOk : []).push(performance.now() - t));
  };
  rig.server.server.on('request', onRequest);
  const timer = setInterval(sample, 100);
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let run: { wallMs: number; results: ClientOutcome[] };
  try {
    run = await runClients(rig.url, clients, maxTokens);
  } finally {
    clearInterval(timer);
    unsubscribe();
    rig.server.server.off('request', onRequest);
    loop.disable();
  }
  sample();
  const results = run.results;
  const ok = results.filter((r) => r.status === 200 && r.done && r.error === null && r.finish === 'length');
  const refused = results.filter((r) => r.status === 429);
  const other = results.filter((r) => !ok.includes(r) && !refused.includes(r)).map((r) => ({ status: r.status, error: r.error, done: r.done }));
  const e2e = ok.map((r) => r.e2eMs);
  return {
    clients,
    admitted: clients - refused.length,
    completed: ok.length,
    refused429: refused.length,
    withRetryAfter: refused.filter((r) => Number(r.retryAfter) >= 1).length,
    other,
    e2eMs: { p50: percentile(e2e, 50), p99: percentile(e2e, 99), max: Math.max(...e2e) },
    ttftMs: {
      p50: percentile(
        ok.map((r) => r.ttftMs ?? r.e2eMs),
        50,
      ),
      p99: percentile(
        ok.map((r) => r.ttftMs ?? r.e2eMs),
        99,
      ),
    },
    refusedMs: {
      p50: percentile(
        refused.map((r) => r.e2eMs),
        50,
      ),
      p99: percentile(
        refused.map((r) => r.e2eMs),
        99,
      ),
    },
    serverE2eMs: { p50: percentile(serverOk, 50), p99: percentile(serverOk, 99) },
    serverRefusedMs: { p50: percentile(serverRefused, 50), p99: percentile(serverRefused, 99) },
    peakRssMiB: peakRss / 2 ** 20,
    peakHeapMiB: peakHeap / 2 ** 20,
    peakQueued,
    peakActive,
    loopDelayMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
    wallMs: run.wallMs,
  };
}

/** One line for logs and docs. */
export function formatOverload(r: OverloadReport): string {
  const f = (x: number) => x.toFixed(0);
  return (
    `${r.clients} clients: ${r.completed} admitted and completed, ${r.refused429} refused 429 (${r.withRetryAfter} with Retry-After), ${r.other.length} other; ` +
    `e2e p50 ${f(r.e2eMs.p50)} ms p99 ${f(r.e2eMs.p99)} ms max ${f(r.e2eMs.max)} ms; TTFT p50 ${f(r.ttftMs.p50)} ms p99 ${f(r.ttftMs.p99)} ms; ` +
    `429 answered in p50 ${f(r.refusedMs.p50)} ms p99 ${f(r.refusedMs.p99)} ms (client side); ` +
    `server side: admitted p50 ${f(r.serverE2eMs.p50)} ms p99 ${f(r.serverE2eMs.p99)} ms, 429 p50 ${r.serverRefusedMs.p50.toFixed(2)} ms p99 ${r.serverRefusedMs.p99.toFixed(2)} ms; server peak RSS ${f(r.peakRssMiB)} MiB, peak heap ${f(r.peakHeapMiB)} MiB; ` +
    `server peak in flight ${r.peakActive}, peak queued ${r.peakQueued}; server event-loop delay p50 ${f(r.loopDelayMs.p50)} ms p99 ${f(r.loopDelayMs.p99)} ms max ${f(r.loopDelayMs.max)} ms; wall ${f(r.wallMs)} ms`
  );
}
