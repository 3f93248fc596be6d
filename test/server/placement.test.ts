// Where the service puts each model's engine: "auto" (the default) is thread for ONNX model folders and in-process for runners handed to it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { ThreadEngine } from '../../runtime/engine/threadEngine.ts';
import { TokenRouterService } from '../../runtime/serve/tokenRouterService.ts';
import { MODELS_DIR, modelDir } from '../runner/helpers.ts';
import { startTestServer, type TestServer } from './testService.ts';

const HAVE_ONNX = fs.existsSync(path.join(modelDir('small'), 'onnx', 'model.onnx'));

let service: TokenRouterService | undefined;
let t: TestServer | undefined;
afterEach(async () => {
  await service?.close();
  await t?.close();
  service = undefined;
  t = undefined;
});

const config = (scheduling: Record<string, unknown>) => parseServerConfig({ port: 0, dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-placement-')), modelsDir: MODELS_DIR, models: [{ name: 'small' }], defaultAlgorithm: 'small', scheduling });

describe('engine placement', () => {
  it('defaults to auto', () => {
    expect(config({}).scheduling.placement).toBe('auto');
  });

  it.runIf(HAVE_ONNX)('auto puts an ONNX model folder\'s engine in its own thread, beside the model', async () => {
    service = await TokenRouterService.start(config({}));
    expect(service.threads.get('small')).toBeInstanceOf(ThreadEngine);
    expect(service.runners.size).toBe(0);
    expect(service.cluster.lanes).toHaveLength(0);
  }, 60_000);

  it.runIf(HAVE_ONNX)('in-process keeps the engine on the entry\'s thread, the model alone in a worker', async () => {
    service = await TokenRouterService.start(config({ placement: 'in-process' }));
    expect(service.threads.size).toBe(0);
    expect(service.cluster.lane('small')).toBeDefined();
  }, 60_000);

  it('auto keeps injected runners (simulated, virtual clock) in-process', async () => {
    t = await startTestServer();
    expect(t.service.config.scheduling.placement).toBe('auto');
    expect(t.service.threads.size).toBe(0);
    expect(t.service.cluster.lane('small')).toBeDefined();
  });
});
