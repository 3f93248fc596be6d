// `tokenrouter subserver`: runs one model's engine and runner as their own process, serving an entry over NATS.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_SUBJECT_PREFIX, openNats, watchLink } from '../transport/nats/natsConnection.ts';
import { RemoteEngineServer } from '../transport/nats/remoteEngineServer.ts';
import { parseSimLatency, simModel } from '../runner/simModel.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { loadModelFolder } from '../runner/modelFolder.ts';
import { OnnxRunner } from '../runner/onnxRunner.ts';
import { charTokenizer } from '../runner/charTokenizer.ts';
import type { Decoder } from '../runner/detokenizer.ts';
import { TextTokenizer } from '../runner/tokenizer.ts';
import { planMemory } from '../http/memoryPlan.ts';
import { numFlag, parseFlags } from '../util/cliFlags.ts';

export const SUBSERVER_USAGE = `tokenrouter subserver --model NAME --nats nats://HOST:PORT [options]
  --model NAME          model name the entry's config uses (and the folder name under --models-dir)
  --nats URL[,URL]      NATS server(s)
  --token T             NATS token (or NATS_TOKEN in the environment)
  --creds FILE          NATS credentials file instead of a token
  --replica ID          replica name (default <hostname>-<pid>); run several processes for several replicas
  --models-dir DIR      where model folders live (default examples/models); --path DIR names the folder itself
  --threads N           onnxruntime intra-op threads (default 1)
  --memory-mib N        weights + KV budget of this process (default 1024)
  --prefix P            subject prefix shared with the entry (default ${DEFAULT_SUBJECT_PREFIX})
  --heartbeat-ms N      heartbeat period (default 250; keep it well under the entry's heartbeatTimeoutMs)
  --drain-timeout-ms N  on SIGTERM, serve the requests held here for up to N ms while entries place new
                        ones elsewhere, then exit (default 30000; 0 = leave at once; a second signal too)
  --sim                 simulated model instead of ONNX (tests, benches): --sim-latency BASE,PER_ROW,PER_TOKEN ms
                        (default 5,0,0), --sim-vocab chars|hash (default chars), --sim-eos-rate R (default 0)`;

function positiveInt(name: string, v: string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new TokenRouterError('invalid_request', `--${name} must be a positive integer, got "${v}"`, name);
  return n;
}

export async function subserverCommand(args: string[]): Promise<number> {
  const { values } = parseFlags({
    args,
    options: {
      model: { type: 'string' },
      nats: { type: 'string' },
      token: { type: 'string' },
      creds: { type: 'string' },
      replica: { type: 'string' },
      'models-dir': { type: 'string' },
      path: { type: 'string' },
      threads: { type: 'string' },
      'memory-mib': { type: 'string' },
      prefix: { type: 'string' },
      'heartbeat-ms': { type: 'string' },
      'drain-timeout-ms': { type: 'string' },
      sim: { type: 'boolean' },
      'sim-latency': { type: 'string' },
      'sim-vocab': { type: 'string' },
      'sim-eos-rate': { type: 'string' },
    },
  });
  const model = values.model;
  if (!model) throw new TokenRouterError('invalid_request', `--model is required\n\nusage: ${SUBSERVER_USAGE}`, 'model');
  if (!values.nats) throw new TokenRouterError('invalid_request', `--nats is required\n\nusage: ${SUBSERVER_USAGE}`, 'nats');
  const replica = values.replica ?? `${os.hostname()}-${process.pid}`;
  const log = (line: string) => console.error(`[subserver ${model}/${replica}] ${line}`);
  const budgetBytes = positiveInt('memory-mib', values['memory-mib'], 1024) * 2 ** 20;
  const drainMs = values['drain-timeout-ms'] === '0' ? 0 : positiveInt('drain-timeout-ms', values['drain-timeout-ms'], 30_000);

  let runner: ModelRunner;
  let decoder: Decoder;
  let weightBytes = 0;
  if (values.sim) {
    const vocab = values['sim-vocab'] ?? 'chars';
    if (vocab !== 'chars' && vocab !== 'hash') throw new TokenRouterError('invalid_request', `--sim-vocab must be chars or hash, got "${vocab}"`, 'sim-vocab');
    let latency: ReturnType<typeof parseSimLatency>;
    try {
      latency = parseSimLatency(values['sim-latency'] ?? '5,0,0');
    } catch (e) {
      throw new TokenRouterError('invalid_request', (e as Error).message, 'sim-latency');
    }
    runner = simModel({ name: model, latency, vocab, eosRate: numFlag('sim-eos-rate', values['sim-eos-rate'], 0, 1, 0) });
    decoder = charTokenizer();
    log(`simulated model (${vocab} vocabulary, ${latency.baseMs} ms + ${latency.perRowMs} ms/row + ${latency.perTokenMs} ms/token)`);
  } else {
    const dir = path.resolve(values.path ?? path.join(values['models-dir'] ?? 'examples/models', model));
    const folder = loadModelFolder(dir);
    weightBytes = fs.statSync(folder.onnxPath).size;
    decoder = TextTokenizer.fromFolder(folder);
    log(`loading ${dir} …`);
    // the engine and its runner in this one process: a step never leaves it (onnxruntime runs it off the event loop)
    runner = await OnnxRunner.load(folder.dir, { intraOpNumThreads: positiveInt('threads', values.threads, 1), name: model });
  }
  const [plan] = planMemory(budgetBytes, [
    { name: model, weightBytes, kvBytesPerToken: runner.info.kvBytesPerToken, maxContext: runner.info.maxContext, maxBatch: 1 },
  ]);

  let nc: Awaited<ReturnType<typeof openNats>>;
  try {
    nc = await openNats({
      servers: values.nats,
      token: values.token ?? process.env.NATS_TOKEN,
      credsFile: values.creds,
      name: `tokenrouter-subserver:${model}:${replica}`,
    });
  } catch (e) {
    await runner.close?.();
    throw new TokenRouterError('unavailable', (e as Error).message, 'nats');
  }
  watchLink(nc, { down: () => log('NATS disconnect'), up: () => log('NATS reconnect') });
  const server = await RemoteEngineServer.start(nc, runner, {
    model,
    replica,
    subjectPrefix: values.prefix,
    heartbeatMs: positiveInt('heartbeat-ms', values['heartbeat-ms'], 250),
    kvCapacityTokens: plan.kvTokens,
    decoder,
    // An entry's message the engine cannot handle fails that entry's requests here and is logged by the server; the
    // process stays: exiting would take the model from every later entry (a late message from an entry's shutdown must not).
    log,
  });
  // tests and scripts wait for this line on stdout
  console.log(`subserver ready: model ${model} replica ${replica} on ${values.nats} (subject ${server.subject}, KV ${plan.kvTokens} tokens)`);

  let stopping = false;
  const stop = async () => {
    // a second signal while draining: leave now
    const now = stopping;
    stopping = true;
    if (now || drainMs === 0) {
      log('shutting down');
      await server.close();
    } else {
      const left = await server.drain(drainMs);
      log(left ? `drain timed out with ${left} requests held; shutting down` : 'drained; shutting down');
    }
    await nc.close().catch(() => {});
    await runner.close?.();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  return new Promise<number>(() => {});
}
