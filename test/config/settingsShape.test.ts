// Settings have one shape from the config file to the engine: defaults filled once by the schema, fields arriving under their config names.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { modelSchema, parseServerConfig, serverConfigSchema, type ServerConfig } from '../../runtime/config/serverConfig.ts';
import { EngineProxy } from '../../runtime/transport/engineHandle.ts';
import { InprocEngine } from '../../runtime/transport/inprocEngine.ts';
import type { EngineSettings } from '../../shared/protocol/engineProtocol.ts';
import { TokenRouterService } from '../../runtime/http/tokenRouterService.ts';
import { startTestServer, type TestServer } from '../http/testService.ts';
import { TINY_FAMILY_DIR, tinyFamilyPresent } from '../support/tinyFamily.ts';

const HAVE_ONNX = tinyFamilyPresent(['small']);
const SHARED = ['mode', 'retainState', 'maxWaitMs', 'prefixCache'] as const;
const pick = <T extends object, K extends keyof T>(o: T, keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));

let t: TestServer | undefined;
let service: TokenRouterService | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await t?.close();
  await service?.close();
  t = undefined;
  service = undefined;
});

/** The settings each engine began with, by model, as its handle was given them. */
function begun(spy: { mock: { calls: unknown[][] } }): Map<string, EngineSettings> {
  return new Map(spy.mock.calls.map(([s]) => [(s as EngineSettings).models[(s as EngineSettings).index], s as EngineSettings]));
}

function expectArrived(settings: EngineSettings | undefined, config: ServerConfig, model: string): void {
  expect(settings).toBeDefined();
  expect(pick(settings!, SHARED)).toEqual(pick(config.scheduling, SHARED));
  expect(settings!.maxBatch).toBe(config.models.find((m) => m.name === model)!.maxBatch);
}

describe('a setting in the config file arrives unchanged at the engine', () => {
  it('in-process placement: scheduling fields, maxBatch and threshold', async () => {
    const begin = vi.spyOn(InprocEngine.prototype, 'begin');
    t = await startTestServer({
      config: {
        models: [{ name: 'small', maxBatch: 7 }, { name: 'medium' }],
        scheduling: { mode: 'async-immediate', retainState: false, maxWaitMs: 13, prefixCache: false, thresholds: { small: 2 } },
      },
    });
    const got = begun(begin);
    expectArrived(got.get('small'), t.service.config, 'small');
    expect(got.get('small')).toMatchObject({ mode: 'async-immediate', retainState: false, maxWaitMs: 13, prefixCache: false, maxBatch: 7, threshold: 2 });
    // and the engine built from them runs by them
    expect(t.service.cluster.inProcessEngine('small')).toMatchObject({ maxBatch: 7, threshold: 2 });
  });

  it("in-process placement: a setting left out reaches the engine as the schema's default", async () => {
    const begin = vi.spyOn(InprocEngine.prototype, 'begin');
    t = await startTestServer({ config: { models: [{ name: 'small' }] } });
    const settings = begun(begin).get('small');
    // read from the schema, not written here: change a default there and this follows it to the engine
    expect(pick(settings!, SHARED)).toEqual(pick(serverConfigSchema.shape.scheduling.parse(undefined), SHARED));
    expect(settings!.maxBatch).toBe(modelSchema.shape.maxBatch.parse(undefined));
  });

  it.runIf(HAVE_ONNX)(
    'thread placement: the settings the engine thread is sent',
    async () => {
      const begin = vi.spyOn(EngineProxy.prototype, 'begin');
      const config = parseServerConfig({
        port: 0,
        dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tr-shape-')),
        modelsDir: TINY_FAMILY_DIR,
        models: [{ name: 'small', maxBatch: 5 }],
        defaultAlgorithm: 'small',
        scheduling: { placement: 'thread', retainState: false, maxWaitMs: 11, prefixCache: false },
      });
      service = await TokenRouterService.start(config);
      expectArrived(begun(begin).get('small'), config, 'small');
      expect(service.threads.get('small')).toMatchObject({ maxBatch: 5 });
    },
    60_000,
  );
});

describe('config defaults live in the schema', () => {
  it('an absent block and an empty one parse to the same settings, field defaults included', () => {
    const absent = parseServerConfig({});
    const empty = parseServerConfig({ memory: {}, scheduling: {}, limits: {}, models: [{ name: 'small' }, { name: 'medium' }, { name: 'large' }] });
    expect(absent).toEqual(empty);
    expect(absent.scheduling).toMatchObject({ mode: 'async-delayed', retainState: true, maxWaitMs: 20, prefixCache: true, placement: 'auto', thresholds: {} });
    expect(absent.limits.maxConcurrency).toBe(16);
    expect(absent.models.map((m) => m.maxBatch)).toEqual([32, 32, 32]);
  });

  it('a block given in part keeps the other fields at their schema defaults', () => {
    const cfg = parseServerConfig({ scheduling: { maxWaitMs: 7 }, limits: { maxQueue: 3 } });
    expect(cfg.scheduling).toMatchObject({ maxWaitMs: 7, mode: 'async-delayed', prefixCache: true });
    expect(cfg.limits).toMatchObject({ maxQueue: 3, maxConcurrency: 16, maxTokens: 256 });
  });

  it('an absent block is still checked by its schema (prefault parses, it does not bypass)', () => {
    // the whole default object passes through the field schemas: each default appears once, on its field
    const shape = serverConfigSchema.shape.scheduling.parse(undefined);
    expect(shape.maxWaitMs).toBe(20);
  });
});

describe('example configs', () => {
  it('every config in examples/configs still parses', async () => {
    const fs = await import('node:fs');
    const path = await import('node:path');
    const dir = path.resolve(import.meta.dirname, '../../examples/configs');
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(() => parseServerConfig(JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')), f), f).not.toThrow();
  });
});
