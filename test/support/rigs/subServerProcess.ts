// Spawns `tokenrouter subserver` as a child process (tests, benches), optionally inside a network namespace.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopChild } from './natsServerProcess.ts';
import { RemoteRunnerError } from '../../../runtime/transport/nats/natsConnection.ts';

export interface SubServerProcess {
  child: ChildProcess;
  pid: number;
  /** What the process printed (stdout and stderr), for failure messages. */
  output(): string;
  /** SIGKILL: the process vanishes without a goodbye, as a crashed host would. */
  kill(): Promise<void>;
  /** SIGTERM: a clean shutdown. */
  stop(): Promise<void>;
}

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../runtime/cli/tokenrouter.mjs');

export interface SpawnSubServerOptions {
  /** Arguments after `tokenrouter subserver`. */
  args: string[];
  /** Wraps the command, e.g. NetnsPair.wrap to run it inside a namespace. */
  wrap?: (cmd: string, args: readonly string[]) => [string, string[]];
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** Starts the sub-server and resolves once it printed "subserver ready". */
export function spawnSubServer(opts: SpawnSubServerOptions): Promise<SubServerProcess> {
  const [cmd, args] = (opts.wrap ?? ((c, a) => [c, [...a]]))(process.execPath, [CLI, 'subserver', ...opts.args]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env, cwd: path.resolve(path.dirname(CLI), '../..') });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const handle: SubServerProcess = {
    child,
    pid: child.pid ?? -1,
    output: () => out,
    kill: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
    stop: () => stopChild(child, 3000),
  };
  return new Promise<SubServerProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new RemoteRunnerError('no_replicas', `sub-server did not get ready within ${opts.timeoutMs ?? 30_000} ms:\n${out}`));
    }, opts.timeoutMs ?? 30_000);
    const onData = () => {
      if (!out.includes('subserver ready')) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
      resolve(handle);
    };
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new RemoteRunnerError('no_replicas', `sub-server exited (code ${code}) before it was ready:\n${out}`));
    };
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
}
