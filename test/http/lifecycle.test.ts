// Disconnects free everything, deploys switch only new requests, restarts keep the registry, metrics parse.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, until, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** Only what the prefix caches keep is left. */
function expectNothingLeft(s: TestServer) {
  expect(s.service.cluster.idle).toBe(true);
  const kept = new Map<string, number>();
  for (const l of s.service.cluster.laneStats()) {
    expect(l.kvBytes, l.name).toBe(l.kvPrefixBytes);
    expect(l.kvReservedBytes, l.name).toBe(0);
    expect(l.running + l.pendingReturn + l.waitingAdmission, l.name).toBe(0);
    kept.set(l.name, l.prefixEntries);
  }
  for (const r of s.runners.values()) expect(r.liveCaches, r.info.name).toBe(kept.get(r.info.name));
}

describe('client disconnects', () => {
  it('a disconnect mid-stream cancels the request everywhere and frees every KV byte', async () => {
    t = await startTestServer({ latency: { small: 5, large: 40 } });
    const s = t;
    const ac = new AbortController();
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'r-stitch', messages: [{ role: 'user', content: '9*9' }], max_tokens: 200, stream: true }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('"large"')) seen += new TextDecoder().decode((await reader.read()).value);
    // Now the request has visited both models: some state is pending-return on one of them.
    const lanes = s.service.cluster.laneStats();
    expect(lanes.reduce((a, l) => a + l.kvBytes, 0)).toBeGreaterThan(0);
    ac.abort();
    await until(() => s.service.cluster.idle);
    await new Promise((r) => setTimeout(r, 100)); // a step in flight returns and releases its cache
    expectNothingLeft(s);
  });
});

