// apiKeysFile: keys kept apart from the config, as sha256 hashes only, read relative to the config file and served like the config's own.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadServerConfig } from '../../runtime/config/serverConfig.ts';
import { startTestServer } from './testService.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-keyfile-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const hex = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

function write(name: string, json: unknown): string {
  const f = path.join(dir, name);
  fs.mkdirSync(path.dirname(f), { recursive: true });
  fs.writeFileSync(f, JSON.stringify(json));
  return f;
}

describe('apiKeysFile', () => {
  it("adds the file's hashed keys to the config's, and they open /v1 on a real server", async () => {
    write('secrets/keys.json', [{ name: 'ci', sha256: hex('sk-ci-only-hashed'), requestsPerMinute: 100 }]);
    const cfg = loadServerConfig(write('conf/config.json', { apiKeys: [{ name: 'dev', key: 'sk-dev-plain' }], apiKeysFile: '../secrets/keys.json' }));
    expect(cfg.apiKeys.map((k) => k.name)).toEqual(['dev', 'ci']);
    const t = await startTestServer({ config: { apiKeys: cfg.apiKeys } });
    try {
      const get = (key: string) => fetch(`${t.url}/v1/models`, { headers: { Authorization: `Bearer ${key}` } });
      expect((await get('sk-ci-only-hashed')).status).toBe(200);
      expect((await get('sk-dev-plain')).status).toBe(200);
      expect((await get(hex('sk-ci-only-hashed'))).status).toBe(401); // the hash itself is not a key
    } finally {
      await t.close();
    }
  });

  it('a missing file, a bad entry, or a name in both is one error naming apiKeysFile or apiKeys', () => {
    expect(() => loadServerConfig(write('a.json', { apiKeysFile: 'nowhere.json' }))).toThrow(/apiKeysFile .*nowhere\.json/);
    write('bad-keys.json', [{ name: 'x', sha256: 'short' }]);
    expect(() => loadServerConfig(write('b.json', { apiKeysFile: 'bad-keys.json' }))).toThrow(
      /apiKeysFile .*bad-keys\.json: 0\.sha256: sha256 is the key's SHA-256/,
    );
    write('dup-keys.json', [{ name: 'dev', sha256: hex('other') }]);
    expect(() => loadServerConfig(write('c.json', { apiKeys: [{ name: 'dev', key: 'sk-1' }], apiKeysFile: 'dup-keys.json' }))).toThrow(
      /apiKeys with apiKeysFile: "dev" is listed twice/,
    );
  });
});
