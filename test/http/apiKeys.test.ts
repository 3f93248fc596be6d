// Inference API keys against a real listening server: 401 shape, hashed constant-time compare, admin token, open probes, per-key limits and metrics.
import crypto from 'node:crypto';
import OpenAI from 'openai';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

const ALICE = 'sk-alice-0123456789abcdef';
const BOB = 'sk-bob-only-hashed-in-config';
const CAROL = 'sk-carol-two-requests';
const DAVE = 'sk-dave-thirty-tokens';
type Answer = {
  choices: { message: { content: string } }[];
  usage: { prompt_tokens: number; total_tokens: number };
  error: Record<string, unknown> & { message: string };
};
const json = async (r: Response) => (await r.json()) as Answer;
const hex = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

let t: TestServer;
const chat = { model: 'small', messages: [{ role: 'user', content: '12*34' }], max_tokens: 8, temperature: 0 };

function post(path: string, body: unknown, auth?: string, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(auth ? { Authorization: `Bearer ${auth}` } : {}), ...extra },
    body: JSON.stringify(body),
  });
}

beforeAll(async () => {
  t = await startTestServer({
    config: {
      dev: false,
      apiKeys: [
        { name: 'alice', key: ALICE },
        { name: 'bob', sha256: hex(BOB) },
        { name: 'carol', key: CAROL, requestsPerMinute: 2 },
        { name: 'dave', key: DAVE, tokensPerMinute: 30 },
      ],
    },
  });
});
afterAll(() => t.close());
afterEach(() => vi.restoreAllMocks());

