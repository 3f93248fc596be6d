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
  it('/health is 200 with an empty body while every model serves, 503 while one is down, 200 again after', async () => {
    const up = await fetch(`${t.url}/health`);
    expect([up.status, await up.text()]).toEqual([200, '']);
    t.service.cluster.setDown('large', true);
    try {
      const down = await fetch(`${t.url}/health`);
      expect(down.status).toBe(503);
      const detail = (await (await fetch(`${t.url}/healthz`)).json()) as { models: { name: string; down: boolean }[] };
      expect(detail.models.find((m) => m.name === 'large')?.down).toBe(true);
    } finally {
      t.service.cluster.setDown('large', false);
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
