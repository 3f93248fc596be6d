// Issue 34 findings 6 and 8 against a real listening server: /healthz's verdict follows the models, and the live feed's incoming cap is per second.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { call, startRig, type Rig } from './harness.ts';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(() => rig.close());

describe('/healthz tells the truth (issue 34 finding 6)', () => {
  it('is 503 with ok: false while a model is down, 200 with ok: true when it is back; /health stays 200 while another model serves', async () => {
    const up = await call(`${rig.url}/healthz`, 'GET');
    expect([up.status, up.json.ok]).toEqual([200, true]);
    rig.service.cluster.setDown('large', true);
    try {
      const down = await call(`${rig.url}/healthz`, 'GET');
      expect(down.status).toBe(503);
      expect(down.json.ok).toBe(false);
      expect((down.json.models as { name: string; down: boolean }[]).find((m) => m.name === 'large')?.down).toBe(true);
      expect((await call(`${rig.url}/health`, 'GET')).status).toBe(200);
    } finally {
      rig.service.cluster.setDown('large', false);
    }
    const back = await call(`${rig.url}/healthz`, 'GET');
    expect([back.status, back.json.ok]).toEqual([200, true]);
    expect((await call(`${rig.url}/health`, 'GET')).status).toBe(200);
  });
});

describe('the live feed caps incoming messages per second (issue 34 finding 8)', () => {
  function open(): Promise<{ ws: WebSocket; errors: () => number; closed: Promise<[number, string]> }> {
    const ws = new WebSocket(`${rig.url.replace('http', 'ws')}/live`);
    let errors = 0;
    ws.on('message', (d) => {
      if ((JSON.parse(d.toString()) as { type: string }).type === 'error') errors++;
    });
    const closed = new Promise<[number, string]>((r) => ws.on('close', (code, reason) => r([code, reason.toString()])));
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve({ ws, errors: () => errors, closed }));
      ws.once('error', reject);
    });
  }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('80 messages spread over ~0.8 s (a few per 50 ms tick) close the client with 1008', async () => {
    const c = await open();
    // 2 every 20 ms: under 5 per 50 ms flush tick, so the old per-tick counter never reached 50.
    for (let i = 0; i < 40 && c.ws.readyState === WebSocket.OPEN; i++) {
      c.ws.send('{}');
      c.ws.send('{}');
      await sleep(20);
    }
    expect(await Promise.race([c.closed, sleep(3000).then(() => 'still open after 3 s')])).toEqual([1008, 'too many messages']);
    c.ws.terminate();
  });

  it('40 messages, a pause of over a second, 40 more: under the cap each second, so the client stays open', async () => {
    const c = await open();
    for (let i = 0; i < 40; i++) c.ws.send('{}');
    await expect.poll(c.errors, { timeout: 3000 }).toBe(40);
    await sleep(1100);
    for (let i = 0; i < 40; i++) c.ws.send('{}');
    await expect.poll(c.errors, { timeout: 3000 }).toBe(80);
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
    c.ws.close();
  });
});
