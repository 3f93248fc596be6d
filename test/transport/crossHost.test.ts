// Cross-host serving on one machine: sub-server in its own network namespace, 1 ms added each way by a delaying relay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDelayRelay, type DelayRelay } from '../support/rigs/delayRelay.ts';
import { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { createNetnsPair, netnsUnavailableReason, type NetnsPair } from '../support/rigs/netnsPair.ts';
import { simModel, type SimLatency } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { HAVE_NATS } from './helpers.ts';
import { complete, serve, type Served } from './serving.ts';

const NETNS_UNAVAILABLE = HAVE_NATS ? netnsUnavailableReason() : 'no nats-server';
if (NETNS_UNAVAILABLE) console.warn(`[crossHost.test] network namespaces unavailable (${NETNS_UNAVAILABLE}): only the relay-on-loopback variant runs`);

const SMALL: SimLatency = { baseMs: 1, perRowMs: 0, perTokenMs: 0 };
const LARGE: SimLatency = { baseMs: 6, perRowMs: 0, perTokenMs: 0 };
const WORKLOAD = ['r-stitch', 'r2r', 'large'].flatMap((model, m) => [0, 1, 2, 3].map((k) => ({ model, prompt: `${23 * (k + 2) + m}+${k}`, seed: 10 * m + k })));

/**
 * Simulated models here (the ONNX flow is covered in remoteFlow.test.ts): the point is the network
 * path. Entry and nats-server stay in this namespace; the sub-server reaches NATS only through the
 * relay, which holds every chunk 1 ms in each direction.
 */
function crossHostSuite(variant: 'netns' | 'loopback') {
  let nats: NatsServerProcess;
  let pair: NetnsPair | null = null;
  let relay: DelayRelay;
  let sub: SubServerProcess;
  let local: Served;
  let remote: Served;

  beforeAll(async () => {
    nats = await startNatsServer();
    if (variant === 'netns') pair = createNetnsPair();
    relay = await startDelayRelay({ listenHost: pair?.hostIp ?? '127.0.0.1', targetHost: '127.0.0.1', targetPort: nats.port, delayMs: 1 });
    const relayUrl = `nats://${relay.host}:${relay.port}`;
    sub = await spawnSubServer({
      args: ['--model', 'large', '--nats', relayUrl, '--replica', `large-${variant}`, '--heartbeat-ms', '100', '--sim', '--sim-latency', `${LARGE.baseMs},0,0`],
      wrap: pair?.wrap,
      timeoutMs: 90_000,
    });
    const sim = (names: string[]) => new Map<string, ModelRunner>(names.map((n) => [n, simModel({ name: n, latency: n === 'small' ? SMALL : LARGE })]));
    local = await serve([{ name: 'small' }, { name: 'large' }], sim(['small', 'large']));
    remote = await serve([{ name: 'small' }, { name: 'large', remote: { nats: nats.url, heartbeatTimeoutMs: 1500 } }], sim(['small']));
  }, 120_000);

  afterAll(async () => {
    await remote?.close();
    await local?.close();
    await sub?.kill();
    await relay?.close();
    pair?.destroy();
    await nats?.stop();
  });

  it('serves through the delayed path with output identical to the in-process run', async () => {
    expect(remote.service.threads.get('large')).toBeInstanceOf(RemoteEngine);
    const [want, got] = await Promise.all([local, remote].map((s) => Promise.all(WORKLOAD.map((w) => complete(s.server.url, w.model, w.prompt, w.seed, 48)))));
    for (let i = 0; i < WORKLOAD.length; i++) expect(got[i].status, got[i].error).toBe(200);
    expect(got).toEqual(want);
    // every byte to and from the sub-server crossed the relay, held 1 ms on average (the relay
    // sets its alarm early by its measured wake-up lateness, never by more than half the delay)
    const s = relay.stats();
    expect(s.chunks).toBeGreaterThan(100);
    expect(s.meanHoldMs).toBeGreaterThanOrEqual(0.9);
    expect(s.minHoldMs).toBeGreaterThanOrEqual(0.45);
  });

  if (variant === 'netns') {
    it('the sub-server really is in another namespace: it cannot reach nats-server on this loopback', async () => {
      const sneaky = spawnSubServer({ args: ['--model', 'large', '--nats', nats.url, '--sim'], wrap: pair!.wrap, timeoutMs: 90_000 });
      await expect(sneaky).rejects.toThrow(/cannot connect to NATS/);
    });
  }
}

describe.skipIf(!HAVE_NATS || NETNS_UNAVAILABLE !== null)('cross-host: sub-server in another network namespace, 1 ms each way', () => crossHostSuite('netns'));
describe.skipIf(!HAVE_NATS)('cross-host fallback: relay on loopback, 1 ms each way', () => crossHostSuite('loopback'));
