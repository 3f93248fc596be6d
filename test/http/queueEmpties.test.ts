// Issue 53 item 3: a model's queue that empties says so in the trace, so the timeline's queue strip comes back to zero.
import { afterEach, describe, expect, it } from 'vitest';
import { startTestServer, until, type TestServer } from './testService.ts';

let t: TestServer | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('queue trace events', () => {
  it('every model whose queue was reported non-empty ends on a length of 0 once idle', async () => {
    t = await startTestServer({ traced: true });
    const ask = () =>
      fetch(`${t!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'r-stitch', max_tokens: 24, messages: [{ role: 'user', content: '347*26' }] }),
      }).then((r) => r.json());
    await Promise.all(Array.from({ length: 6 }, ask));
    await until(() => t!.service.cluster.activeCount === 0);
    const queues = t.service.trace.events.filter((e) => e.type === 'queue');
    const models = [...new Set(queues.map((e) => e.model))];
    expect(queues.some((e) => e.length > 0)).toBe(true);
    for (const m of models) {
      const last = queues.filter((e) => e.model === m).at(-1)!;
      expect({ model: m, length: last.length }).toEqual({ model: m, length: 0 });
    }
  });
});
