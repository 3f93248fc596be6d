// DNS rebinding (Host checked on HTTP and live-feed upgrades) and built-in names that are prototype keys, against a real listening server.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AlgorithmRegistry } from '../../runtime/registry/algorithmRegistry.ts';
import { call, startRig, type Rig } from './harness.ts';

let rig: Rig | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await rig?.close();
  rig = undefined;
});

interface RawReply {
  status: number;
  head: string;
  body: string;
}

/** One request on a raw socket, so Host and Origin are exactly what a rebinding browser sends. */
function raw(port: number, method: string, p: string, headers: Record<string, string>, body = ''): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      const h = { ...headers, Connection: 'close', ...(body ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) } : {}) };
      sock.write(
        `${method} ${p} HTTP/1.1\r\n${Object.entries(h)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}\r\n${body}`,
      );
    });
    let out = '';
    sock.on('data', (d) => {
      out += d.toString('utf8');
      // An upgrade answered 101 stays open: the status line is all the test needs.
      if (/^HTTP\/1\.1 101 /.test(out) && out.includes('\r\n\r\n')) sock.destroy();
    });
    sock.on('close', () => {
      const k = out.indexOf('\r\n\r\n');
      resolve({ status: Number(out.split(' ')[1]), head: out.slice(0, k), body: out.slice(k + 4) });
    });
    sock.on('error', reject);
  });
}

const upgrade = { Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' };

function wsUpgrade(port: number, host: string): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      const h = { Host: host, Origin: `http://${host}`, ...upgrade };
      sock.write(
        `GET /live HTTP/1.1\r\n${Object.entries(h)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}\r\n`,
      );
    });
    let out = '';
    const done = () => {
      const k = out.indexOf('\r\n\r\n');
      resolve({ status: Number(out.split(' ')[1]), head: out.slice(0, k), body: out.slice(k + 4) });
    };
    sock.on('data', (d) => {
      out += d.toString('latin1');
      if (/^HTTP\/1\.1 101 /.test(out) && out.includes('\r\n\r\n')) {
        sock.destroy();
        done();
      }
    });
    sock.on('close', done);
    sock.on('error', reject);
  });
}

describe('DNS rebinding: Host must name this server', () => {
  it('a page on attacker.example rebound to 127.0.0.1 (matching Origin) is refused on deploy, trace, models and the live feed; loopback names and IPs are served', async () => {
    rig = await startRig();
    const s = rig;
    const port = Number(new URL(s.url).port);
    const before = (await call(`${s.url}/admin/algorithms`, 'GET')).text;
    const evil = { Host: `attacker.example:${port}`, Origin: `http://attacker.example:${port}` };
    const deploy = JSON.stringify({ builtin: 'r2r', activate: true });
    const refused: [string, string, string][] = [
      ['POST', '/admin/algorithms/pwned/versions', deploy],
      ['GET', '/admin/trace', ''],
      ['GET', '/admin/trace?format=jsonl', ''],
      ['GET', '/v1/models', ''],
      ['POST', '/v1/completions', JSON.stringify({ model: 'small', prompt: '1*1=', max_tokens: 2 })],
      ['PUT', '/admin/thresholds', JSON.stringify({ small: 3 })],
    ];
    for (const [method, p, body] of refused) {
      for (const host of [
        `attacker.example:${port}`,
        'attacker.example',
        `ATTACKER.example.:${port}`,
        `127.0.0.1.nip.io:${port}`,
        `localhost.attacker.example:${port}`,
      ]) {
        const r = await raw(port, method, p, { ...evil, Host: host, Origin: `http://${host}` }, body);
        expect(r.status, `${method} ${p} Host ${host}`).toBe(403);
        expect(JSON.parse(r.body).error.code).toBe('forbidden_host');
      }
    }
    const live = await wsUpgrade(port, `attacker.example:${port}`);
    expect(live.status).toBe(403);
    expect(JSON.parse(live.body).error.code).toBe('forbidden_host');
    expect(s.service.registry.get('pwned')).toBeUndefined();
    expect((await call(`${s.url}/admin/algorithms`, 'GET')).text).toBe(before);
    expect(s.service.cluster.laneStats().find((l) => l.name === 'small')!.threshold).toBe(1);

    // The names the server really has: loopback names, IP literals (any: rebinding needs a name).
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `app.localhost:${port}`, `[::1]:${port}`, `10.1.2.3:${port}`, '127.0.0.1', 'LOCALHOST']) {
      const r = await raw(port, 'GET', '/admin/trace?format=jsonl', { Host: host, Origin: `http://${host}` });
      expect(r.status, `Host ${host}`).toBe(200);
      expect((await wsUpgrade(port, host)).status, `live feed with Host ${host}`).toBe(101);
    }
    const ok = await raw(port, 'POST', '/admin/algorithms/mine/versions', { Host: `localhost:${port}`, Origin: `http://localhost:${port}` }, deploy);
    expect(ok.status, ok.body).toBe(201);
  });

  it('configured allowedHosts (exact names, and a leading dot for subdomains) are served; look-alikes are not', async () => {
    rig = await startRig({ config: { allowedHosts: ['tr.example.com', '.corp.example'] } });
    const port = Number(new URL(rig.url).port);
    const cases: [string, number][] = [
      [`tr.example.com:${port}`, 200],
      ['TR.Example.com', 200],
      [`corp.example:${port}`, 200],
      [`a.b.corp.example:${port}`, 200],
      [`evilcorp.example:${port}`, 403],
      [`tr.example.com.evil:${port}`, 403],
      [`x.tr.example.com:${port}`, 403],
      [`tr.example.com:${port}:1`, 403],
      ['', 403],
    ];
    for (const [host, status] of cases) {
      const r = await raw(port, 'GET', '/admin/trace?format=jsonl', { Host: host });
      expect(r.status, `Host ${JSON.stringify(host)}`).toBe(status);
      if (status === 200) expect((await wsUpgrade(port, host)).status).toBe(101);
      else if (host) expect((await wsUpgrade(port, host)).status).toBe(403);
    }
  });
});

