// Starts a private nats-server on a random port (tests and benches) and stops it; never touches a system instance.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { RemoteRunnerError } from '../../../runtime/transport/nats/natsConnection.ts';

export interface NatsServerProcess {
  url: string;
  port: number;
  host: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

const CANDIDATES = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'];

/** The nats-server binary, or null when it is not installed (`apt-get install nats-server`). */
export function natsServerBinary(): string | null {
  if (process.env.NATS_SERVER_BIN) return process.env.NATS_SERVER_BIN;
  return CANDIDATES.find((p) => fs.existsSync(p)) ?? null;
}

/** Runs `nats-server -a HOST -p PORT` (default -1: the server picks a free port) and resolves with its URL once it listens. */
export function startNatsServer(opts: { host?: string; port?: number; token?: string; timeoutMs?: number } = {}): Promise<NatsServerProcess> {
  const bin = natsServerBinary();
  if (!bin) return Promise.reject(new RemoteRunnerError('no_replicas', 'nats-server is not installed (apt-get install nats-server)'));
  const host = opts.host ?? '127.0.0.1';
  const args = ['-a', host, '-p', String(opts.port ?? -1), '--no_advertise', '-m', '0'];
  if (opts.token) args.push('--auth', opts.token);
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise<NatsServerProcess>((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new RemoteRunnerError('no_replicas', `nats-server did not start within ${opts.timeoutMs ?? 10_000} ms:\n${log}`));
    }, opts.timeoutMs ?? 10_000);
    const onData = (d: Buffer) => {
      log += d.toString();
      const m = /Listening for client connections on ([^\s:]+|\[[^\]]+\]):(\d+)/.exec(log);
      if (!m) return;
      clearTimeout(timer);
      child.stderr!.off('data', onData);
      child.stderr!.resume();
      const port = Number(m[2]);
      resolve({
        url: `nats://${host}:${port}`,
        port,
        host,
        child,
        stop: () => stopChild(child),
      });
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new RemoteRunnerError('no_replicas', `nats-server exited (code ${code}):\n${log}`));
    });
  });
}

/** SIGTERM, then SIGKILL after a grace period; resolves when the process is gone. */
export function stopChild(child: ChildProcess, graceMs = 2000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