describe('hot deploy', () => {
  it('a deploy during load switches new requests only', async () => {
    t = await startTestServer({ latency: { small: 10, large: 10 } });
    const s = t;
    const admin = (p: string, body: unknown) =>
      fetch(s.url + p, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const chat = (max: number) =>
      fetch(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'r-stitch', messages: [{ role: 'user', content: '3*3' }], max_tokens: max, temperature: 0 }),
      }).then((r) => r.json() as Promise<{ tokenrouter: { version: number; tokens_by_model: Record<string, number> } }>);
    const inflight = [chat(60), chat(60)];
    await until(() => s.service.cluster.activeCount === 2);
    // v2: τ = 1 means R-Stitch never leaves the small model (r-stitch exists: replacing it is explicit).
    const created = await admin('/admin/algorithms/r-stitch/versions', { builtin: 'r-stitch', params: { tau: 1 }, replace: true });
    expect(created.status).toBe(201);
    expect(((await created.json()) as { version: number }).version).toBe(2);
    expect((await admin('/admin/algorithms/r-stitch/activate', { version: 2 })).status).toBe(200);
    const fresh = await chat(40);
    const old = await Promise.all(inflight);
    for (const o of old) {
      expect(o.tokenrouter.version).toBe(1);
      expect(o.tokenrouter.tokens_by_model.large).toBeGreaterThan(0);
    }
    expect(fresh.tokenrouter.version).toBe(2);
    expect(fresh.tokenrouter.tokens_by_model).toEqual({ small: 40, large: 0 });
    // Roll back: v1 again.
    const rb = await admin('/admin/algorithms/r-stitch/rollback', {});
    expect(((await rb.json()) as { activeVersion: number }).activeVersion).toBe(1);
    expect((await chat(20)).tokenrouter.version).toBe(1);
  });

  it('an invalid deploy is refused with details and stores nothing', async () => {
    t = await startTestServer();
    const res = await fetch(`${t.url}/admin/algorithms/mine/versions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ir: { schemaVersion: 99 } }),
    });
    expect(res.status).toBe(400);
    const j = (await res.json()) as { error: { code: string; details: unknown[] } };
    expect(j.error.code).toBe('invalid_ir');
    expect(j.error.details.length).toBeGreaterThan(0);
    expect(t.service.registry.get('mine')).toBeUndefined();
  });
});

describe('persistence', () => {
  it('a restart keeps every algorithm version and which one is active', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-persist-'));
    t = await startTestServer({ dataDir });
    const s1 = t;
    s1.service.registry.createVersion('r2r', { kind: 'builtin', factory: 'r2r', params: { tau: 0.5 } });
    s1.service.registry.createVersion('r2r', { kind: 'builtin', factory: 'r2r', params: { tau: 0.6 } }, { activate: true });
    const before = s1.service.registry.list();
    await s1.close();
    t = await startTestServer({ dataDir });
    const after = t.service.registry.list();
    expect(after).toEqual(before);
    expect(t.service.registry.get('r2r')!.activeVersion).toBe(3);
    expect(t.service.algorithms.resolve('r2r').version).toBe(3);
  });
});

describe('metrics', () => {
  it('/metrics parses as Prometheus text format and counts what happened', async () => {
    // traced, to check the metrics (read from lane counters, not from trace events) against the trace
    t = await startTestServer({ traced: true });
    const answer = (await (
      await fetch(`${t.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'r-stitch', messages: [{ role: 'user', content: '4*4' }], max_tokens: 30 }),
      })
    ).json()) as { tokenrouter: { handoffs: number } };
    const text = await (await fetch(`${t.url}/metrics`)).text();
    const families = parsePrometheusTextFormat(text) as { name: string; type: string; metrics: { labels?: Record<string, string>; value?: string }[] }[];
    const byName = new Map(families.map((f) => [f.name, f]));
    for (const n of [
      'tokenrouter_requests_running',
      'tokenrouter_requests_pending_return',
      'tokenrouter_batch_rows_total',
      'tokenrouter_model_busy_seconds_total',
      'tokenrouter_committed_tokens_total',
      'tokenrouter_handoffs_total',
      'tokenrouter_kv_cache_used_bytes',
      'tokenrouter_time_to_first_token_seconds',
      'tokenrouter_inter_token_latency_seconds',
      'tokenrouter_e2e_request_latency_seconds',
      'tokenrouter_batch_threshold',
    ]) {
      expect(byName.has(n), n).toBe(true);
    }
    const committed = byName.get('tokenrouter_committed_tokens_total')!.metrics.reduce((a, m) => a + Number(m.value), 0);
    expect(committed).toBe(30);
    // forward passes and rows from the engines' counters agree with the trace's batches
    const sum = (n: string) => (byName.get(n)?.metrics ?? []).reduce((a, m) => a + Number(m.value), 0);
    const batches = t.service.trace.events.filter((e) => e.type === 'batch');
    expect(batches.length).toBeGreaterThan(0);
    expect(sum('tokenrouter_forward_passes_total')).toBe(batches.length);
    expect(sum('tokenrouter_batch_rows_total')).toBe(batches.reduce((a, e) => a + (e.type === 'batch' ? e.requestIds.length : 0), 0));
    expect(sum('tokenrouter_handoffs_total')).toBe(answer.tokenrouter.handoffs);
    // the busy-time split the breakdown suite reads with no trace on: the same sums as the trace's batch events
    const lanes = t.service.cluster.laneStats();
    const traced = (f: (e: Extract<(typeof batches)[number], { type: 'batch' }>) => number) => batches.reduce((a, e) => a + (e.type === 'batch' ? f(e) : 0), 0);
    expect(lanes.reduce((a, l) => a + l.modelMs, 0)).toBeCloseTo(
      traced((e) => e.modelMs ?? 0),
      6,
    );
    expect(lanes.reduce((a, l) => a + l.batchMs, 0)).toBeCloseTo(
      traced((e) => e.end - e.start),
      6,
    );
    expect(sum('tokenrouter_model_compute_seconds_total')).toBeCloseTo(traced((e) => e.modelMs ?? 0) / 1000, 6);
    expect(sum('tokenrouter_model_compute_seconds_total')).toBeGreaterThan(0);
    expect(answer.tokenrouter.handoffs).toBeGreaterThan(0);
  });
});

describe('thresholds: "auto" on the live server', () => {
  it('estimates routing from live traffic and solves in a worker thread', async () => {
    t = await startTestServer({ config: { scheduling: { thresholds: 'auto', maxWaitMs: 20 } }, latency: { small: 2, large: 6 } });
    const s = t;
    expect(s.service.auto).not.toBeNull();
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        fetch(`${s.url}/v1/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ model: 'r-stitch', prompt: `Q: ${i}*7=\nA: `, max_tokens: 120 }),
        }),
      ),
    );
    const est = s.service.auto!.estimator.estimate(s.service.cluster.clock.now(), 10);
    expect(est).not.toBeNull();
    // R-Stitch on these runners switches both ways (lanes: small, medium, large).
    expect(est!.P[0][2]).toBeGreaterThan(0);
    expect(est!.P[2][0]).toBeGreaterThan(0);
    expect(est!.rows[1]).toBe(0);
    s.service.auto!.tick();
    await until(() => s.service.auto!.solves > 0, 20_000);
  });
});