describe('built-in names are own entries only, and every stored version is proven deployable', () => {
  it('constructor, toString, __proto__, hasOwnProperty, valueOf are refused with 400 and nothing is stored', async () => {
    rig = await startRig();
    const s = rig;
    const before = (await call(`${s.url}/admin/algorithms`, 'GET')).text;
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__']) {
      for (const target of ['x', 'r2r']) {
        const r = await call(`${s.url}/admin/algorithms/${target}/versions`, 'POST', { builtin: name, activate: true });
        expect(r.status, `${name}: ${r.text}`).toBe(400);
        expect(r.json.error?.message).toMatch(/no built-in algorithm/);
        expect(r.json.error?.param).toBe('builtin');
      }
    }
    expect((await call(`${s.url}/admin/algorithms`, 'GET')).text).toBe(before);
    expect(s.service.registry.get('x')).toBeUndefined();
    // The prototype-named JSON key survives parsing as an own key and is still refused.
    const proto = await call(`${s.url}/admin/algorithms/x/versions`, 'POST', '{"builtin":"__proto__","activate":true}');
    expect(proto.status).toBe(400);
    const r = await call(`${s.url}/v1/completions`, 'POST', { model: 'r2r', prompt: '1*1=', max_tokens: 2 });
    expect(r.status).toBe(200);
  });

  it('an algorithm on a model this server does not serve is refused with 400 naming the model (deploy and activate)', async () => {
    rig = await startRig({ config: { models: [{ name: 'small' }, { name: 'large' }] } });
    const s = rig;
    const r = await call(`${s.url}/admin/algorithms/mid/versions`, 'POST', { builtin: 'single-medium', activate: true });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error?.message).toMatch(/model "medium", which this server does not serve/);
    expect(s.service.registry.get('mid')).toBeUndefined();
    // A version stored behind the API's back cannot be activated either.
    s.service.registry.createVersion('mid', { kind: 'builtin', factory: 'single-small' }, { activate: true });
    s.service.registry.createVersion('mid', { kind: 'builtin', factory: 'single-medium' });
    const act = await call(`${s.url}/admin/algorithms/mid/activate`, 'POST', { version: 2 });
    expect(act.status, act.text).toBe(400);
    expect(s.service.registry.active('mid')!.version).toBe(1);
  });

  it('on start, an active version that no longer loads is reported once and its predecessor served; with none loading, the algorithm is left out', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-badreg-'));
    // Written as an older build (object lookup) would have stored them, straight to the SQLite registry.
    const reg = new AlgorithmRegistry(dataDir);
    reg.createVersion('mine', { kind: 'builtin', factory: 'r2r', params: { tau: 0.4 } }, { activate: true });
    reg.createVersion('mine', { kind: 'builtin', factory: 'constructor' }, { activate: true });
    reg.createVersion('mine', { kind: 'builtin', factory: 'r2r', params: { tau: 0.5 } });
    reg.createVersion('gone', { kind: 'builtin', factory: 'toString' }, { activate: true });
    reg.createVersion('gone', { kind: 'ir', ir: { schemaVersion: 99 } }, { activate: true });
    reg.close();
    const lines: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void lines.push(a.map(String).join(' ')));
    rig = await startRig({ dataDir });
    const s = rig;
    const reported = lines.filter((l) => /algorithm (mine|gone)/.test(l));
    expect(reported).toHaveLength(2);
    expect(reported.find((l) => l.includes('mine'))).toMatch(/v2: no built-in algorithm "constructor".*serving v1 instead/);
    expect(reported.find((l) => l.includes('gone'))).toMatch(/no stored version loads.*not served/);
    const ids = ((await call(`${s.url}/v1/models`, 'GET')).json.data as { id: string }[]).map((m) => m.id);
    expect(ids).toContain('mine');
    expect(ids).not.toContain('gone');
    for (let i = 0; i < 3; i++) {
      const r = await call(`${s.url}/v1/completions`, 'POST', { model: 'mine', prompt: '2*2=', max_tokens: 3 });
      expect(r.status, r.text).toBe(200);
      expect((r.json.tokenrouter as { version: number }).version).toBe(1);
      const g = await call(`${s.url}/v1/completions`, 'POST', { model: 'gone', prompt: '2*2=', max_tokens: 3 });
      expect(g.status).toBe(404);
      expect(g.json.error?.message).toMatch(/no stored version that loads/);
    }
    // Still reported once, however many requests name it.
    expect(lines.filter((l) => /algorithm (mine|gone)/.test(l))).toHaveLength(2);
    // The stored history is left as it was: the operator decides what to do with it.
    expect(s.service.registry.active('mine')!.version).toBe(2);
    // Activating the loadable v3 serves it.
    expect((await call(`${s.url}/admin/algorithms/mine/activate`, 'POST', { version: 3 })).status).toBe(200);
    const r3 = await call(`${s.url}/v1/completions`, 'POST', { model: 'mine', prompt: '2*2=', max_tokens: 3 });
    expect((r3.json.tokenrouter as { version: number }).version).toBe(3);
  });
});
