// `tokenrouter serve` with dev: false on the bundled models: the generated admin token is printed, and only it opens the admin API.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('the served admin token', () => {
  it('is generated on first start, printed, saved privately, and is what the admin API accepts', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-cli-'));
    const cfg = path.join(dir, 'config.json');
    fs.writeFileSync(
      cfg,
      JSON.stringify({
        port: 0,
        dev: false,
        dataDir: path.join(dir, 'data'),
        modelsDir: TINY_FAMILY_DIR,
        models: [{ name: 'small' }, { name: 'large' }],
      }),
    );
    const child = spawn(process.execPath, [path.join(ROOT, 'runtime/cli/tokenrouter.mjs'), 'serve', '--config', cfg], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const t0 = Date.now();
      while (!/admin token: (\S+)/.test(out) || !/OpenAI API (http:\/\/\S+)\/v1/.test(out)) {
        if (child.exitCode !== null || Date.now() - t0 > 120_000) throw new Error(`server did not start: ${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const token = /admin token: (\S+)/.exec(out)![1];
      const url = /OpenAI API (http:\/\/\S+)\/v1/.exec(out)![1];
      expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(fs.readFileSync(path.join(dir, 'data', 'admin-token'), 'utf8').trim()).toBe(token);
      expect(fs.statSync(path.join(dir, 'data', 'admin-token')).mode & 0o077).toBe(0);
      expect((await fetch(`${url}/admin/status`)).status).toBe(401);
      expect((await fetch(`${url}/admin/status`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
      console.log(`[cli-token] printed a ${token.length}-character token at start; 401 without it, 200 with it`);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
