// Seeded generator of bad HTTP requests for the fuzz tests: every one carries at least one defect, so every answer must be a 4xx.
import zlib from 'node:zlib';
import { rStitchIr } from './irFixtures.ts';
import { rng } from './harness.ts';

export interface FuzzRequest {
  /** Which family of defect, for the per-family tallies. */
  family: string;
  /** What exactly is wrong, for a failure message that replays the case. */
  defect: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));

/** Values of the wrong type or out of range for each request field, per the schema and the server limits. */
const BAD_FIELD: Record<string, readonly unknown[]> = {
  model: [5, null, {}, [], '', 'm'.repeat(201), true, 'gpt-9', 'no such model', '../admin', 'r-stitch@2'],
  max_tokens: ['10', -1, 0, 2.5, 257, 1e6, 1e308, true, {}, [16], -1e308],
  temperature: [-0.01, 2.01, 'hot', true, 1e300, [], {}],
  top_p: [0, -1, 1.5, 'all', false, []],
  seed: [0.5, 2 ** 60, -(2 ** 60), 'seed', {}, [1]],
  stop: [5, ['a', 'b', 'c', 'd', 'e'], [1], { s: 'x' }, true, [null]],
  stream: ['yes', 1, {}, []],
  n: [0, 129, 'one', 1.5, -1],
  frequency_penalty: [5, -2.5, 'x', []],
  logit_bias: [{ '5': 101 }, { x: 1 }, { '99999': 1 }, 5, []],
  response_format: [{ type: 'json_object' }, 'json', 5],
  user: [5, {}, 'u'.repeat(257), []],
  stream_options: ['x', 5, { include_usage: 1 }, []],
};
const BAD_PROMPT: readonly unknown[] = ['', [], [-1], [1.5], [30], [99999], {}, 7, true, [['a']], ['a', ''], [null], '9'.repeat(300), [1, 'a']];
const BAD_MESSAGES: readonly unknown[] = [
  'hi',
  [],
  [{}],
  [{ role: 'bot', content: 'x' }],
  [{ role: 'user' }],
  [{ role: 'user', content: '' }],
  [{ role: 'user', content: '   \n ' }],
  [{ role: 'user', content: [] }],
  [{ role: 'user', content: [{ type: 'image', text: 'x' }] }],
  [{ role: 'user', content: 5 }],
  [{ role: 'user', content: '7'.repeat(1000) }],
  [null],
  { role: 'user', content: 'x' },
];

function goodCompletion(r: Rand): Record<string, unknown> {
  return {
    model: pick(r, ['r-stitch', 'small', 'r2r', 'me']),
    prompt: `Q: ${int(r, 1, 999)}*${int(r, 1, 99)}=\nA: `,
    max_tokens: int(r, 1, 8),
    temperature: r() < 0.5 ? 0 : 1,
  };
}

function goodChat(r: Rand): Record<string, unknown> {
  return {
    model: pick(r, ['r-stitch', 'small', 'co-llm']),
    messages: [{ role: 'user', content: `${int(r, 1, 999)}*${int(r, 1, 99)}` }],
    max_tokens: int(r, 1, 8),
  };
}

