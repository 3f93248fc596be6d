// Clients hanging up at every point (queued, waiting for KV, prefilling, mid-stream, pending-return at a peer): cancelled everywhere, everything freed.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../shared/trace.ts';
import { expectNothingLeft, expectStillServing, leftovers, rng, startRig, streamChat, until, type Rig } from './harness.ts';

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** Request ends seen in the trace, by status. */
function endTally(events: readonly TraceEvent[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const e of events) if (e.type === 'request-end') t[e.status] = (t[e.status] ?? 0) + 1;
  return t;
}

function laneOf(s: Rig, name: string) {
  return s.service.cluster.laneStats().find((l) => l.name === name)!;
}

describe('disconnects', () => {
  it('a hang-up while the request is pending-return at a peer cancels it on both models', async () => {
    rig = await startRig({ traced: true, latency: { small: 3, large: 15 } });
    const s = rig;
    for (const holder of ['small', 'large'] as const) {
      // holder = the model keeping pending-return state while the request runs on the other one.
      let sawPending = false;
      const r = await streamChat(
        s.url,
        { model: 'r-stitch', messages: [{ role: 'user', content: '12*34' }], max_tokens: 200 },
        {
          hangUp: () => {
            const l = laneOf(s, holder);
            sawPending = l.pendingReturn === 1 && l.kvBytes > 0;
            return sawPending;
          },
        },
      );
      expect(r.aborted, `hung up while pending-return on ${holder}`).toBe(true);
      expect(sawPending).toBe(true);
      await expectNothingLeft(s.service);
    }
    expect(endTally(s.service.trace.events)).toEqual({ cancelled: 2 });
  });

  it('a hang-up while queued at the entry, or waiting for KV admission, removes the request before it ever runs', async () => {
    // One request decodes at a time; a 4 MiB budget holds ~341 KV tokens per model (three 110-token requests).
    rig = await startRig({
      traced: true,
      latency: { small: 5, large: 5 },
      config: { memory: { budgetMiB: 4 }, limits: { maxConcurrency: 6, maxQueue: 16, maxTokens: 256, maxBodyBytes: 2 ** 20 } },
    });
    const s = rig;
    const c = s.service.cluster;
    const long = () => streamChat(s.url, { model: 'small', messages: [{ role: 'user', content: '1*1' }], max_tokens: 100 });
    const running = [long(), long(), long()];
    await until(() => laneOf(s, 'small').running === 3);
    const ac = new AbortController();
    const waiting = Array.from({ length: 3 }, () =>
      streamChat(s.url, { model: 'small', messages: [{ role: 'user', content: '2*2' }], max_tokens: 100 }, { signal: ac.signal }),
    );
    await until(() => laneOf(s, 'small').waitingAdmission === 3);
    const queued = Array.from({ length: 4 }, () =>
      streamChat(s.url, { model: 'small', messages: [{ role: 'user', content: '3*3' }], max_tokens: 100 }, { signal: ac.signal }),
    );
    await until(() => c.queuedCount === 4);
    ac.abort();
    await until(() => c.queuedCount === 0 && laneOf(s, 'small').waitingAdmission === 0);
    for (const r of await Promise.all([...waiting, ...queued])) expect(r.aborted).toBe(true);
    // The ones that held memory finish normally.
    for (const r of await Promise.all(running)) expect(r.finishReason).toBe('length');
    await expectNothingLeft(s.service);
    const t = endTally(s.service.trace.events);
    expect(t).toEqual({ done: 3, cancelled: 7 });
    // None of the seven ever got a batch: cancelled before running anywhere.
    const batched = new Set(s.service.trace.events.flatMap((e) => (e.type === 'batch' ? e.requestIds : [])));
    expect(batched.size).toBe(3);
  });

  it('a raw socket destroyed mid-stream and an aborted unary request are both cancelled', async () => {
    rig = await startRig({ traced: true, latency: { small: 4, large: 8 } });
    const s = rig;
    const port = Number(new URL(s.url).port);
    const body = JSON.stringify({ model: 'r-stitch', messages: [{ role: 'user', content: '9*9' }], max_tokens: 200, stream: true });
    await new Promise<void>((resolve) => {
      const sock = net.connect(port, '127.0.0.1', () =>
        sock.write(
          `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        ),
      );
      let seen = 0;
      sock.on('data', (d) => {
        seen += (String(d).match(/data: /g) ?? []).length;
        if (seen >= 5) sock.destroy();
      });
      sock.on('close', () => resolve());
    });
    const ac = new AbortController();
    const unary = fetch(`${s.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'r-stitch', prompt: '5*5=', max_tokens: 200 }),
      signal: ac.signal,
    });
    await until(() => s.service.cluster.activeCount === 1 && s.service.cluster.committed > 10);
    ac.abort();
    await expect(unary).rejects.toThrow();
    await expectNothingLeft(s.service);
    expect(endTally(s.service.trace.events)).toEqual({ cancelled: 2 });
  });

  it('80 clients hanging up at seeded random points: every request ends, none fails, nothing is left', async () => {
    rig = await startRig({
      traced: true,
      latency: { small: 2, large: 5 },
      config: { limits: { maxConcurrency: 16, maxQueue: 200, maxTokens: 256, maxBodyBytes: 2 ** 20 } },
    });
    const s = rig;
    const r = rng(4242);
    const modes = { early: 0, mid: 0, pending: 0, complete: 0 };
    let hungUpAfterTokens = 0;
    let hungUpPending = 0;
    const runs = Array.from({ length: 80 }, (_, i) => {
      const roll = r();
      const mode = roll < 0.25 ? 'early' : roll < 0.55 ? 'mid' : roll < 0.8 ? 'pending' : 'complete';
      modes[mode]++;
      const ac = new AbortController();
      if (mode === 'early') setTimeout(() => ac.abort(), 30 + Math.floor(r() * 300));
      const after = 1 + Math.floor(r() * 20);
      const body = { model: i % 5 === 0 ? 'small' : 'r-stitch', messages: [{ role: 'user', content: `${i}*${i + 7}` }], max_tokens: 40 };
      return streamChat(s.url, body, {
        signal: ac.signal,
        hangUp: (chunks) => {
          if (mode === 'mid' && chunks >= after) return true;
          if (mode === 'pending' && chunks >= 2 && s.service.cluster.laneStats().some((l) => l.pendingReturn > 0) && r() < 0.3) {
            hungUpPending++;
            return true;
          }
          return false;
        },
      }).then((res) => {
        if (res.aborted && res.chunks.length > 0) hungUpAfterTokens++;
        return res;
      });
    });
    const results = await Promise.all(runs);
    await expectNothingLeft(s.service, 10_000);
    const t = endTally(s.service.trace.events);
    const finished = results.filter((x) => !x.aborted);
    for (const x of finished) expect([x.status, x.error, x.finishReason]).toEqual([200, null, 'length']);
    expect(t.failed ?? 0).toBe(0);
    // Every request the server saw ends once. An early hang-up can beat the request to the server
    // (nothing to end); a client may also hang up after the server ended its request (the last
    // chunks still in flight), so a hang-up can meet 'done', moving a request from cancelled to done.
    const abortedBeforeTokens = results.filter((x) => x.aborted && x.chunks.length === 0).length;
    expect((t.done ?? 0) + (t.cancelled ?? 0)).toBeLessThanOrEqual(80);
    expect(80 - (t.done ?? 0) - (t.cancelled ?? 0)).toBeLessThanOrEqual(abortedBeforeTokens);
    expect(t.done ?? 0).toBeGreaterThanOrEqual(finished.length);
    const lateHangUps = (t.done ?? 0) - finished.length;
    expect(t.cancelled ?? 0).toBeGreaterThanOrEqual(hungUpAfterTokens - lateHangUps);
    expect(lateHangUps).toBeLessThan(10);
    expect(hungUpPending).toBeGreaterThan(5);
    // Some hang-ups reached the server before the request's first token (queued or prefilling).
    const beforeFirst = s.service.trace.events.filter((e) => e.type === 'request-end' && e.status === 'cancelled' && e.firstTokenAt === null).length;
    expect(beforeFirst).toBeGreaterThan(0);
    console.log(
      `[disconnects] 80 clients ${JSON.stringify(modes)}; hung up after tokens ${hungUpAfterTokens} (while pending-return somewhere ${hungUpPending}); server ends ${JSON.stringify(t)} (cancelled before the first token ${beforeFirst}); leftovers ${JSON.stringify(leftovers(s.service))}`,
    );
    await expectStillServing(s.url);
  });
});
