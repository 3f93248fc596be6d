// Registry persistence, full size: 20 kill -9 rounds at random points of a tight deploy loop, checked after each.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, rng, startRig } from '../reliability/harness.ts';
import { checkRegistry, crashRound } from '../reliability/registryCrash.ts';
import { NAMES } from '../reliability/registrySpecs.ts';

const ROUNDS = 20;

describe(`registry persistence: ${ROUNDS} kills mid-deploy`, () => {
  it('every version whole or absent, nothing announced lost, the active versions build and are served', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-crash20-'));
    const r = rng(2026);
    let announced = 0;
    let versions = 0;
    const landed: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const res = await crashRound(dataDir, 5000 + round, 5 + Math.floor(r() * 150));
      expect(res.signal).toBe('SIGKILL');
      announced += res.announced.length;
      const check = checkRegistry(dataDir, res.announced);
      expect(check.problems, `round ${round}`).toEqual([]);
      versions = check.versions;
      landed[check.killedAt] = (landed[check.killedAt] ?? 0) + 1;
    }
    const rig = await startRig({ dataDir });
    let served = 0;
    try {
      for (const name of NAMES) {
        const active = rig.service.registry.active(name);
        if (!active) continue;
        const res = await call(`${rig.url}/v1/completions`, 'POST', { model: name, prompt: '1*2=', max_tokens: 3 });
        expect(res.status, res.text).toBe(200);
        expect((res.json.tokenrouter as { version: number }).version).toBe(active.version);
        served++;
      }
    } finally {
      await rig.close();
    }
    expect(served).toBeGreaterThan(0);
    console.log(
      `[registry-crash-20] ${ROUNDS} kills (SIGKILL), ${announced} changes announced before them, ${versions} versions stored at the end, kills landed ${JSON.stringify(landed)}, 0 problems; ${served} active algorithms served afterwards`,
    );
  });
});
