// `npm start` and `npx tokenrouter serve` as a supervisor runs them: a SIGTERM to the npm process drains the server it started, which exits, leaving no process behind.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-npm-start-'));
const started: ChildProcess[] = [];
afterAll(() => {
  // A failed test must not leave a server behind: the group was made for this.
  for (const c of started) {
    try {
      if (c.pid) process.kill(-c.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Every live process's parent, read from /proc (the field after the command's closing parenthesis). */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z') out.set(Number(d), Number(ppid));
    } catch {
      /* exited while we read */
    }
  }
  return out;
}

/** The process and all its descendants. */
function tree(root: number): number[] {
  const p = parents();
  const found = [root];
  for (let i = 0; i < found.length; i++) for (const [pid, ppid] of p) if (ppid === found[i]) found.push(pid);
  return found;
}

const alive = (pids: number[]) => {
  const p = parents();
  return pids.filter((pid) => p.has(pid));
};

async function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts the command with a free port and a temporary dataDir, waits until /health answers 200, and gives its URL. */
async function start(argv: string[], name: string) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ port: 0, dataDir: 'data', modelsDir: TINY_FAMILY_DIR, models: [{ name: 'small' }, { name: 'large' }] }));
  const child = spawn(argv[0], [...argv.slice(1), '--config', config], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const url = await until('the server to print its URL', () => /OpenAI API (http:\/\/\S+)\/v1/.exec(stdout)?.[1], 60_000).catch((e: Error) => {
    throw new Error(`${e.message}\n${stdout}\n${stderr}`);
  });
  await until('/health 200', async () => ((await fetch(`${url}/health`).catch(() => null))?.status === 200 ? true : undefined), 10_000);
  return { child, url, dir, exited, out: () => stdout, err: () => stderr };
}

/** SIGTERM to the npm process while a streamed answer runs: the answer finishes, the server says it drained, and every process it started exits. */
async function checkDrainOnSigterm(argv: string[], name: string): Promise<void> {
  const s = await start(argv, name);
  expect(s.out(), 'the log prints dataDir').toContain(`dataDir ${path.join(s.dir, 'data')}`);
  const res = await fetch(`${s.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'large', prompt: 'Q: 347*26=\nA: ', max_tokens: 256, ignore_eos: true, temperature: 0, stream: true }),
  });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const first = await reader.read();
  expect(first.done).toBe(false);
  const pids = tree(s.child.pid!);
  // npm, and the node server below it (directly, or through npx's shell).
  expect(pids.length, `process tree ${pids.join(' ')}`).toBeGreaterThanOrEqual(2);
  process.kill(s.child.pid!, 'SIGTERM');
  let body = new TextDecoder().decode(first.value);
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    body += new TextDecoder().decode(r.value);
  }
  expect(body, 'the running answer is finished, not cut').toContain('"finish_reason":"length"');
  expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
  await until('every started process to exit', () => (alive(pids).length === 0 ? true : undefined), 30_000).catch((e: Error) => {
    throw new Error(`${e.message}: still running ${alive(pids).join(' ')}\n${s.out()}\n${s.err()}`);
  });
  expect(s.out()).toMatch(/drained: 1 running requests finished/);
  expect(s.out()).toMatch(/shutting down/);
  await expect(fetch(`${s.url}/health`)).rejects.toThrow();
}

describe('SIGTERM to the npm process', () => {
  // --ignore-scripts leaves out only prestart (the web app's build), so the start script runs as npm start runs it.
  it('npm start: the server drains and exits, no process left', () => checkDrainOnSigterm(['npm', 'start', '--ignore-scripts', '--'], 'npm-start'), 90_000);

  it('npx tokenrouter serve: the server drains and exits, no process left', () => checkDrainOnSigterm(['npx', 'tokenrouter', 'serve'], 'npx'), 90_000);
});
