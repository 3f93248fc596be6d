// A constrained request whose every other token is written by a remote engine over NATS: the constraint travels in the wire spec, the grammar state is rebuilt there from the tokens.
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { openNats } from '../../runtime/transport/nats/natsConnection.ts';
import { RemoteEngine } from '../../runtime/transport/nats/remoteEngine.ts';
import { RemoteEngineServer } from '../../runtime/transport/nats/remoteEngineServer.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import type { Algorithm } from '../../shared/algorithm.ts';
import { HAVE_NATS, until } from '../transport/helpers.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';
import { alternate } from './alternate.ts';

const REF = { key: 'alternate', source: { kind: 'module' as const, module: fileURLToPath(new URL('./alternate.ts', import.meta.url)), export: 'alternate' } };
const SCHEMA = {
  type: 'object',
  properties: {
    word: { type: 'string', minLength: 4, maxLength: 16 },
    n: { type: 'integer', minimum: 100, maximum: 99999 },
    xs: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 999 }, minItems: 2, maxItems: 5 },
  },
  required: ['word', 'n', 'xs'],
  additionalProperties: false,
};

describe.skipIf(!HAVE_NATS)('grammar across a remote engine over NATS', () => {
  let nats: NatsServerProcess;
  let server: RemoteEngineServer;
  let closeNc: () => Promise<void>;
  let small: OnnxRunner;
  let large: OnnxRunner;
  let tok: TextTokenizer;

  beforeAll(async () => {
    const dir = realShapeFolder('qwen3-tiny').dir;
    tok = TextTokenizer.fromFolder(loadModelFolder(dir));
    nats = await startNatsServer();
    [small, large] = await Promise.all([OnnxRunner.load(dir, { name: 'small' }), OnnxRunner.load(dir, { name: 'large' })]);
    const nc = await openNats({ servers: nats.url, name: 'grammar-replica' });
    closeNc = () => nc.close();
    server = await RemoteEngineServer.start(nc, large, {
      model: 'large',
      replica: 'large-a',
      decoder: tok,
      kvCapacityTokens: 10_000,
      heartbeatMs: 50,
      log: () => {},
    });
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    await closeNc?.();
    await small?.close();
    await large?.close();
    await nats?.stop();
  });

  it('every output validates although each token boundary crosses NATS', async () => {
    const engine = await RemoteEngine.connect({ model: 'large', nats: nats.url, log: () => {} });
    await until(() => engine.replicaViews().length === 1, 5000, 'the replica');
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-immediate',
      tokenizer: tok,
      models: [
        { name: 'small', runner: small },
        { name: 'large', thread: engine },
      ],
    });
    const ajv = new Ajv({ strict: false });
    try {
      const prompt = tok.encode('JSON:', false);
      const results = await Promise.all(
        [1, 2, 3].map(
          (seed) =>
            cluster.submit({
              prompt,
              maxTokens: 120,
              algorithm: alternate() as Algorithm<unknown>,
              algorithmRef: REF,
              constraint: { grammar: { kind: 'json_schema', schema: JSON.stringify(SCHEMA) } },
              sampling: { temperature: 1, topP: 1, topK: 0, seed },
            }).done,
        ),
      );
      for (const r of results) {
        const out = r.tokens.length > 0 ? tok.decode(r.tokens) : '';
        expect(r.status, `${out} ${r.error?.message ?? ''}`).toBe('done');
        expect(r.finishReason).toBe('stop');
        expect(ajv.validate(SCHEMA, JSON.parse(out)), `${out} ${ajv.errorsText()}`).toBe(true);
        expect(r.tokensByModel.large).toBeGreaterThan(3);
      }
    } finally {
      await engine.close();
    }
  }, 180_000);
});
