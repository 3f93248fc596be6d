// Full request flow with the large model's sub-server in another process through a real nats-server: parity, failure, recovery.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { simModel, type SimLatency } from '../../runtime/runner/simModel.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import { tinyFamilyPresent, tinyModelDir } from '../support/tinyFamily.ts';
import type { ModelRunner } from '../../runtime/runner/modelRunner.ts';
import { HAVE_NATS, until } from './helpers.ts';
import { complete, serve, type Served } from './serving.ts';

/**
 * The tiny fixture family's ONNX models are not exported on every machine (training writes them last); without
 * them the sub-server runs `--sim`, the same simulated model the in-process side builds with
 * simModel(), so token-for-token equality is still a real check of the transport.
 */
const ONNX = tinyFamilyPresent(['small', 'large']);
/** A model entry: with ONNX, the fixture family's folder named outright. */
const at = (name: string, extra: Record<string, unknown> = {}) => ({ name, ...extra, ...(ONNX ? { path: tinyModelDir(name) } : {}) });
const SMALL: SimLatency = { baseMs: 1, perRowMs: 0, perTokenMs: 0 };
const LARGE: SimLatency = { baseMs: 8, perRowMs: 0, perTokenMs: 0 };

/** Algorithms whose router heads exist: all of them for the simulated models; with ONNX, those the small model ships heads for. */
function algorithms(): string[] {
  if (!ONNX) return ['r-stitch', 'citer', 'r2r', 'co-llm', 'large', 'small'];
  const routers = path.join(tinyModelDir('small'), 'routers', 'routers.json');
  const heads = fs.existsSync(routers) ? JSON.stringify(JSON.parse(fs.readFileSync(routers, 'utf8'))) : '';
  return ['r-stitch', ...['citer', 'r2r'].filter((h) => heads.includes(`"${h}"`)), 'large', 'small'];
}

const WORKLOAD = algorithms().flatMap((model, m) => [0, 1, 2].map((k) => ({ model, prompt: `${17 * (k + 1) + m}*${k + 3}`, seed: 100 * m + k })));

describe.skipIf(!HAVE_NATS)(`remote large model over NATS (${ONNX ? 'tiny fixture ONNX models' : 'simulated models: ONNX exports absent'})`, () => {
  let nats: NatsServerProcess;
  let sub: SubServerProcess;
  let local: Served;
  let remote: Served;
  const subArgs = () => [
    '--model',
    'large',
    '--nats',
    nats.url,
    '--replica',
    'large-a',
    '--heartbeat-ms',
    '100',
    ...(ONNX ? ['--path', tinyModelDir('large')] : ['--sim', '--sim-latency', `${LARGE.baseMs},0,0`]),
  ];
  const largeRemote = () => at('large', { remote: { nats: nats.url, heartbeatTimeoutMs: 800, connectTimeoutMs: 20_000 } });

  beforeAll(async () => {
    nats = await startNatsServer();
    sub = await spawnSubServer({ args: subArgs(), timeoutMs: 90_000 });
    const sim = (names: string[]) =>
      ONNX ? undefined : new Map<string, ModelRunner>(names.map((n) => [n, simModel({ name: n, latency: n === 'small' ? SMALL : LARGE })]));
    local = await serve([at('small'), at('large')], sim(['small', 'large']));
    remote = await serve([at('small'), largeRemote()], sim(['small']));
  }, 120_000);

  afterAll(async () => {
    await remote?.close();
    await local?.close();
    await sub?.kill();
    await nats?.stop();
  });

  it('serves every algorithm with output identical to the in-process run for the same seeds', async () => {
    expect(remote.service.threads.get('large')).toBeInstanceOf(RemoteEngine);
    const [want, got] = await Promise.all([local, remote].map((s) => Promise.all(WORKLOAD.map((w) => complete(s.server.url, w.model, w.prompt, w.seed, 40)))));
    for (let i = 0; i < WORKLOAD.length; i++) {
      expect(got[i].status, `${WORKLOAD[i].model}: ${got[i].error}`).toBe(200);
      expect(got[i]).toEqual(want[i]);
    }
    // the remote model really wrote tokens: alone, and (simulated: always; ONNX: when the small model hesitates) inside routed requests
    expect(got.filter((_, i) => WORKLOAD[i].model === 'large').every((c) => (c.byModel?.large ?? 0) > 0)).toBe(true);
    const routedLarge = got.filter((_, i) => !['large', 'small'].includes(WORKLOAD[i].model)).reduce((a, c) => a + (c.byModel?.large ?? 0), 0);
    if (!ONNX) expect(routedLarge).toBeGreaterThan(0);
  });

  it('killing the sub-server process fails the requests that hold state on it, and nothing else', async () => {
    const engine = remote.service.threads.get('large') as RemoteEngine;
    // Simulated models write until max_tokens; the ONNX ones stop at their answer's end, so more of them keep the remote busy.
    const long = (ONNX ? [...WORKLOAD, ...WORKLOAD, ...WORKLOAD] : WORKLOAD).map((w, i) => ({ ...w, seed: w.seed + 1000 * i, maxTokens: 200 }));
    const expectedSmall = await Promise.all(
      long.filter((w) => w.model === 'small').map((w) => complete(local.server.url, w.model, w.prompt, w.seed, w.maxTokens)),
    );
    const inflight = long.map((w) => complete(remote.server.url, w.model, w.prompt, w.seed, w.maxTokens));
    await until(() => engine.replicaViews()[0]?.requests >= (ONNX ? 2 : 6), 60_000, 'requests holding state on the remote model');
    const killedAt = performance.now();
    await sub.kill();
    const failedAt: number[] = [];
    const results = await Promise.all(inflight.map((p) => p.then((r) => (r.status !== 200 && failedAt.push(performance.now()), r))));
    for (let i = 0; i < long.length; i++) {
      const w = long[i];
      if (w.model === 'small') expect(results[i].status, results[i].error).toBe(200);
      else if (results[i].status !== 200 || !ONNX) {
        // simulated requests all still hold state on the large model when it dies; ONNX ones may have finished before
        expect(results[i].status, `${w.model} should fail`).toBe(503);
        expect(results[i].error).toMatch(/large/);
      }
    }
    expect(failedAt.length).toBeGreaterThan(0);
    // requests on the local model alone did not notice: same output as in-process
    expect(results.filter((_, i) => long[i].model === 'small')).toEqual(expectedSmall);
    // detected within the heartbeat bound (800 ms) plus the liveness check period and scheduling slack
    expect(Math.min(...failedAt) - killedAt).toBeLessThan(800 + 1200);
    // the lane is down now; new requests for it are refused at once rather than hanging
    expect((await complete(remote.server.url, 'large', '1+1', 1, 5)).status).toBe(503);
  });

  it('a restarted sub-server joins by itself: the model is back without restarting anything at the entry', async () => {
    sub = await spawnSubServer({ args: subArgs(), timeoutMs: 90_000 });
    const engine = remote.service.threads.get('large') as RemoteEngine;
    await until(() => remote.service.cluster.engine('large')?.down === false, 30_000, 'model back up');
    expect(remote.service.threads.get('large')).toBe(engine);
    const w = WORKLOAD[0];
    const [a, b] = await Promise.all([local, remote].map((s) => complete(s.server.url, w.model, w.prompt, w.seed, 40)));
    expect(b).toEqual(a);
    expect(remote.service.restarts.get('large') ?? 0).toBe(0);
  });
});
