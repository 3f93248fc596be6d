// `tokenrouter serve` as a user runs it: --api-key (repeatable), TOKENROUTER_API_KEY and config hashes all open /v1; an open /v1 off loopback warns in one line.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'runtime/cli/tokenrouter.mjs');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-keys-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});

function config(name: string, extra: Record<string, unknown>): string {
  const file = path.join(tmp, `${name}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({
      port: 0,
      host: '0.0.0.0',
      dataDir: path.join(tmp, name),
      modelsDir: TINY_FAMILY_DIR,
      models: [{ name: 'small' }],
      ...extra,
    }),
  );
  return file;
}

/** Starts serve and resolves once the banner names the port; the one small model loads in a few seconds. */
function serve(args: string[], env: Record<string, string> = {}): Promise<{ port: number; stdout: string; stderr: string; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', ...args], {
      cwd: tmp,
      env: { ...process.env, TOKENROUTER_API_KEY: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${stdout}\n${stderr}`)), 90_000);
    const check = () => {
      const m = /OpenAI API http:\/\/\S+:(\d+)\/v1.*\n[\s\S]*health .*\n/.exec(stdout);
      // the warning, when there is one, follows the banner: give stderr a moment to arrive
      if (m) setTimeout(() => (clearTimeout(timer), resolve({ port: Number(m[1]), stdout, stderr, child })), 300);
    };
    child.stdout.on('data', (d: Buffer) => ((stdout += d.toString()), check()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${stdout}\n${stderr}`)));
  });
}

describe('tokenrouter serve with API keys', () => {
  it('with no key on a non-loopback host: one clear warning line at start, and /v1 is open', async () => {
    const s = await serve(['--config', config('open', {})]);
    const lines = s.stderr.trim().split('\n');
    expect(lines, s.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^warning: http:\/\/0\.0\.0\.0:\d+\/v1 needs no API key: anyone .* --api-key KEY, TOKENROUTER_API_KEY or "apiKeys"/);
    expect((await fetch(`http://127.0.0.1:${s.port}/v1/models`)).status).toBe(200);
    s.child.kill('SIGKILL');
  });

  it('--api-key twice, TOKENROUTER_API_KEY with two and a config sha256: each opens /v1, nothing else does, no warning', async () => {
    const hashed = 'sk-from-config-file';
    const file = config('keys', { apiKeys: [{ name: 'file', sha256: crypto.createHash('sha256').update(hashed).digest('hex') }] });
    const s = await serve(['--config', file, '--api-key', 'sk-flag-one', '--api-key', 'sk-flag-two'], { TOKENROUTER_API_KEY: 'sk-env-one, sk-env-two' });
    expect(s.stderr).toBe('');
    expect(s.stdout).toMatch(/API keys +file, flag-1, flag-2, env-1, env-2 /);
    const get = (key?: string) => fetch(`http://127.0.0.1:${s.port}/v1/models`, { headers: key ? { Authorization: `Bearer ${key}` } : {} });
    for (const key of [hashed, 'sk-flag-one', 'sk-flag-two', 'sk-env-one', 'sk-env-two']) expect((await get(key)).status, key).toBe(200);
    for (const key of [undefined, 'sk-flag-three', 'sk-env-one,sk-env-two']) expect((await get(key)).status, String(key)).toBe(401);
    expect(s.stdout).not.toContain('sk-');
    s.child.kill('SIGKILL');
  });

  it('a bad key is one line naming where it came from, before any model loads', async () => {
    const run = (args: string[], env: Record<string, string>) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd: tmp, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (out += d.toString()));
        child.on('close', (code) => resolve({ code, out }));
      });
    const flag = await run(['--api-key', 'has space', '--port', '0'], { TOKENROUTER_API_KEY: '' });
    expect(flag.code).not.toBe(0);
    expect(flag.out.trim()).toMatch(/^error: --api-key: a key is 1 to 512 characters without spaces$/);
    const dup = await run(['--api-key', 'sk-same', '--port', '0'], { TOKENROUTER_API_KEY: 'sk-same' });
    expect(dup.out.trim()).toMatch(/^error: TOKENROUTER_API_KEY: the same key is listed twice$/);
  });
});
