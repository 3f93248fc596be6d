// Issue 34 finding 0, the sub-server's side: an entry's late, stray or unknown messages are ignored and counted, never fatal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import { openNats } from '../../runtime/transport/nats/natsConnection.ts';
import { decodeFrame, NatsLink } from '../../runtime/transport/nats/natsLink.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { simModel } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { HAVE_NATS, sleep, until } from './helpers.ts';
import { complete, serve } from './serving.ts';
import { watchHeartbeats } from './entryProcess.ts';

describe.skipIf(!HAVE_NATS)("an entry's late and unknown messages at a sub-server process", () => {
  let nats: NatsServerProcess;
  let sub: SubServerProcess;
  let nc: NatsConnection;
  const sim = () => new Map<string, ModelRunner>([['small', simModel({ name: 'small', latency: { baseMs: 1, perRowMs: 0, perTokenMs: 0 } })]]);
  const entryModels = () => [{ name: 'small' }, { name: 'large', remote: { nats: nats.url, heartbeatTimeoutMs: 2500, connectTimeoutMs: 20_000 } }];

  beforeAll(async () => {
    nats = await startNatsServer();
    sub = await spawnSubServer({
      args: ['--model', 'large', '--nats', nats.url, '--replica', 'large-a', '--heartbeat-ms', '100', '--sim', '--sim-latency', '2,0,0'],
      timeoutMs: 90_000,
    });
    nc = await openNats({ servers: nats.url, name: 'test-fake-entry' });
  }, 120_000);

  afterAll(async () => {
    await nc?.close();
    await sub?.kill();
    await nats?.stop();
  });

  it('messages before begin, after close, of unknown kinds or malformed: the process stays up, counts them, and serves the next entry', async () => {
    const beats = await watchHeartbeats(nats.url, 'large');
    try {
      await until(() => beats.latest.has('large-a'), 5000, 'a heartbeat');
      const subject = beats.latest.get('large-a')!.subject;
      // a real entry's begin, captured on the way, so the fake entry below can begin as validly
      let begin: unknown;
      const spy = nc.subscribe(`${subject}.in`, {
        callback: (_e, msg) => {
          for (const m of (decodeFrame(msg.data)?.messages ?? []) as { type?: string }[]) if (m?.type === 'begin') begin ??= m;
        },
      });
      await nc.flush();
      const first = await serve(entryModels(), sim());
      expect((await complete(first.server.url, 'large', '12*3', 1, 20)).status).toBe(200);
      await first.close();
      spy.unsubscribe();
      expect(begin).toBeDefined();

      // a fake entry on a link of its own, saying what no entry should: the old sub-server exited on the first of these
      const inbox = `tokenrouter.large.entries.fake`;
      const link = new NatsLink({ session: 'fake-entry', reply: inbox, publish: (b) => nc.publish(`${subject}.in`, b) });
      nc.subscribe(inbox, { callback: (_e, msg) => void ((f) => f && link.receive(f))(decodeFrame(msg.data)) });
      await nc.flush();
      link.postMessage({ type: 'release', id: 'req-1', serial: 1, status: 'cancelled' }); // before begin
      link.postMessage({ type: 'frobnicate', at: 1 }); // a kind this build does not know
      link.postMessage({ type: 'crash', message: 'an entry cannot crash a replica' }); // a worker-thread message
      link.postMessage(begin);
      link.postMessage({ type: 'arrive', arrival: 'not an arrival' }); // malformed: the engine refuses it
      link.postMessage({ type: 'close' });
      for (let i = 0; i < 3; i++) link.postMessage({ type: 'release', id: `req-${i}`, serial: i + 1, status: 'cancelled' }); // after close, as a SIGTERMed entry's cancellations came
      const sentAt = performance.now();
      const exited = () => sub.child.exitCode !== null || sub.child.signalCode !== null;
      await until(
        () => exited() || ((beats.latest.get('large-a')?.ignoredMessages ?? 0) >= 7 && beats.latest.get('large-a')!.at > sentAt),
        10_000,
        'the replica counting 7 messages',
      );
      link.close();
      await sleep(300);
      expect(exited(), sub.output()).toBe(false);
      expect(beats.latest.get('large-a')!.ignoredMessages).toBeGreaterThanOrEqual(7);
      expect(sub.child.signalCode).toBeNull();
      expect(sub.output()).toMatch(/ignored .*in all/);
      expect(sub.output()).toMatch(/the engine could not handle a message: malformed engine message/);
      expect(sub.output()).not.toMatch(/exiting/);

      // and the next entry is served as if nothing happened
      const next = await serve(entryModels(), sim());
      try {
        const r = await complete(next.server.url, 'large', '12*3', 1, 20);
        expect(r.status, r.error).toBe(200);
      } finally {
        await next.close();
      }
      expect(sub.child.exitCode).toBeNull();
    } finally {
      await beats.close();
    }
  }, 120_000);
});
