// The config schema is the one place settings get their defaults: an absent block equals the block written out empty.
import { describe, expect, it } from 'vitest';
import { parseServerConfig, serverConfigSchema } from '../../runtime/config/serverConfig.ts';

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
