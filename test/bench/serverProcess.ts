// A `tokenrouter serve` child process from any checkout (this one or an older commit's), with its memory read off /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface ServerProcess {
  url: string;
  pid: number;
  /** Resident set now and its peak so far (MiB), from /proc/<pid>/status. */
  memory(): { rssMiB: number; hwmMiB: number };
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function statusKiB(pid: number, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

/**
 * Starts `runtime/cli/main.ts serve` of `checkout` with `config` (written to a temp file) and waits
 * until /healthz answers. The checkout needs its node_modules (a symlink to this one's will do).
 */
export async function startServerProcess(checkout: string, config: Record<string, unknown>, opts: { timeoutMs?: number } = {}): Promise<ServerProcess> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-bench-server-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({ dataDir: path.join(dir, 'data'), ...config, host: '127.0.0.1', port }));
  const tsx = path.join(checkout, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', `file://${tsx}`, path.join(checkout, 'runtime', 'cli', 'main.ts'), 'serve', '--config', file],
    { cwd: checkout, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (log = (log + d).slice(-4000)));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (log = (log + d).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server from ${checkout} exited with ${child.exitCode} before it answered:\n${log}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server from ${checkout} did not answer /healthz in time:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const pid = child.pid!;
  return {
    url,
    pid,
    memory: () => ({ rssMiB: statusKiB(pid, 'VmRSS') / 1024, hwmMiB: statusKiB(pid, 'VmHWM') / 1024 }),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Samples a process's RSS every `everyMs` while `work` runs; returns its result and the peak (MiB). */
export async function withRssPeak<T>(server: ServerProcess, work: () => Promise<T>, everyMs = 25): Promise<{ value: T; peakMiB: number; beforeMiB: number }> {
  const beforeMiB = server.memory().rssMiB;
  let peakMiB = beforeMiB;
  const timer = setInterval(() => {
    try {
      peakMiB = Math.max(peakMiB, server.memory().rssMiB);
    } catch {
      // the process ended
    }
  }, everyMs);
  try {
    const value = await work();
    peakMiB = Math.max(peakMiB, server.memory().rssMiB);
    return { value, peakMiB, beforeMiB };
  } finally {
    clearInterval(timer);
  }
}
