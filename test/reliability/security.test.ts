// Security: bearer token on admin and live feed (dev mode excepted), token lifecycle, foreign origins, path traversal, IR interpreter bounds.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { RouteInput } from '../../shared/algorithm.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import { defaultParams } from '../../shared/ir/nodeRegistry.ts';
import { LIMITS } from '../../shared/ir/nodeTypes.ts';
import { compileIr } from '../../runtime/ir/compileIr.ts';
import type { IrMeta } from '../../runtime/ir/irMeta.ts';
import { WEB_DIST } from '../../runtime/http/createServer.ts';
import { call, expectStillServing, heapAfterGc, startRig, type Rig } from './harness.ts';
import { chainIr, RIG_CATALOG } from './irFixtures.ts';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const ADMIN_CALLS: [method: string, path: string, body: unknown, okStatus: number][] = [
  ['GET', '/admin/algorithms', undefined, 200],
  ['GET', '/admin/models', undefined, 200],
  ['GET', '/admin/status', undefined, 200],
  ['POST', '/admin/algorithms/mine/versions', { builtin: 'r2r', params: { tau: 0.4 } }, 201],
  ['POST', '/admin/algorithms/mine/activate', { version: 1 }, 200],
  ['POST', '/admin/algorithms/r2r/rollback', {}, 400],
  ['PUT', '/admin/thresholds', { small: 2 }, 200],
  ['POST', '/admin/load', { concurrency: 1, requests: 1, maxTokens: 2 }, 202],
  ['GET', '/admin/trace', undefined, 200],
  ['GET', '/admin/trace?format=jsonl', undefined, 200],
];

function wsOpen(url: string, headers: Record<string, string> = {}): Promise<{ opened: boolean; status?: number }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => {
      ws.close();
      resolve({ opened: true });
    });
    ws.once('unexpected-response', (_req, res) => resolve({ opened: false, status: res.statusCode }));
    ws.once('error', () => resolve({ opened: false }));
  });
}

describe('admin endpoints and live feed need the bearer token unless dev mode on loopback', () => {
  it('dev: false on loopback — every admin call and the live feed refuse a missing or wrong token, accept the right one', async () => {
    rig = await startRig({ config: { dev: false } });
    const s = rig;
    const token = s.service.adminToken;
    // The last character changed (to one it is not: a random token may end in 'x').
    const lastChanged = token.slice(0, -1) + (token.endsWith('x') ? 'y' : 'x');
    const wrong = [undefined, 'Bearer ', `Bearer ${lastChanged}`, `Bearer ${token}x`, `Basic ${Buffer.from(`admin:${token}`).toString('base64')}`, token];
    let refused = 0;
    for (const [method, p, body, ok] of ADMIN_CALLS) {
      for (const auth of wrong) {
        const r = await call(s.url + p, method, body, auth ? { Authorization: auth } : {});
        expect(r.status, `${method} ${p} with ${auth?.slice(0, 12)}`).toBe(401);
        expect(r.headers.get('www-authenticate')).toBe('Bearer');
        expect(r.json.error?.code).toBe('unauthorized');
        refused++;
      }
      const good = await call(s.url + p, method, body, { Authorization: `Bearer ${token}` });
      expect(good.status, `${method} ${p}: ${good.text.slice(0, 200)}`).toBe(ok);
    }
    // Refused calls changed nothing: only the authorised deploy exists.
    expect(s.service.registry.get('mine')!.versions.length).toBe(1);
    const live = `${s.url.replace('http', 'ws')}/live`;
    expect(await wsOpen(live)).toEqual({ opened: false, status: 401 });
    expect(await wsOpen(`${live}?token=${token}x`)).toEqual({ opened: false, status: 401 });
    expect(await wsOpen(live, { Authorization: `Bearer ${token.slice(1)}` })).toEqual({ opened: false, status: 401 });
    expect(await wsOpen(`${live}?token=${encodeURIComponent(token)}`)).toEqual({ opened: true });
    expect(await wsOpen(live, { Authorization: `Bearer ${token}` })).toEqual({ opened: true });
    // The OpenAI API stays open to clients.
    await expectStillServing(s.url);
    console.log(`[auth] ${refused} unauthorised admin calls refused, 3 unauthorised live-feed upgrades refused`);
  });

  it('dev mode on a non-loopback host still needs the token; dev mode on loopback does not', async () => {
    rig = await startRig({ config: { dev: true, host: '0.0.0.0' } });
    expect((await call(`${rig.url}/admin/status`, 'GET')).status).toBe(401);
    await rig.close();
    rig = await startRig({ config: { dev: true, host: '127.0.0.1' } });
    expect((await call(`${rig.url}/admin/status`, 'GET')).status).toBe(200);
  });

  it('the token is generated on first start (private file, 192 bits), reused on restart, and a configured one wins', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-token-'));
    rig = await startRig({ dataDir, config: { dev: false } });
    const first = rig.service.adminToken;
    const file = path.join(dataDir, 'admin-token');
    expect(fs.readFileSync(file, 'utf8').trim()).toBe(first);
    expect(fs.statSync(file).mode & 0o077).toBe(0);
    expect(first).toMatch(/^[A-Za-z0-9_-]{32}$/);
    await rig.close();
    rig = await startRig({ dataDir, config: { dev: false } });
    expect(rig.service.adminToken).toBe(first);
    await rig.close();
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-token-'));
    rig = await startRig({ dataDir: other, config: { dev: false } });
    expect(rig.service.adminToken).not.toBe(first);
    await rig.close();
    rig = await startRig({ dataDir, config: { dev: false, adminToken: 'configured-token-0123456789' } });
    expect(rig.service.adminToken).toBe('configured-token-0123456789');
    expect((await call(`${rig.url}/admin/status`, 'GET', undefined, { Authorization: `Bearer ${first}` })).status).toBe(401);
    expect((await call(`${rig.url}/admin/status`, 'GET', undefined, { Authorization: 'Bearer configured-token-0123456789' })).status).toBe(200);
  });
});