const json = (path: string, body: unknown, family: string, defect: string, method = 'POST'): FuzzRequest => ({
  family,
  defect,
  method,
  path,
  headers: { 'Content-Type': 'application/json' },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

/** One field set to a wrong value, or a required field dropped. */
function schemaDefect(r: Rand): FuzzRequest {
  const chat = r() < 0.5;
  const base = chat ? goodChat(r) : goodCompletion(r);
  const path = chat ? '/v1/chat/completions' : '/v1/completions';
  const roll = r();
  if (roll < 0.1) {
    const field = pick(r, ['model', chat ? 'messages' : 'prompt']);
    delete base[field];
    return json(path, base, 'schema', `missing ${field}`);
  }
  if (roll < 0.4) {
    const v = chat ? pick(r, BAD_MESSAGES) : pick(r, BAD_PROMPT);
    base[chat ? 'messages' : 'prompt'] = v;
    return json(path, base, 'schema', `${chat ? 'messages' : 'prompt'} = ${JSON.stringify(v).slice(0, 60)}`);
  }
  const field = pick(r, Object.keys(BAD_FIELD));
  const v = pick(r, BAD_FIELD[field]);
  base[field] = v;
  if (field === 'stream_options') base.stream = true;
  return json(path, base, 'schema', `${field} = ${JSON.stringify(v).slice(0, 60)}`);
}

/** Valid request text made syntactically invalid: truncated, a structural character broken, or invalid UTF-8 bytes. */
function syntaxDefect(r: Rand): FuzzRequest {
  const chat = r() < 0.5;
  const text = JSON.stringify(chat ? goodChat(r) : goodCompletion(r));
  const path = chat ? '/v1/chat/completions' : '/v1/completions';
  const roll = r();
  if (roll < 0.3) {
    const at = int(r, 0, text.length - 1);
    return json(path, text.slice(0, at), 'syntax', `truncated at ${at}`);
  }
  if (roll < 0.55) {
    const structural = [...text].flatMap((c, i) => ('{}:,[]"'.includes(c) ? [i] : []));
    const at = pick(r, structural);
    const rep = pick(r, ['', '{', '}', ']', ';', '=', ' x ']);
    const broken = text.slice(0, at) + rep + text.slice(at + 1);
    // Some replacements keep it valid (a quote for a quote is impossible here, but be exact): fall back to truncation.
    let valid = true;
    try {
      JSON.parse(broken);
    } catch {
      valid = false;
    }
    return json(path, valid ? text.slice(0, -1) : broken, 'syntax', valid ? 'truncated by one' : `char ${at} → ${JSON.stringify(rep)}`);
  }
  if (roll < 0.8) {
    const bytes = Buffer.from(text);
    const at = int(r, 0, bytes.length);
    const bad = pick(r, [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc0, 0xaf], [0xe2, 0x82]]);
    return {
      family: 'syntax',
      defect: `invalid UTF-8 ${bad.map((b) => b.toString(16)).join(' ')} at ${at}`,
      method: 'POST',
      path,
      headers: { 'Content-Type': 'application/json' },
      body: new Uint8Array(Buffer.concat([bytes.subarray(0, at), Buffer.from(bad), bytes.subarray(at)])),
    };
  }
  const prefix = pick(r, ['', ' ', '\n']);
  const junk = pick(r, ['}', ',', 'NaN', 'undefined', "{'model':'small'}", '{"a":1}{', '0x10', '//']);
  return json(path, prefix + junk + text, 'syntax', `leading ${JSON.stringify(junk)}`);
}

/** Bytes that are not a JSON object at all. */
function garbage(r: Rand): FuzzRequest {
  const n = int(r, 0, 2048);
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = int(r, 0, 255);
  // Random bytes could in theory spell a JSON object; a leading NUL makes sure they never do.
  if (n > 0) bytes[0] = 0;
  return {
    family: 'garbage',
    defect: `${n} random bytes`,
    method: 'POST',
    path: pick(r, ['/v1/completions', '/v1/chat/completions', '/admin/algorithms/x/versions', '/admin/load']),
    headers: { 'Content-Type': pick(r, ['application/json', 'text/plain', 'application/octet-stream']) },
    body: bytes,
  };
}

/** Bodies past the size limit, compressed bombs, unsupported charsets and encodings. */
function transportDefect(r: Rand, allowHuge: boolean): FuzzRequest {
  const roll = r();
  const path = '/v1/completions';
  if (allowHuge && roll < 0.2) {
    const n = int(r, 1, 10) * 2 ** 20 + 1;
    return json(path, JSON.stringify({ model: 'small', prompt: 'x'.repeat(n) }), 'transport', `body of ${n} bytes`);
  }
  if (roll < 0.4) {
    const mb = pick(r, [2, 6]);
    return {
      family: 'transport',
      defect: `gzip inflating to ${mb} MB`,
      method: 'POST',
      path,
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      body: gzipBomb(mb),
    };
  }
  if (roll < 0.6)
    return {
      family: 'transport',
      defect: 'corrupt deflate',
      method: 'POST',
      path,
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': pick(r, ['gzip', 'deflate', 'br']) },
      body: new Uint8Array([1, 2, 3, int(r, 0, 255)]),
    };
  if (roll < 0.8)
    return {
      family: 'transport',
      defect: 'unknown encoding',
      method: 'POST',
      path,
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': pick(r, ['x-martian', 'compress', 'zstd2', 'gzip, x']) },
      body: JSON.stringify(goodCompletion(r)),
    };
  return {
    family: 'transport',
    defect: 'unsupported charset',
    method: 'POST',
    path,
    headers: { 'Content-Type': `application/json; charset=${pick(r, ['latin1', 'windows-1252', 'ebcdic', 'x-unknown', 'shift_jis'])}` },
    body: JSON.stringify(goodCompletion(r)),
  };
}

const bombs = new Map<number, Uint8Array>();
/** A small gzip body that inflates to `mb` MiB of JSON (cached: compressing is the costly part). */
function gzipBomb(mb: number): Uint8Array {
  let b = bombs.get(mb);
  if (!b) bombs.set(mb, (b = new Uint8Array(zlib.gzipSync(JSON.stringify({ model: 'small', prompt: '1'.repeat(mb * 2 ** 20) })))));
  return b;
}

/** Deploys that must be refused: broken IR, unknown built-ins, bad parameters, bad names. */
function deployDefect(r: Rand, ir: Record<string, unknown>): FuzzRequest {
  const name = pick(r, ['fz', 'r-stitch', 'x1']);
  const path = `/admin/algorithms/${name}/versions`;
  const roll = r();
  if (roll < 0.5) {
    const doc = JSON.parse(JSON.stringify(ir)) as Record<string, unknown> & {
      nodes: { id: string; type: string; params: Record<string, unknown>; inputs: Record<string, unknown> }[];
    };
    const k = int(r, 0, 9);
    let what: string;
    switch (k) {
      case 0:
        doc.schemaVersion = pick(r, [0, 2, '1', null]);
        what = 'schemaVersion';
        break;
      case 1:
        doc.nodes[int(r, 0, doc.nodes.length - 1)].type = pick(r, ['eval', 'exec', '', 'x'.repeat(80)]);
        what = 'node type';
        break;
      case 2:
        doc.nodes.splice(int(r, 1, doc.nodes.length - 1), 1);
        what = 'node removed';
        break;
      case 3:
        doc.models = ['small', pick(r, ['huge', 'gpt', 'tiny'])];
        what = 'unknown model';
        break;
      case 4:
        doc.nodes.push({ ...doc.nodes[0] });
        what = 'duplicate id';
        break;
      case 5: {
        const n = doc.nodes.find((x) => Object.keys(x.inputs).length > 0)!;
        n.inputs = { [Object.keys(n.inputs)[0]]: { node: 'ghost', port: 'out' } };
        what = 'dangling input';
        break;
      }
      case 6:
        doc.routes = { small: ['nope'] };
        what = 'routes';
        break;
      case 7:
        doc.nodes = Array.from({ length: 201 + int(r, 0, 100) }, (_, i) => ({ id: `n${i}`, type: 'constant', params: { value: 1 }, inputs: {} }));
        what = 'too many nodes';
        break;
      case 8:
        doc.entry = pick(r, ['', 'nobody', 5]);
        what = 'entry';
        break;
      default:
        for (const n of doc.nodes) if ('value' in n.params) n.params.value = pick(r, [1e300, -1e300, 'x', [1, 2]]);
        doc.nodes[0].params = { model: pick(r, [7, 'nobody', '']) };
        what = 'params';
    }
    return json(path, { ir: doc }, 'deploy', `IR: ${what}`);
  }
  if (roll < 0.8) {
    const body = pick<Record<string, unknown>>(r, [
      { builtin: pick(r, ['nope', '', 'R2R', 'eval']) },
      { builtin: 'r-stitch', params: { tau: pick(r, ['x', null, [], {}, true]) } },
      { builtin: 'r2r', params: { [pick(r, ['tua', 'threshold', 'constructor', 'x'])]: 1 } },
      { builtin: 'me', params: { wSmall: 'half' } },
      { builtin: 'r2r', activate: pick(r, ['yes', 1, null]) },
      { ir: rStitchIr(), builtin: 'r2r' },
      {},
      { ir: null },
      { builtin: 5 },
    ]);
    return json(path, body, 'deploy', `body ${JSON.stringify(body).slice(0, 60)}`);
  }
  const badName = pick(r, ['A', 'with space', '-lead', 'x'.repeat(65), '%00', '..', 'é']);
  return json(`/admin/algorithms/${encodeURIComponent(badName)}/versions`, { builtin: 'r2r' }, 'deploy', `name ${JSON.stringify(badName)}`);
}

/** Admin calls that must be refused: missing versions, bad thresholds, bad load runs. */
function adminDefect(r: Rand): FuzzRequest {
  const roll = r();
  if (roll < 0.35) {
    const body = pick<unknown>(r, [
      { version: int(r, 1000, 1e6) },
      { version: 0 },
      { version: -1 },
      { version: 1.5 },
      { version: '1' },
      {},
      { version: 1, extra: true },
    ]);
    return json(`/admin/algorithms/${pick(r, ['r-stitch', 'r2r', 'ghost'])}/activate`, body, 'admin', `activate ${JSON.stringify(body)}`);
  }
  if (roll < 0.45) return json(`/admin/algorithms/${pick(r, ['r2r', 'citer', 'ghost'])}/rollback`, {}, 'admin', 'rollback without history');
  if (roll < 0.75) {
    const body = pick<unknown>(r, [
      { small: 0 },
      { small: -1 },
      { small: 1.5 },
      { small: 'x' },
      { small: 1000 },
      { ghost: 2 },
      { small: 16, large: 16, medium: 16 },
      [],
      { small: null },
    ]);
    return json('/admin/thresholds', body, 'admin', `thresholds ${JSON.stringify(body)}`, 'PUT');
  }
  const body = pick<unknown>(r, [
    { concurrency: 0, requests: 1, maxTokens: 1 },
    { concurrency: 1, requests: 1e9, maxTokens: 1 },
    { concurrency: 1, requests: 1, maxTokens: 5000 },
    { concurrency: 1, requests: 1, maxTokens: 1, model: 'ghost' },
    { concurrency: 1 },
    { concurrency: 1, requests: 1, maxTokens: 1, extra: 1 },
  ]);
  return json('/admin/load', body, 'admin', `load ${JSON.stringify(body)}`);
}

/** Paths and methods nothing serves, including traversal attempts and broken escapes. */
function routeDefect(r: Rand): FuzzRequest {
  const path = pick(r, [
    '/v2/completions',
    '/v1/completions/x',
    '/admin',
    '/admin/algorithms/x',
    '/../package.json',
    '/%2e%2e/package.json',
    '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
    '/v1/%E0%A4%A',
    '/admin/algorithms/%zz/versions',
    '/.env',
    '/admin/trace/../../etc/passwd',
    `/${'a'.repeat(int(r, 1, 4000))}`,
  ]);
  const method = pick(r, ['GET', 'POST', 'PUT', 'DELETE', 'PATCH']);
  return {
    family: 'route',
    defect: `${method} ${path.slice(0, 60)}`,
    method,
    path,
    headers: { 'Content-Type': 'application/json' },
    body: method === 'GET' ? undefined : '{}',
  };
}

/** The i-th request of a seeded run: the same (seed, i) always gives the same request. */
export function fuzzRequest(seed: number, i: number, opts: { allowHuge?: boolean } = {}): FuzzRequest {
  const r = rng(seed * 1_000_003 + i);
  const roll = r();
  if (roll < 0.3) return schemaDefect(r);
  if (roll < 0.5) return syntaxDefect(r);
  if (roll < 0.58) return garbage(r);
  if (roll < 0.64) return transportDefect(r, opts.allowHuge ?? true);
  if (roll < 0.82) return deployDefect(r, baseIr());
  if (roll < 0.94) return adminDefect(r);
  return routeDefect(r);
}

let cachedIr: Record<string, unknown> | undefined;
function baseIr(): Record<string, unknown> {
  return (cachedIr ??= rStitchIr() as unknown as Record<string, unknown>);
}

export interface FuzzOutcome {
  sent: number;
  byStatus: Record<string, number>;
  byFamily: Record<string, number>;
  /** Cases answered 5xx, 2xx/3xx, without a JSON error, or not at all. */
  failures: { i: number; req: FuzzRequest; got: string }[];
}

/** Sends requests [from, to) of a seeded run with `concurrency` in flight and tallies the answers. */
export async function runFuzz(
  url: string,
  seed: number,
  from: number,
  to: number,
  concurrency: number,
  opts: { allowHuge?: boolean } = {},
): Promise<FuzzOutcome> {
  const out: FuzzOutcome = { sent: 0, byStatus: {}, byFamily: {}, failures: [] };
  let next = from;
  const worker = async () => {
    while (next < to) {
      const i = next++;
      const req = fuzzRequest(seed, i, opts);
      out.sent++;
      out.byFamily[req.family] = (out.byFamily[req.family] ?? 0) + 1;
      let got: string;
      try {
        const res = await fetch(url + req.path, { method: req.method, headers: req.headers, body: req.body as RequestInit['body'] });
        const text = await res.text();
        out.byStatus[res.status] = (out.byStatus[res.status] ?? 0) + 1;
        let errorBody = false;
        try {
          const j = JSON.parse(text) as { error?: { message?: unknown } };
          errorBody = typeof j.error?.message === 'string' && j.error.message.length > 0;
        } catch {
          errorBody = false;
        }
        got = res.status >= 400 && res.status < 500 && errorBody ? '' : `${res.status} ${text.slice(0, 160)}`;
      } catch (e) {
        out.byStatus.network = (out.byStatus.network ?? 0) + 1;
        got = `no answer: ${(e as Error).message}`;
      }
      if (got) out.failures.push({ i, req: { ...req, body: undefined }, got });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}
