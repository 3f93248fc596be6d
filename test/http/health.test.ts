// Health endpoints over real HTTP: vLLM's /health (empty 200, 503 with a model down) beside /healthz's per-model detail; the pages' icon needs no /favicon.ico.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './testService.ts';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

describe('/health and /healthz', () => {
  it('/health is 200 with an empty body while a model can serve, 503 only when none can; /healthz names the one down', async () => {
    const up = await fetch(`${t.url}/health`);
    expect([up.status, await up.text()]).toEqual([200, '']);
    const names = t.service.cluster.engines.map((e) => e.name);
    t.service.cluster.setDown('large', true);
    try {
      // the others still serve: the entry stays in the balancer
      expect((await fetch(`${t.url}/health`)).status).toBe(200);
      const detail = (await (await fetch(`${t.url}/healthz`)).json()) as { ok: boolean; models: { name: string; down: boolean }[] };
      expect(detail.ok).toBe(false);
      expect(detail.models.find((m) => m.name === 'large')?.down).toBe(true);
      for (const n of names) t.service.cluster.setDown(n, true);
      expect((await fetch(`${t.url}/health`)).status).toBe(503);
    } finally {
      for (const n of names) t.service.cluster.setDown(n, false);
    }
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
  });

  it('both pages declare an inline icon, so browsers do not request a missing /favicon.ico', () => {
    const designer = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../designer');
    for (const page of ['index.html', 'timeline.html']) {
      expect(fs.readFileSync(path.join(designer, page), 'utf8'), page).toMatch(/<link rel="icon" href="data:image\/svg\+xml,/);
    }
  });
});