describe('foreign origins', () => {
  it('no CORS headers for a foreign origin, on preflight or on a plain request', async () => {
    rig = await startRig();
    const pre = await fetch(`${rig.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type, authorization' },
    });
    const get = await fetch(`${rig.url}/admin/trace`, { headers: { Origin: 'https://evil.example' } });
    for (const res of [pre, get]) {
      const acHeaders = [...res.headers.keys()].filter((k) => k.startsWith('access-control-'));
      expect(acHeaders).toEqual([]);
    }
  });

  it('a cross-site page cannot deploy, activate or generate through dev mode (simple text/plain POSTs skip preflight)', async () => {
    rig = await startRig();
    const s = rig;
    const evil = { Origin: 'https://evil.example', 'Content-Type': 'text/plain' };
    const attempts: [string, string, unknown][] = [
      ['POST', '/admin/algorithms/pwned/versions', { builtin: 'r2r', activate: true }],
      ['POST', '/admin/algorithms/r2r/activate', { version: 1 }],
      ['POST', '/admin/load', { concurrency: 4, requests: 100, maxTokens: 64 }],
      ['POST', '/v1/completions', { model: 'small', prompt: '1*1=', max_tokens: 4 }],
    ];
    for (const [method, p, body] of attempts) {
      for (const origin of ['https://evil.example', 'null', `http://127.0.0.1:${Number(new URL(s.url).port) + 1}`]) {
        const r = await call(s.url + p, method, body, { ...evil, Origin: origin });
        expect(r.status, `${p} from ${origin}`).toBe(403);
        expect(r.json.error?.code).toBe('forbidden_origin');
      }
    }
    expect(s.service.registry.get('pwned')).toBeUndefined();
    expect(s.service.cluster.completed).toBe(0);
    // A page served by the server itself (same origin), and clients that send no Origin, are served.
    const own = await call(`${s.url}/v1/completions`, 'POST', { model: 'small', prompt: '1*1=', max_tokens: 2 }, { Origin: s.url });
    expect(own.status).toBe(200);
    await expectStillServing(s.url);
    // The live feed carries generated tokens: a foreign page's WebSocket (browsers send Origin) is refused.
    const live = `${s.url.replace('http', 'ws')}/live`;
    expect(await wsOpen(live, { Origin: 'https://evil.example' })).toEqual({ opened: false, status: 403 });
    expect(await wsOpen(live, { Origin: s.url })).toEqual({ opened: true });
  });
});

