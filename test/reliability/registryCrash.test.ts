// The algorithm registry survives kill -9 during deploys: each version whole or absent, the active one valid and served.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, rng, startRig } from './harness.ts';
import { checkRegistry, crashRound } from './registryCrash.ts';
import { NAMES } from './registrySpecs.ts';

describe('registry persistence under kill -9', () => {
  it('after each kill mid-deploy every version is whole or absent and the active one resolves; the server then serves it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-crash-'));
    const r = rng(99);
    let announced = 0;
    for (let round = 0; round < 1; round++) {
      const res = await crashRound(dataDir, 1000 + round, 20 + Math.floor(r() * 60));
      expect(res.signal).toBe('SIGKILL');
      announced += res.announced.length;
      const check = checkRegistry(dataDir, res.announced);
      expect(check.problems).toEqual([]);
      expect(check.versions).toBeGreaterThan(0);
      console.log(`[registry-crash] kill landed: ${check.killedAt}`);
    }
    // The serving process starts on the survivor store and serves each active version.
    const rig = await startRig({ dataDir });
    try {
      for (const name of NAMES) {
        const active = rig.service.registry.active(name);
        if (!active) continue;
        expect(rig.service.algorithms.resolve(name).version).toBe(active.version);
        const res = await call(`${rig.url}/v1/completions`, 'POST', { model: name, prompt: '1*2=', max_tokens: 3 });
        expect(res.status, res.text).toBe(200);
        expect((res.json.tokenrouter as { version: number }).version).toBe(active.version);
      }
    } finally {
      await rig.close();
    }
    console.log(`[registry-crash] 1 kill, ${announced} changes announced before them, 0 problems`);
  });
});