describe('with API keys set, /v1 needs one', () => {
  it('a missing or wrong key is 401 with an OpenAI-shaped invalid_api_key body, on every /v1 route', async () => {
    for (const r of [
      await post('/v1/chat/completions', chat),
      await post('/v1/chat/completions', chat, 'sk-wrong'),
      await fetch(`${t.url}/v1/models`),
      await post('/v1/completions', { model: 'small', prompt: 'x' }, `${ALICE}x`),
      await fetch(`${t.url}/v1/no-such-route`),
    ]) {
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
      const body: unknown = await r.json();
      expect(body).toEqual({ error: { message: expect.any(String), type: 'authentication_error', param: null, code: 'invalid_api_key' } });
    }
  });

  it('a right key passes, from the config as given or as its sha256 only', async () => {
    for (const key of [ALICE, BOB]) {
      const r = await post('/v1/chat/completions', chat, key);
      expect(r.status, key).toBe(200);
      expect((await json(r)).choices[0].message.content).toHaveLength(8);
    }
    expect((await fetch(`${t.url}/v1/models`, { headers: { Authorization: `Bearer ${ALICE}` } })).status).toBe(200);
  });

  it('keys are compared as SHA-256 digests with crypto.timingSafeEqual, every key each time', async () => {
    const spy = vi.spyOn(crypto, 'timingSafeEqual');
    expect((await post('/v1/chat/completions', chat, 'sk-a-guess-of-another-length')).status).toBe(401);
    // four keys and the admin token, each over 32 bytes whatever length was sent
    expect(spy.mock.calls.length).toBeGreaterThanOrEqual(5);
    for (const [a, b] of spy.mock.calls) {
      expect((a as Buffer).length).toBe(32);
      expect((b as Buffer).length).toBe(32);
    }
  });

  it('the admin token is compared the same way on /admin: digests, whatever length was sent', async () => {
    const spy = vi.spyOn(crypto, 'timingSafeEqual');
    expect((await fetch(`${t.url}/admin/status`, { headers: { Authorization: 'Bearer short' } })).status).toBe(401);
    expect(spy.mock.calls.length).toBeGreaterThanOrEqual(1);
    for (const [a, b] of spy.mock.calls) expect([(a as Buffer).length, (b as Buffer).length]).toEqual([32, 32]);
  });

  it('the admin token passes /v1; a key never opens admin', async () => {
    expect((await post('/v1/chat/completions', chat, t.service.adminToken)).status).toBe(200);
    expect((await fetch(`${t.url}/admin/status`, { headers: { Authorization: `Bearer ${t.service.adminToken}` } })).status).toBe(200);
    for (const key of [ALICE, BOB]) {
      expect((await fetch(`${t.url}/admin/status`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(401);
      expect((await fetch(`${t.url}/admin/algorithms`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(401);
    }
  });

  it('a same-origin page passes only where admin is open too (dev mode on loopback), which this server is not', async () => {
    expect((await post('/v1/chat/completions', chat, undefined, { 'Sec-Fetch-Site': 'same-origin' })).status).toBe(401);
  });

  it('/health, /healthz and /metrics stay open', async () => {
    for (const p of ['/health', '/healthz', '/metrics']) expect((await fetch(`${t.url}${p}`)).status, p).toBe(200);
  });

  it('requestsPerMinute: the next request is 429 with Retry-After and x-ratelimit-* headers', async () => {
    const first = await post('/v1/chat/completions', chat, CAROL);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect(first.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+m)?\d+s$/);
    expect((await post('/v1/chat/completions', chat, CAROL)).status).toBe(200);
    const refused = await post('/v1/chat/completions', chat, CAROL);
    expect(refused.status).toBe(429);
    const retry = Number(refused.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(refused.headers.get('x-ratelimit-limit-tokens')).toBeNull();
    expect((await json(refused)).error).toMatchObject({
      type: 'rate_limit_error',
      code: 'rate_limit_exceeded',
      message: expect.stringContaining('2 requests per minute'),
    });
    // another key is not limited by carol's window
    expect((await post('/v1/chat/completions', chat, ALICE)).status).toBe(200);
  });

  it('tokensPerMinute: prompt and completion tokens count; once spent, 429 with the token headers', async () => {
    const first = await post('/v1/chat/completions', { ...chat, max_tokens: 20 }, DAVE);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('30');
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('30');
    const usage = (await json(first)).usage;
    expect(usage.total_tokens).toBeGreaterThan(30);
    const refused = await post('/v1/chat/completions', chat, DAVE);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset-tokens')).toMatch(/^((\d+m)?\d+s|\d+ms)$/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await json(refused)).error.message).toContain('30 tokens per minute');
  });

  it('/metrics counts requests and tokens per key name, and never shows a key', async () => {
    const before = await scrape();
    const r = await post('/v1/chat/completions', { ...chat, max_tokens: 5 }, ALICE);
    const usage = (await json(r)).usage;
    const after = await scrape();
    const text = after.text;
    expect(
      value(after, 'tokenrouter_api_key_requests_total', { key: 'alice', outcome: 'accepted' }) -
        value(before, 'tokenrouter_api_key_requests_total', { key: 'alice', outcome: 'accepted' }),
    ).toBe(1);
    expect(
      value(after, 'tokenrouter_api_key_tokens_total', { key: 'alice', kind: 'prompt' }) -
        value(before, 'tokenrouter_api_key_tokens_total', { key: 'alice', kind: 'prompt' }),
    ).toBe(usage.prompt_tokens);
    expect(
      value(after, 'tokenrouter_api_key_tokens_total', { key: 'alice', kind: 'completion' }) -
        value(before, 'tokenrouter_api_key_tokens_total', { key: 'alice', kind: 'completion' }),
    ).toBe(5);
    expect(value(after, 'tokenrouter_api_key_requests_total', { key: 'carol', outcome: 'rate_limited' })).toBeGreaterThanOrEqual(1);
    expect(value(after, 'tokenrouter_api_key_requests_total', { key: '(none)', outcome: 'invalid_api_key' })).toBeGreaterThanOrEqual(1);
    for (const secret of [ALICE, BOB, CAROL, DAVE, hex(BOB), t.service.adminToken]) expect(text).not.toContain(secret);
    // TTFT counts non-streamed answers too, and its help says so (issue 35 item 10)
    expect(text).toMatch(/# HELP tokenrouter_time_to_first_token_seconds .*non-streamed/);
  });

  it('the official openai client: without the key an AuthenticationError, with it answers and streams', async () => {
    const none = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: 'sk-not-a-key', maxRetries: 0 });
    const err = await none.chat.completions.create({ ...chat, messages: [{ role: 'user', content: '12*34' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
    const client = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: ALICE, maxRetries: 0 });
    const r = await client.chat.completions.create({ ...chat, messages: [{ role: 'user', content: '12*34' }] });
    expect(r.choices[0].message.content).toHaveLength(8);
    let streamed = '';
    for await (const c of await client.completions.create({ model: 'small', prompt: 'Q: 5*6=\nA: ', max_tokens: 6, temperature: 0, stream: true }))
      streamed += c.choices[0]?.text ?? '';
    expect(streamed).toHaveLength(6);
    expect((await client.models.list()).data.map((m) => m.id)).toContain('small');
  });
});

describe('with no key set', () => {
  it('/v1 stays open, and no key metrics are counted', async () => {
    const open = await startTestServer();
    try {
      const client = new OpenAI({ baseURL: `${open.url}/v1`, apiKey: 'anything', maxRetries: 0 });
      expect((await client.chat.completions.create({ ...chat, messages: [{ role: 'user', content: '1*2' }] })).choices).toHaveLength(1);
      expect(await (await fetch(`${open.url}/metrics`)).text()).not.toMatch(/tokenrouter_api_key_requests_total\{/);
    } finally {
      await open.close();
    }
  });

  it('in dev mode on loopback the designer page (same-origin) passes a keyed /v1 as it passes admin; other clients still need a key', async () => {
    const dev = await startTestServer({ config: { apiKeys: [{ name: 'k', key: 'sk-dev-key' }] } });
    try {
      const url = (extra: Record<string, string>) =>
        fetch(`${dev.url}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...extra }, body: JSON.stringify(chat) });
      expect((await url({ 'Sec-Fetch-Site': 'same-origin' })).status).toBe(200);
      expect((await url({ 'Sec-Fetch-Site': 'cross-site' })).status).toBe(401);
      expect((await url({})).status).toBe(401);
    } finally {
      await dev.close();
    }
  });
});

type Family = { name: string; metrics: { value: string; labels?: Record<string, string> }[] };

async function scrape(): Promise<{ text: string; families: Family[] }> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  return { text, families: parsePrometheusTextFormat(text) as Family[] };
}

function value(s: Awaited<ReturnType<typeof scrape>>, name: string, labels: Record<string, string>): number {
  const fam = s.families.find((f) => f.name === name);
  const m = fam?.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
  return m ? Number(m.value) : 0;
}