describe('no path traversal in the static file server', () => {
  it('never serves a file outside the web app folder, whatever the encoding', async () => {
    rig = await startRig();
    const port = Number(new URL(rig.url).port);
    const get = (p: string) =>
      new Promise<string>((resolve) => {
        const sock = net.connect(port, '127.0.0.1', () => sock.write(`GET ${p} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`));
        let out = '';
        sock.on('data', (d) => (out += d.toString('latin1')));
        sock.on('close', () => resolve(out));
        sock.on('error', () => resolve(out));
      });
    const secret = fs.readFileSync(path.resolve(WEB_DIST, '../../package.json'), 'utf8');
    const probes = [
      '/../package.json',
      '/../../package.json',
      '/%2e%2e/package.json',
      '/%2e%2e%2fpackage.json',
      '/%2E%2E%2F%2E%2E%2Fpackage.json',
      '/..%2fpackage.json',
      '/..%5cpackage.json',
      '/..\\package.json',
      '/assets/../../package.json',
      '/assets/%2e%2e/%2e%2e/package.json',
      '/assets/..%2f..%2fpackage.json',
      '/%252e%252e/package.json',
      '/%c0%ae%c0%ae/package.json',
      '/.%2e/.%2e/package.json',
      '//package.json',
      '/timeline/../../package.json',
      '/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd',
      '/../../../../../../etc/passwd',
      '/..%00/package.json',
      '/index.html/../../package.json',
      '/.env',
      '/.git/config',
    ];
    for (const p of probes) {
      const res = await get(p);
      const status = Number(res.split(' ')[1]);
      expect([400, 403, 404], `${p}: ${res.slice(0, 80)}`).toContain(status);
      expect(res.includes(secret.slice(0, 200)) || res.includes('"devDependencies"') || res.includes('root:x:0:0')).toBe(false);
    }
    // The static server is live (so the probes hit it, not a missing folder) when the app is built.
    if (fs.existsSync(path.join(WEB_DIST, 'index.html'))) expect(Number((await get('/timeline')).split(' ')[1])).toBe(200);
  });
});

