// Bad input at every edge (HTTP API, live feed, deploy API): a specific 4xx or close code each time, and the server keeps serving.
import net from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { liveMessageSchema } from '../../shared/api/live.ts';
import { LIMITS } from '../../shared/ir/nodeTypes.ts';
import { chainIr, rStitchIr } from './irFixtures.ts';
import { call, expectNothingLeft, expectStillServing, startRig, type Rig } from './harness.ts';

let rig: Rig;
beforeAll(async () => {
  // Default limits (1 MiB bodies, 256 max_tokens); the simulated models have a 256-token context.
  rig = await startRig();
});
afterAll(() => rig.close());

const post = (path: string, body: unknown, headers?: Record<string, string>) => call(rig.url + path, 'POST', body, headers);

interface Case {
  name: string;
  path?: string;
  body: unknown;
  headers?: Record<string, string>;
  status: number;
  /** The field the error must name (null: none). */
  param?: string | null;
  message?: RegExp;
}

const chat = (extra: Record<string, unknown>) => ({ model: 'r-stitch', messages: [{ role: 'user', content: '12*3' }], ...extra });
const cmpl = (extra: Record<string, unknown>) => ({ model: 'r-stitch', prompt: 'Q: 12*3=\nA: ', ...extra });

const HTTP_CASES: Case[] = [
  { name: 'truncated JSON', body: '{"model": "small", "prompt": ', status: 400, message: /not valid JSON/ },
  { name: 'not JSON at all', body: 'model=small&prompt=hi', status: 400, message: /not valid JSON/ },
  { name: 'JSON null', body: 'null', status: 400, message: /not valid JSON|must be a JSON object/ },
  { name: 'JSON array', body: '[1,2]', status: 400, message: /must be a JSON object/ },
  { name: 'empty body', body: '', status: 400 },
  { name: 'raw NUL control char in a string', body: '{"model":"small","prompt":"a\u0000b"}', status: 400, message: /not valid JSON/ },
  { name: 'model is a number', body: cmpl({ model: 5 }), status: 400, param: 'model' },
  { name: 'model is missing', body: { prompt: 'hi' }, status: 400, param: 'model' },
  { name: 'model name of 10 kB', body: cmpl({ model: 'm'.repeat(10_000) }), status: 400, param: 'model' },
  { name: 'messages is a string', path: '/v1/chat/completions', body: chat({ messages: 'hi' }), status: 400, param: 'messages' },
  { name: 'messages is empty', path: '/v1/chat/completions', body: chat({ messages: [] }), status: 400, param: 'messages' },
  { name: 'unknown role', path: '/v1/chat/completions', body: chat({ messages: [{ role: 'wizard', content: 'x' }] }), status: 400, param: 'messages.0.role' },
  {
    name: 'content is a number',
    path: '/v1/chat/completions',
    body: chat({ messages: [{ role: 'user', content: 7 }] }),
    status: 400,
    param: 'messages.0.content',
  },
  { name: 'prompt is an object', body: cmpl({ prompt: { text: 'x' } }), status: 400, param: 'prompt' },
  { name: 'max_tokens as a string', body: cmpl({ max_tokens: '10' }), status: 400, param: 'max_tokens' },
  { name: 'max_tokens negative', body: cmpl({ max_tokens: -1 }), status: 400, param: 'max_tokens' },
  { name: 'max_tokens zero', body: cmpl({ max_tokens: 0 }), status: 400, param: 'max_tokens' },
  { name: 'max_tokens fractional', body: cmpl({ max_tokens: 2.5 }), status: 400, param: 'max_tokens' },
  { name: 'max_tokens 1e308', body: cmpl({ max_tokens: 1e308 }), status: 400, param: 'max_tokens' },
  { name: 'max_tokens 1e400 (Infinity)', body: '{"model":"small","prompt":"1","max_tokens":1e400}', status: 400, param: 'max_tokens' },
  { name: 'max_tokens above the server limit', body: cmpl({ max_tokens: 100_000 }), status: 400, param: 'max_tokens', message: /at most 256/ },
  {
    name: 'max_completion_tokens negative',
    path: '/v1/chat/completions',
    body: chat({ max_completion_tokens: -3 }),
    status: 400,
    param: 'max_completion_tokens',
  },
  { name: 'temperature negative', body: cmpl({ temperature: -0.5 }), status: 400, param: 'temperature' },
  { name: 'temperature huge', body: cmpl({ temperature: 1e30 }), status: 400, param: 'temperature' },
  { name: 'temperature a string', body: cmpl({ temperature: 'hot' }), status: 400, param: 'temperature' },
  { name: 'top_p zero', body: cmpl({ top_p: 0 }), status: 400, param: 'top_p' },
  { name: 'seed 2^60', body: cmpl({ seed: 2 ** 60 }), status: 400, param: 'seed' },
  { name: 'seed fractional', body: cmpl({ seed: 0.5 }), status: 400, param: 'seed' },
  { name: 'n = 0', body: cmpl({ n: 0 }), status: 400, param: 'n' },
  { name: 'n = 129 (over the cap of 128)', body: cmpl({ n: 129 }), status: 400, param: 'n' },
  { name: 'stream a string', body: cmpl({ stream: 'yes' }), status: 400, param: 'stream' },
  { name: 'five stop strings', body: cmpl({ stop: ['a', 'b', 'c', 'd', 'e'] }), status: 400, param: 'stop' },
  { name: 'stop a number', body: cmpl({ stop: 5 }), status: 400, param: 'stop' },
  {
    name: 'stream_options wrong type',
    body: cmpl({ stream: true, stream_options: { include_usage: 'y' } }),
    status: 400,
    param: 'stream_options.include_usage',
  },
  { name: 'unknown model', body: cmpl({ model: 'gpt-9' }), status: 404, param: 'model', message: /does not exist/ },
  { name: 'unknown model (chat)', path: '/v1/chat/completions', body: chat({ model: '../../etc/passwd' }), status: 404, param: 'model' },
  { name: 'draft without an IR', body: cmpl({ model: 'draft' }), status: 400, param: 'tokenrouter_ir' },
  { name: 'draft with a broken IR', body: cmpl({ model: 'draft', tokenrouter_ir: { schemaVersion: 1 } }), status: 400, param: 'ir' },
  { name: 'empty prompt', body: cmpl({ prompt: '' }), status: 400, param: 'prompt', message: /empty/ },
  { name: 'empty prompt array', body: cmpl({ prompt: [] }), status: 400, param: 'prompt' },
  {
    name: 'whitespace-only messages',
    path: '/v1/chat/completions',
    body: chat({ messages: [{ role: 'user', content: '   ' }] }),
    status: 400,
    param: 'messages',
    message: /no content/,
  },
  { name: 'negative token id', body: cmpl({ prompt: [5, -1] }), status: 400, param: 'prompt.1' },
  { name: 'token id 1e300', body: cmpl({ prompt: [1e300] }), status: 400, param: 'prompt.0' },
  { name: 'token id outside the vocabulary', body: cmpl({ prompt: [5, 30] }), status: 400, param: 'prompt', message: /outside the vocabulary \(size 30\)/ },
  { name: 'prompt over the context window (text)', body: cmpl({ prompt: '1'.repeat(300) }), status: 400, param: 'prompt', message: /context window is 256/ },
  {
    name: 'prompt over the context window (ids)',
    body: cmpl({ prompt: new Array(400).fill(5) }),
    status: 400,
    param: 'prompt',
    message: /context window is 256/,
  },
  {
    name: 'chat over the context window',
    path: '/v1/chat/completions',
    body: chat({ messages: [{ role: 'user', content: '7'.repeat(1000) }] }),
    status: 400,
    param: 'messages',
  },
  { name: 'over-long prompt of 900 kB', body: cmpl({ prompt: '9'.repeat(900_000) }), status: 400, param: 'prompt', message: /context window/ },
  {
    name: 'over-long chat of 900 kB',
    path: '/v1/chat/completions',
    body: chat({ messages: [{ role: 'user', content: [{ type: 'text', text: '9'.repeat(900_000) }] }] }),
    status: 400,
    param: 'messages',
  },
  { name: 'body of 10 MB', body: JSON.stringify(cmpl({ prompt: 'x'.repeat(10 * 2 ** 20) })), status: 413, message: /too large/ },
  {
    name: 'gzip bomb (50 MB inflated from ~50 kB)',
    body: new Uint8Array(zlib.gzipSync(JSON.stringify(cmpl({ prompt: '1'.repeat(50 * 2 ** 20) })))),
    headers: { 'Content-Encoding': 'gzip' },
    status: 413,
  },
  { name: 'corrupt gzip', body: new Uint8Array([0x1f, 0x8b, 1, 2, 3, 4]), headers: { 'Content-Encoding': 'gzip' }, status: 400 },
  { name: 'unknown content encoding', body: '{}', headers: { 'Content-Encoding': 'x-martian' }, status: 415, message: /encoding/ },
  { name: 'unsupported charset', body: '{}', headers: { 'Content-Type': 'application/json; charset=latin1' }, status: 415, message: /charset/ },
  {
    name: 'invalid UTF-8 bytes',
    body: new Uint8Array(
      Buffer.concat([Buffer.from('{"model":"small","prompt":"ab'), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]), Buffer.from('"}')]),
    ),
    status: 400,
    message: /UTF-8/,
  },
  {
    name: 'deeply nested unknown field',
    body: `{"model":"small","prompt":"1","user":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
    status: 400,
    param: 'user',
  },
];

describe('HTTP API: bad input', () => {
  it.each(HTTP_CASES)('$name → $status', async (c) => {
    const r = await post(c.path ?? '/v1/completions', c.body, c.headers);
    expect(r.status, r.text.slice(0, 300)).toBe(c.status);
    const e = r.json.error!;
    expect(e, r.text.slice(0, 300)).toBeDefined();
    expect(typeof e.message).toBe('string');
    expect(e.message.length).toBeGreaterThan(3);
    expect(e.message.length).toBeLessThan(2000); // errors never echo a huge input back
    expect(e.type).toBe(c.status === 429 ? 'rate_limit_error' : 'invalid_request_error');
    if (c.param !== undefined) expect(e.param).toBe(c.param);
    if (c.message) expect(e.message).toMatch(c.message);
  });

  it('a 900 kB prompt is refused before it is tokenized, so it cannot stall other streams', async () => {
    // Encoding costs ~5 µs a character here: tokenizing it would block the event loop for seconds.
    const body = JSON.stringify(cmpl({ prompt: '9'.repeat(900_000) }));
    const t0 = performance.now();
    const r = await post('/v1/completions', body);
    expect(r.status).toBe(400);
    expect(performance.now() - t0).toBeLessThan(1500);
  });

  it('valid JSON escapes of lone surrogates are accepted as text, not a crash', async () => {
    const r = await post('/v1/completions', '{"model":"small","prompt":"1\\ud800*2\\udfff=","max_tokens":3}');
    expect(r.status, r.text).toBe(200);
  });

  it('a prompt plus max_tokens past the context window ends with finish_reason "length" at the window', async () => {
    const r = await post('/v1/completions', { model: 'small', prompt: new Array(250).fill(5), max_tokens: 100 });
    expect(r.status, r.text).toBe(200);
    const usage = r.json.usage as { prompt_tokens: number; completion_tokens: number };
    expect(usage.prompt_tokens + usage.completion_tokens).toBe(256);
    expect((r.json.choices as { finish_reason: string }[])[0].finish_reason).toBe('length');
  });

  it('a wrong method on an OpenAI route is a JSON 405 with Allow naming the right one', async () => {
    for (const [method, p, allow] of [
      ['GET', '/v1/completions', 'POST'],
      ['GET', '/v1/chat/completions', 'POST'],
      ['DELETE', '/v1/models', 'GET'],
      ['POST', '/v1/models/small', 'GET'],
    ]) {
      const res = await fetch(rig.url + p, { method });
      expect(res.status, `${method} ${p}`).toBe(405);
      expect(res.headers.get('allow')).toBe(allow);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('method_not_allowed');
      expect(body.error.message).toBe(`${method} is not allowed on ${p}: use ${allow}`);
    }
  });

  it('unknown routes and wrong methods elsewhere answer JSON 404', async () => {
    for (const [method, p] of [
      ['PATCH', '/admin/algorithms'],
      ['GET', '/v1/../../etc/passwd'],
    ]) {
      const r = await call(rig.url + p, method);
      expect(r.status, `${method} ${p}`).toBe(404);
      expect(r.json.error?.code).toBe('not_found');
    }
  });

  it('a malformed percent-encoding in a path parameter is a 400', async () => {
    const r = await post('/admin/algorithms/%E0%A4%A/versions', { builtin: 'r2r' });
    expect(r.status).toBe(400);
    expect(r.json.error?.message).toMatch(/decode/i);
  });

  it('after every bad request above, the server still serves and holds nothing', async () => {
    await expectStillServing(rig.url);
    await expectNothingLeft(rig.service);
  });
});

describe('deploy API: bad input', () => {
  const deploy = (name: string, body: unknown) => post(`/admin/algorithms/${name}/versions`, body);

  it('refuses each broken IR with issue details and stores nothing', async () => {
    const good = rStitchIr();
    const broken: [string, (ir: Record<string, unknown>) => unknown, RegExp][] = [
      ['wrong schema version', (ir) => ({ ...ir, schemaVersion: 2 }), /unsupported_version/],
      ['wrong kind', (ir) => ({ ...ir, kind: 'tokenrouter.graph' }), /invalid_document/],
      ['not an object', () => 'r-stitch', /invalid_document/],
      ['no nodes', (ir) => ({ ...ir, nodes: [] }), /.+/],
      ['unknown model', (ir) => JSON.parse(JSON.stringify(ir).replaceAll('"large"', '"huge"')) as unknown, /unknown_model|model/],
      [
        'unknown node type',
        (ir) => ({ ...ir, nodes: (ir.nodes as { type: string }[]).map((n, i) => (i === 1 ? { ...n, type: 'eval' } : n)) }),
        /unknown_node_type/,
      ],
      [
        'dangling input',
        (ir) => ({
          ...ir,
          nodes: (ir.nodes as { inputs: object }[]).map((n) => (Object.keys(n.inputs).length ? { ...n, inputs: { a: { node: 'ghost', port: 'out' } } } : n)),
        }),
        /.+/,
      ],
      ['declared routes differ', (ir) => ({ ...ir, routes: { small: [], large: [] } }), /ir_inconsistent/],
      ['NaN-ish parameter', (ir) => JSON.parse(JSON.stringify(ir).replace('0.03', '"0.03"')) as unknown, /.+/],
      ['parameter out of range', (ir) => JSON.parse(JSON.stringify(ir).replace('0.03', '1e300')) as unknown, /param_out_of_range|out_of_range|range/],
    ];
    for (const [what, mutate, code] of broken) {
      const r = await deploy('broken', { ir: mutate(good as unknown as Record<string, unknown>) });
      expect(r.status, `${what}: ${r.text.slice(0, 200)}`).toBe(400);
      expect(r.json.error?.code, what).toBe('invalid_ir');
      expect(Array.isArray(r.json.error?.details) && (r.json.error!.details as unknown[]).length > 0, what).toBe(true);
      expect(JSON.stringify(r.json.error), what).toMatch(code);
    }
    expect(rig.service.registry.get('broken')).toBeUndefined();
  });

  it('refuses a graph over the size limits, and accepts the largest legal one', async () => {
    const max = chainIr(LIMITS.maxNodes);
    const over = { ...max, nodes: [...max.nodes, ...max.nodes.slice(0, 5).map((n) => ({ ...n, id: `${n.id}-dup` }))] };
    const r = await deploy('huge', { ir: over });
    expect(r.status).toBe(400);
    expect(r.json.error?.message).toMatch(/too_large|invalid_document/);
    const manyLayout = { ...max, layout: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`n${i}`, { x: 0, y: 0 }])) };
    const r2 = await deploy('huge', { ir: manyLayout });
    expect(r2.status).toBe(400);
    expect(rig.service.registry.get('huge')).toBeUndefined();
    const ok = await deploy('huge', { ir: max });
    expect(ok.status, ok.text.slice(0, 300)).toBe(201);
  });

  it('refuses bad bodies, unknown built-ins, bad params and bad names with the field named', async () => {
    const cases: [string, string, unknown, number, RegExp][] = [
      ['both ir and builtin', 'x', { ir: {}, builtin: 'r2r' }, 400, /.+/],
      ['neither', 'x', {}, 400, /.+/],
      ['unknown built-in', 'x', { builtin: 'gpt-router' }, 400, /no built-in algorithm/],
      ['unknown parameter', 'x', { builtin: 'r-stitch', params: { tua: 0.1 } }, 400, /unknown parameter "tua"/],
      ['parameter of the wrong type', 'x', { builtin: 'r-stitch', params: { tau: 'low' } }, 400, /must be a number/],
      ['deeply nested parameter', 'x', `{"builtin":"query-router","params":{"prompt":${'['.repeat(20_000)}${']'.repeat(20_000)}}}`, 400, /.+/],
      ['activate flag of the wrong type', 'x', { builtin: 'r2r', activate: 'yes' }, 400, /.+/],
      ['bad algorithm name', 'Has Spaces!', { builtin: 'r2r' }, 400, /algorithm name/],
      ['algorithm name of 5 kB', 'a'.repeat(5000), { builtin: 'r2r' }, 400, /algorithm name/],
    ];
    for (const [what, name, body, status, msg] of cases) {
      const r = await deploy(encodeURIComponent(name), body);
      expect(r.status, `${what}: ${r.text.slice(0, 200)}`).toBe(status);
      expect(r.json.error?.message, what).toMatch(msg);
    }
    expect(rig.service.registry.get('x')).toBeUndefined();
  });

  it('refuses bad activations, thresholds and load runs', async () => {
    const cases: [string, string, string, unknown, number, string | null][] = [
      ['activate a missing version', 'POST', '/admin/algorithms/r2r/activate', { version: 99 }, 404, 'version'],
      ['activate version 1e20', 'POST', '/admin/algorithms/r2r/activate', { version: 1e20 }, 400, 'version'],
      ['activate a missing algorithm', 'POST', '/admin/algorithms/nope/activate', { version: 1 }, 404, 'name'],
      ['roll back with no history', 'POST', '/admin/algorithms/r2r/rollback', {}, 400, 'name'],
      ['threshold for an unknown model', 'PUT', '/admin/thresholds', { huge: 2 }, 404, 'huge'],
      ['threshold above max batch', 'PUT', '/admin/thresholds', { small: 1000 }, 400, 'thresholds'],
      ['infeasible thresholds', 'PUT', '/admin/thresholds', { small: 16, large: 16 }, 400, 'thresholds'],
      ['threshold zero', 'PUT', '/admin/thresholds', { small: 0 }, 400, 'small'],
      ['load concurrency 0', 'POST', '/admin/load', { concurrency: 0, requests: 1, maxTokens: 1 }, 400, 'concurrency'],
      ['load of 1e9 requests', 'POST', '/admin/load', { concurrency: 1, requests: 1e9, maxTokens: 1 }, 400, 'requests'],
      ['load on an unknown model', 'POST', '/admin/load', { concurrency: 1, requests: 1, maxTokens: 1, model: 'zzz' }, 404, 'model'],
    ];
    for (const [what, method, p, body, status, param] of cases) {
      const r = await call(rig.url + p, method, body);
      expect(r.status, `${what}: ${r.text.slice(0, 200)}`).toBe(status);
      expect(r.json.error?.param, what).toBe(param);
    }
    expect(rig.service.cluster.laneStats().map((l) => l.threshold)).toEqual([1, 1, 1]);
    await expectStillServing(rig.url);
  });
});

describe('live feed: bad frames', () => {
  const wsUrl = () => `${rig.url.replace('http', 'ws')}/live`;
  async function open(): Promise<{ ws: WebSocket; messages: { type: string; message?: string }[]; closed: Promise<[number, string]> }> {
    const ws = new WebSocket(wsUrl());
    const messages: { type: string; message?: string }[] = [];
    ws.on('message', (d) => messages.push(JSON.parse(String(d)) as { type: string }));
    const closed = new Promise<[number, string]>((r) => ws.on('close', (code, reason) => r([code, reason.toString()])));
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    return { ws, messages, closed };
  }

  it('answers garbage text, JSON commands and binary frames with {type:"error"}, and keeps streaming', async () => {
    const { ws, messages } = await open();
    ws.send('garbage{');
    ws.send('{"type":"subscribe"}');
    ws.send(Buffer.from([0, 1, 2, 0xff]), { binary: true });
    ws.send('');
    await expect.poll(() => messages.filter((m) => m.type === 'error').length, { timeout: 3000 }).toBe(4);
    const errors = messages.filter((m) => m.type === 'error').map((m) => m.message);
    expect(errors[0]).toMatch(/must be JSON text/);
    expect(errors[1]).toMatch(/accepts no commands/);
    expect(errors[2]).toMatch(/must be JSON text/);
    // Still open and streaming: a request's events arrive on it.
    await expectStillServing(rig.url);
    await expect.poll(() => messages.some((m) => m.type === 'events'), { timeout: 3000 }).toBe(true);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });

  it('sends only messages the shared live schema accepts (the timeline checks the same schema)', async () => {
    const { ws, messages } = await open();
    await expectStillServing(rig.url);
    await expect.poll(() => ['snapshot', 'events', 'stats'].every((t) => messages.some((m) => m.type === t)), { timeout: 5000 }).toBe(true);
    ws.close();
    for (const m of messages) {
      const r = liveMessageSchema.safeParse(m);
      expect(r.success ? 'ok' : `${m.type}: ${r.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`).toBe('ok');
    }
  });

  it('closes an oversized frame with 1009 and a flood with 1008, then serves new clients', async () => {
    const a = await open();
    a.ws.send('x'.repeat(64 * 1024));
    expect((await a.closed)[0]).toBe(1009);
    const b = await open();
    for (let i = 0; i < 500; i++) b.ws.send('{}');
    expect(await b.closed).toEqual([1008, 'too many messages']);
    const c = await open();
    await expect.poll(() => c.messages.some((m) => m.type === 'snapshot'), { timeout: 3000 }).toBe(true);
    c.ws.close();
  });

  it('closes a connection that sends bytes that are not WebSocket frames (1002), and refuses bad upgrades', async () => {
    const port = Number(new URL(rig.url).port);
    const rawUpgrade = (path: string, key: string | null, after = '') =>
      new Promise<string>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () =>
          s.write(
            `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n${key ? `Sec-WebSocket-Key: ${key}\r\n` : ''}\r\n${after}`,
          ),
        );
        let out = Buffer.alloc(0);
        s.on('data', (d) => (out = Buffer.concat([out, d])));
        s.on('close', () => resolve(out.toString('latin1')));
        s.on('error', () => resolve(out.toString('latin1')));
        setTimeout(() => s.destroy(), 3000);
      });
    const garbage = await rawUpgrade('/live', 'dGhlIHNhbXBsZSBub25jZQ==', '\xff\xff\xff\xff this is not a frame');
    expect(garbage.startsWith('HTTP/1.1 101')).toBe(true);
    // The server's close frame: opcode 0x88, then status 1002 (protocol error) as two bytes.
    expect(garbage).toContain('\x88');
    expect(garbage).toContain('\x03\xea');
    expect((await rawUpgrade('/live', null)).split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect((await rawUpgrade('/elsewhere', 'dGhlIHNhbXBsZSBub25jZQ==')).split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found');
    await expectStillServing(rig.url);
  });
});
