// `tokenrouter serve` as a real child process on the tiny fixture family's small model, for tests that signal it or measure its memory.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'runtime/cli/tokenrouter.mjs');

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** The process's resident set now, from /proc (the server is this very process: the bin loads TypeScript in-process). */
  rssBytes(): number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL if still running, and the data folder removed. */
  kill(): Promise<void>;
}

/** Starts `tokenrouter serve` with the fixture family's small model (weights 0.8 MiB, ready in ~1 s) and `config` over the test defaults. */
export async function spawnServe(config: Record<string, unknown> = {}): Promise<ServeProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tr-serve-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      port: 0,
      dataDir: path.join(dir, 'data'),
      modelsDir: TINY_FAMILY_DIR,
      models: [{ name: 'small' }],
      memory: { budgetMiB: 512 },
      ...config,
    }),
  );
  const child = spawn(process.execPath, [BIN, 'serve', '--config', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const t0 = Date.now();
  while (!/OpenAI API (http:\/\/\S+)\/v1/.test(out)) {
    // a refused config prints `error: …`; the process may linger (its model worker keeps it alive), so it is killed
    if (child.exitCode !== null || /^error: /m.test(out) || Date.now() - t0 > 60_000) {
      await kill();
      throw new Error(`tokenrouter serve did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = /OpenAI API (http:\/\/\S+)\/v1/.exec(out)![1];
  return {
    child,
    url,
    output: () => out,
    rssBytes: () => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024,
    exited,
    kill,
  };
}

/** A counter or gauge from /metrics, summed over its labels; 0 when absent. */
export async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