describe('the IR interpreter is bounded in time and memory per step', () => {
  /** The costliest legal graph: a top-64 distribution read by 196 top-k-mass nodes (64 additions each). */
  function worstGraph(): GraphDocument {
    const n = LIMITS.maxNodes;
    const nodes: [string, string, Record<string, unknown>][] = [
      ['start', 'start', { model: 'small' }],
      ['d', 'distribution', { model: 'small', topK: LIMITS.maxTopK }],
      ['go', 'handoff', { model: 'small', to: 'large', keep: false }],
      ['back', 'handBack', { model: 'large', to: 'small', after: 1 }],
    ];
    const edges: string[] = [];
    for (let i = 0; nodes.length < n - 1; i++) {
      nodes.push([`m${i}`, 'topKMass', { k: LIMITS.maxTopK }]);
      edges.push(`d.out>m${i}.dist`);
    }
    nodes.push(['cmp', 'compare', { op: '>', value: 2 }]);
    edges.push(`m0.out>cmp.a`, 'cmp.out>go.when');
    return {
      schemaVersion: 1,
      kind: 'tokenrouter.graph',
      name: 'worst',
      nodes: nodes.map(([id, type, params], i) => ({
        id,
        type,
        params: { ...defaultParams(type as 'start'), ...params } as GraphDocument['nodes'][number]['params'],
        position: { x: i, y: 0 },
      })),
      edges: edges.map((e) => {
        const [from, to] = e.split('>');
        const [source, sourceHandle] = from.split('.');
        const [target, targetHandle] = to.split('.');
        return { id: e, source, sourceHandle, target, targetHandle };
      }),
    };
  }

  function input(meta: IrMeta, over: Partial<RouteInput<IrMeta>> = {}): RouteInput<IrMeta> {
    const ids = Array.from({ length: 64 }, (_, i) => i);
    const probs = ids.map(() => 1 / 64);
    return {
      token: 5,
      entropy: 0.5,
      maxProb: 0.5,
      margin: 0.1,
      tokenProb: 0.5,
      topIds: ids,
      topProbs: probs,
      heads: {},
      model: 1,
      position: 10,
      stepsHere: 1,
      generated: 3,
      draw: 0.3,
      meta,
      ...over,
    } as RouteInput<IrMeta>;
  }

  it('the largest legal graphs compile fast, one node more is refused, and a step costs bounded time and no memory', async () => {
    const compiled = compileGraph(worstGraph(), RIG_CATALOG);
    expect(compiled.ok, JSON.stringify(compiled.issues).slice(0, 300)).toBe(true);
    if (!compiled.ok) return;
    expect(compiled.ir.nodes.length).toBe(LIMITS.maxNodes);
    const t0 = performance.now();
    const alg = compileIr(compiled.ir, { models: RIG_CATALOG });
    const compileMs = performance.now() - t0;
    expect(compileMs).toBeLessThan(3000);
    const over = { ...compiled.ir, nodes: [...compiled.ir.nodes, { id: 'extra', type: 'constant', params: { value: 1 }, inputs: {} }] };
    expect(() => compileIr(over, { models: RIG_CATALOG })).toThrow(/too_large|invalid_document/);

    const meta = alg.initMeta();
    const x = input(meta);
    for (let i = 0; i < 2000; i++) alg.route(x); // warm-up (JIT)
    const heap0 = await heapAfterGc();
    const steps = 5000;
    let worst = 0;
    const t1 = performance.now();
    for (let i = 0; i < steps; i++) {
      const a = performance.now();
      alg.route(x);
      const d = performance.now() - a;
      if (d > worst) worst = d;
    }
    const meanUs = ((performance.now() - t1) / steps) * 1000;
    const heap1 = await heapAfterGc();
    console.log(
      `[ir-bounds] 200-node worst-case IR: compile ${compileMs.toFixed(1)} ms, route mean ${meanUs.toFixed(1)} µs, max ${worst.toFixed(2)} ms over ${steps} steps, heap ${((heap1 - heap0) / 1024).toFixed(0)} KiB after`,
    );
    // Loose bounds (a shared, loaded CI machine): the point is a fixed ceiling, not speed.
    expect(meanUs).toBeLessThan(500);
    expect(heap1 - heap0).toBeLessThan(2 * 2 ** 20);
    // Request metadata is a fixed-size record: memory nodes only, never growing with steps.
    expect(JSON.stringify(meta).length).toBeLessThan(200);
  });

  it('never throws on hostile numbers: division by zero, NaN and infinite signals into memory nodes', () => {
    const ir = chainIr(LIMITS.maxNodes); // a chain of + * − ÷ by 1.0001
    const alg = compileIr(ir, { models: RIG_CATALOG });
    const meta = alg.initMeta();
    const chainTargets = [0, -0, Number.NaN, Infinity, -Infinity, 1e308, -1e308, 5e-324].map((entropy) => alg.route(input(meta, { entropy })));
    expect(chainTargets.every((t) => t === 0 || t === 2)).toBe(true);
    const g: GraphDocument = {
      schemaVersion: 1,
      kind: 'tokenrouter.graph',
      name: 'hostile',
      nodes: [
        { id: 'start', type: 'start', params: { model: 'small' }, position: { x: 0, y: 0 } },
        { id: 'z', type: 'constant', params: { value: 0 }, position: { x: 0, y: 0 } },
        { id: 'h', type: 'entropy', params: { model: 'small' }, position: { x: 0, y: 0 } },
        { id: 'div', type: 'arith', params: { ...defaultParams('arith'), op: '/' }, position: { x: 0, y: 0 } },
        { id: 'c', type: 'movingAverage', params: { ...defaultParams('movingAverage') }, position: { x: 0, y: 0 } },
        { id: 'cmp', type: 'compare', params: { ...defaultParams('compare'), op: '>' }, position: { x: 0, y: 0 } },
        { id: 'go', type: 'handoff', params: { ...defaultParams('handoff'), model: 'small', to: 'large' }, position: { x: 0, y: 0 } },
        { id: 'back', type: 'handBack', params: { ...defaultParams('handBack'), model: 'large', to: 'small' }, position: { x: 0, y: 0 } },
      ],
      edges: [
        { id: 'e1', source: 'h', sourceHandle: 'out', target: 'div', targetHandle: 'a' },
        { id: 'e2', source: 'z', sourceHandle: 'out', target: 'div', targetHandle: 'b' },
        { id: 'e3', source: 'div', sourceHandle: 'out', target: 'cmp', targetHandle: 'a' },
        { id: 'e4', source: 'c', sourceHandle: 'value', target: 'cmp', targetHandle: 'b' },
        { id: 'e6', source: 'h', sourceHandle: 'out', target: 'c', targetHandle: 'x' },
        { id: 'e5', source: 'cmp', sourceHandle: 'out', target: 'go', targetHandle: 'when' },
      ],
    };
    const r = compileGraph(g, RIG_CATALOG);
    expect(r.ok, JSON.stringify(r.issues).slice(0, 400)).toBe(true);
    if (!r.ok) return;
    const hostile = compileIr(r.ir, { models: RIG_CATALOG });
    const m = hostile.initMeta();
    const hostileEntropy = [Number.NaN, Infinity, -Infinity, 0, 1e308];
    const targets = new Set<number>();
    for (let i = 0; i < 2000; i++) targets.add(hostile.route(input(m, { entropy: hostileEntropy[i % 5] })));
    expect([...targets].every((t) => t === 0 || t === 2)).toBe(true);
    // The moving average fed NaN and ±Infinity kept its last finite value (metadata must survive JSON).
    expect(m.mem.every((v) => Number.isFinite(v))).toBe(true);
    expect(JSON.parse(JSON.stringify(m))).toEqual(m);
  });
});
