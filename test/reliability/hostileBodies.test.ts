// Issue 34 findings 3 and 4 against a real listening server: deeply nested bodies and `__proto__` keys are 400s naming the field, on every route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../runtime/http/createServer.ts';
import { call, expectStillServing, startRig, type Rig } from './harness.ts';
import { rStitchIr } from './irFixtures.ts';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(() => rig.close());

const nestedArrays = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const nestedObjects = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const listing = async () => (await call(`${rig.url}/admin/algorithms`, 'GET')).text;

describe('nesting depth is bounded for every JSON body (issue 34 finding 3)', () => {
  it('20,000 nested arrays as tokenrouter_ir (model draft) are a 400 on tokenrouter_ir, not a 500', async () => {
    const body = `{"model":"draft","messages":[{"role":"user","content":"12*3"}],"max_tokens":4,"tokenrouter_ir":${nestedArrays(20_000)}}`;
    expect(body.length).toBeGreaterThan(40_000);
    for (const path of ['/v1/chat/completions', '/v1/completions']) {
      const r = await call(
        `${rig.url}${path}`,
        'POST',
        path.includes('chat') ? body : body.replace('"messages":[{"role":"user","content":"12*3"}]', '"prompt":"12*3"'),
      );
      expect(r.status, r.text.slice(0, 300)).toBe(400);
      expect(r.json.error).toMatchObject({ param: 'tokenrouter_ir', code: 'invalid_request', type: 'invalid_request_error' });
      expect(r.json.error?.message).toMatch(`deeper than ${MAX_JSON_DEPTH} levels`);
    }
    await expectStillServing(rig.url);
  });

  it('the same bound holds on every route and shape: nested objects, streamed requests, messages, admin deploys', async () => {
    const cases: [string, string, string][] = [
      [
        '/v1/chat/completions',
        `{"model":"draft","stream":true,"messages":[{"role":"user","content":"1"}],"tokenrouter_ir":${nestedObjects(5000)}}`,
        'tokenrouter_ir',
      ],
      ['/v1/chat/completions', `{"model":"r-stitch","messages":${nestedArrays(5000)}}`, 'messages'],
      ['/admin/algorithms/deep/versions', `{"ir":${nestedArrays(20_000)}}`, 'ir'],
      ['/admin/algorithms/deep/versions', `{"builtin":"r2r","params":{"tau":${nestedObjects(100)}}}`, 'params'],
      ['/admin/thresholds', `{"small":${nestedArrays(200)}}`, 'small'],
    ];
    for (const [path, body, param] of cases) {
      const r = await call(`${rig.url}${path}`, path === '/admin/thresholds' ? 'PUT' : 'POST', body);
      expect(r.status, `${path}: ${r.text.slice(0, 300)}`).toBe(400);
      expect(r.json.error?.param, path).toBe(param);
    }
    // a body with no field to name (a bare deep array) is refused too, with param null
    const bare = await call(`${rig.url}/v1/completions`, 'POST', nestedArrays(1000));
    expect([bare.status, bare.json.error?.param]).toEqual([400, null]);
    expect(rig.service.registry.get('deep')).toBeUndefined();
  });

  it('a body at the bound is parsed as before, and a real draft IR still runs', async () => {
    // MAX_JSON_DEPTH levels in all: the request object is the first, so the parameter holds one fewer.
    const atBound = await call(
      `${rig.url}/v1/completions`,
      'POST',
      `{"model":"r-stitch","prompt":"1","max_tokens":2,"user":${nestedArrays(MAX_JSON_DEPTH - 1)}}`,
    );
    // past the depth check, the schema refuses the array as `user` (a string): proof the body got through
    expect([atBound.status, atBound.json.error?.param]).toEqual([400, 'user']);
    const draft = await call(`${rig.url}/v1/chat/completions`, 'POST', {
      model: 'draft',
      messages: [{ role: 'user', content: '12*3' }],
      max_tokens: 4,
      tokenrouter_ir: rStitchIr(),
    });
    expect(draft.status, draft.text.slice(0, 300)).toBe(200);
  });
});

describe('`__proto__` keys are refused by name (issue 34 finding 4)', () => {
  it('{"builtin":"r2r","params":{"__proto__":{...}}} is a 400 naming the key, and nothing is stored', async () => {
    const before = await listing();
    // Sent as text: a JS object literal would not carry an own __proto__ key, JSON.parse on the server does.
    const r = await call(`${rig.url}/admin/algorithms/sneaky/versions`, 'POST', '{"builtin":"r2r","params":{"__proto__":{"tau":0.5}},"activate":true}');
    expect(r.status, r.text).toBe(400);
    expect(r.json.error?.param).toBe('params.__proto__');
    expect(r.json.error?.message).toMatch('__proto__');
    // the escaped spelling is the same key to JSON.parse
    const escaped = await call(`${rig.url}/admin/algorithms/sneaky/versions`, 'POST', '{"builtin":"r2r","params":{"\\u005f_proto__":{"tau":0.5}}}');
    expect([escaped.status, escaped.json.error?.param]).toEqual([400, 'params.__proto__']);
    expect(rig.service.registry.get('sneaky')).toBeUndefined();
    expect(await listing()).toBe(before);
    expect((await call(`${rig.url}/v1/models/sneaky`, 'GET')).status).toBe(404);
  });

  it('inherited names (constructor, toString, hasOwnProperty, valueOf) are unknown parameters of a built-in', async () => {
    const before = await listing();
    for (const key of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      const r = await call(`${rig.url}/admin/algorithms/sneaky/versions`, 'POST', { builtin: 'r2r', params: { [key]: 1 } });
      expect(r.status, `${key}: ${r.text}`).toBe(400);
      expect(r.json.error?.message).toContain(`unknown parameter "${key}"`);
      expect(r.json.error?.param).toBe('params');
    }
    expect(await listing()).toBe(before);
  });

  it('a __proto__ key elsewhere (logit_bias, a message) is refused with its path, never silently dropped', async () => {
    const lb = await call(
      `${rig.url}/v1/chat/completions`,
      'POST',
      '{"model":"r-stitch","messages":[{"role":"user","content":"1"}],"max_tokens":2,"logit_bias":{"__proto__":100}}',
    );
    expect([lb.status, lb.json.error?.param]).toEqual([400, 'logit_bias.__proto__']);
    const msg = await call(`${rig.url}/v1/chat/completions`, 'POST', '{"model":"r-stitch","messages":[{"role":"user","content":"1","__proto__":{}}]}');
    expect([msg.status, msg.json.error?.param]).toEqual([400, 'messages.0.__proto__']);
    // the word in a prompt is just text
    const text = await call(`${rig.url}/v1/completions`, 'POST', { model: 'r-stitch', prompt: '"__proto__": 1', max_tokens: 2 });
    expect(text.status, text.text).toBe(200);
  });
});
