// The body reader (express.json and the bounds check) against a real listening server: what it parses, what it refuses and how.
import http from 'node:http';
import zlib from 'node:zlib';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../../runtime/http/createServer.ts';
import { errorMiddleware } from '../../runtime/http/httpErrors.ts';

const LIMIT = 200;
let server: http.Server;
let port = 0;

beforeAll(async () => {
  const app = express();
  app.use(jsonBody(LIMIT));
  app.all('/echo', (req, res) => res.json({ body: req.body === undefined ? 'undefined' : req.body }));
  app.use(errorMiddleware);
  server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** One request on a kept-alive agent, so a refused body must leave the connection usable for the next. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function send(
  body: string | Buffer | null,
  headers: Record<string, string> = {},
  method = 'POST',
  chunked = false,
): Promise<{ status: number; json: { body?: unknown; error?: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/echo', method, agent, headers: { 'Content-Type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
    });
    req.on('error', reject);
    if (body !== null && chunked) {
      // two writes without a length: chunked transfer encoding
      const b = Buffer.from(body);
      req.write(b.subarray(0, b.length >> 1));
      req.end(b.subarray(b.length >> 1));
    } else if (body !== null) {
      req.setHeader('Content-Length', Buffer.byteLength(body));
      req.end(body);
    } else req.end();
  });
}

describe('jsonBody', () => {
  it('parses a plain UTF-8 object, with or without a charset, and chunked', async () => {
    expect((await send('{"a":"é"}')).json.body).toEqual({ a: 'é' });
    expect((await send('[1,2]', { 'Content-Type': 'application/json; charset=UTF-8' })).json.body).toEqual([1, 2]);
    expect((await send('{"b":1}', {}, 'POST', true)).json.body).toEqual({ b: 1 });
    // a leading BOM is dropped, as body-parser's decoder drops it
    expect((await send('\ufeff{"c":1}')).json.body).toEqual({ c: 1 });
  });

  it('reads an empty body as {} and no body at all as undefined', async () => {
    expect((await send('')).json.body).toEqual({});
    expect((await send(null, {}, 'GET')).json.body).toBe('undefined');
  });

  it('refuses JSON that is not an object or array, and broken JSON, as entity.parse.failed', async () => {
    for (const b of ['null', '"text"', '  42', 'model=small', '{"a":']) {
      const r = await send(b);
      expect([r.status, r.json.error?.code], b).toEqual([400, 'entity.parse.failed']);
      expect(r.json.error?.message).toMatch(/not valid JSON/);
    }
  });

  it('refuses invalid UTF-8 bytes', async () => {
    const r = await send(Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]));
    expect([r.status, r.json.error?.code]).toEqual([400, 'encoding.invalid']);
  });

  it('refuses a body past the limit, declared or chunked, and the connection serves the next request', async () => {
    const big = JSON.stringify({ p: 'x'.repeat(LIMIT) });
    const declared = await send(big);
    expect([declared.status, declared.json.error?.code]).toEqual([413, 'entity.too.large']);
    expect(declared.json.error?.message).toContain(`limit ${LIMIT} bytes`);
    const streamed = await send(big, {}, 'POST', true);
    expect([streamed.status, streamed.json.error?.code]).toEqual([413, 'entity.too.large']);
    expect((await send('{"after":true}')).json.body).toEqual({ after: true });
  });

  it('reads the charset as body-parser does: a utf- charset it decodes, anything else is a 415', async () => {
    for (const ct of [
      'application/json; charset="utf-8"',
      'application/json; charset=UTF-8; charset=latin1',
      'application/json; charset=',
      'application/json; x=1; charset=utf-8',
    ]) {
      expect((await send('{"a":1}', { 'Content-Type': ct })).json.body, ct).toEqual({ a: 1 });
    }
    for (const ct of [
      'application/json; charset=utf8',
      'application/json; charset=utf-8 x',
      'application/json; charset=latin1; charset=utf-8',
      'application/json; x="a;charset=utf-8"; charset=latin1',
    ]) {
      const r = await send('{"a":1}', { 'Content-Type': ct });
      expect([r.status, r.json.error?.code], ct).toEqual([415, 'charset.unsupported']);
    }
  });

  it('inflates compressed bodies and refuses other charsets', async () => {
    const gz = zlib.gzipSync('{"z":1}');
    expect((await send(gz, { 'Content-Encoding': 'gzip' })).json.body).toEqual({ z: 1 });
    const latin = await send('{}', { 'Content-Type': 'application/json; charset=latin1' });
    expect([latin.status, latin.json.error?.code]).toEqual([415, 'charset.unsupported']);
    const badGzip = await send(Buffer.from([0x1f, 0x8b, 1, 2]), { 'Content-Encoding': 'gzip' });
    expect(badGzip.status).toBe(400);
  });
});

describe('jsonBody after an asynchronous middleware', () => {
  it('answers a request whose client left before the reader started (it never hangs)', async () => {
    const app = express();
    let reached: (v: string) => void;
    const outcome = new Promise<string>((r) => (reached = r));
    app.use((_req, _res, next) => void setTimeout(next, 100));
    app.use(jsonBody(LIMIT));
    app.post('/echo', (req, res) => {
      reached(`route body=${JSON.stringify(req.body)}`);
      res.end();
    });
    app.use((e: Error & { type?: string }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      reached(`error ${e.type}`);
      res.end();
    });
    const s = http.createServer(app);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const req = http.request({
      host: '127.0.0.1',
      port: (s.address() as { port: number }).port,
      path: '/echo',
      method: 'POST',
      headers: { 'Content-Length': '100' },
    });
    req.on('error', () => {});
    req.write('{"a":');
    setTimeout(() => req.destroy(), 20);
    const got = await Promise.race([outcome, new Promise<string>((r) => setTimeout(() => r('hung'), 2000))]);
    s.close();
    expect(got).not.toBe('hung');
  });
});
