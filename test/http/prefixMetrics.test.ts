// scheduling.prefixCache on the live server: a resent prompt is served from the prefix cache, and /metrics counts queries and hits in tokens per model.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

type Family = { name: string; metrics: { labels?: Record<string, string>; value?: string }[] };

async function prefixCounters(s: TestServer): Promise<Record<string, { queries: number; hits: number }>> {
  const families = parsePrometheusTextFormat(await (await fetch(`${s.url}/metrics`)).text()) as Family[];
  const by = (n: string) => new Map((families.find((f) => f.name === n)?.metrics ?? []).map((m) => [m.labels!.model, Number(m.value)]));
  const q = by('tokenrouter_prefix_cache_queries_total');
  const h = by('tokenrouter_prefix_cache_hits_total');
  return Object.fromEntries([...q.keys()].map((m) => [m, { queries: q.get(m)!, hits: h.get(m) ?? NaN }]));
}

const ask = (s: TestServer, prompt: string) =>
  fetch(`${s.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'small', prompt, max_tokens: 8 }),
  }).then((r) => r.json());

const PREAMBLE = 'Q: 12*3=\nA: 36\nQ: 7*8=\nA: 56\nQ: 9*9=\nA: 81\n';

describe('prefix cache metrics', () => {
  it('counts the shared preamble of a second request as hits (on by default), nothing when off', async () => {
    t = await startTestServer();
    expect(t.service.config.scheduling.prefixCache).toBe(true);
    await ask(t, `${PREAMBLE}Q: 4*4=\nA: `);
    await ask(t, `${PREAMBLE}Q: 5*6=\nA: `);
    const on = await prefixCounters(t);
    const small = t.service.cluster.laneStats().find((l) => l.name === 'small')!;
    expect(on.small).toEqual({ queries: small.prefixQueries, hits: small.prefixHits });
    // the second prompt finds at least the preamble cached
    expect(on.small.hits).toBeGreaterThanOrEqual(PREAMBLE.length);
    expect(on.small.queries).toBeGreaterThan(on.small.hits);
    await t.close();

    t = await startTestServer({ config: { scheduling: { prefixCache: false } } });
    await ask(t, `${PREAMBLE}Q: 4*4=\nA: `);
    await ask(t, `${PREAMBLE}Q: 5*6=\nA: `);
    expect((await prefixCounters(t)).small).toEqual({ queries: 0, hits: 0 });
  });
});
