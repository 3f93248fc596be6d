// A TCP relay that holds every chunk for a fixed delay in each direction: added network latency where the kernel has no netem.
import net from 'node:net';
import { parseArgs } from 'node:util';
import { DelayLine } from './delayLine.ts';

export interface DelayRelayOptions {
  listenHost: string;
  /** 0 = any free port. */
  listenPort?: number;
  targetHost: string;
  targetPort: number;
  /** One-way delay added to every chunk, in each direction. */
  delayMs: number;
}

export interface DelayRelay {
  host: string;
  port: number;
  /** Measured hold per chunk (its mean is the delay; single chunks vary by the wake-up jitter), for reporting what was really added. */
  stats(): { chunks: number; meanHoldMs: number; minHoldMs: number; maxHoldMs: number };
  close(): Promise<void>;
}

/**
 * Chunks leave in arrival order, each direction's and the connection's end after its chunks: one
 * DelayLine holds them all (one delay, so first in is first due).
 */
export async function startDelayRelay(opts: DelayRelayOptions): Promise<DelayRelay> {
  const sockets = new Set<net.Socket>();
  const line = new DelayLine(opts.delayMs);
  const pipe = (from: net.Socket, to: net.Socket) => {
    from.on('data', (data) => line.push(() => to.destroyed || to.write(data)));
    from.on('end', () => line.push(() => to.end()));
  };
  const server = net.createServer((client) => {
    client.setNoDelay(true);
    const upstream = net.connect(opts.targetPort, opts.targetHost);
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    const kill = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', kill);
    upstream.on('error', kill);
    client.on('close', kill);
    upstream.on('close', kill);
    pipe(client, upstream);
    pipe(upstream, client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.listenPort ?? 0, opts.listenHost, () => {
      const addr = server.address() as net.AddressInfo;
      resolve({
        host: opts.listenHost,
        port: addr.port,
        stats: () => {
          const { items, ...hold } = line.stats();
          return { chunks: items, ...hold };
        },
        close: async () => {
          for (const s of sockets) s.destroy();
          await new Promise<void>((r) => server.close(() => r()));
          await line.close();
        },
      });
    });
  });
}

/** `tsx test/support/rigs/delayRelay.ts --listen HOST:PORT --target HOST:PORT --delay-ms 1`: the relay as its own process. */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { listen: { type: 'string' }, target: { type: 'string' }, 'delay-ms': { type: 'string' } } });
  const split = (s: string | undefined, what: string): [string, number] => {
    const m = /^(.+):(\d+)$/.exec(s ?? '');
    if (!m) throw new Error(`--${what} must be HOST:PORT`);
    return [m[1], Number(m[2])];
  };
  const [lh, lp] = split(values.listen, 'listen');
  const [th, tp] = split(values.target, 'target');
  const relay = await startDelayRelay({ listenHost: lh, listenPort: lp, targetHost: th, targetPort: tp, delayMs: Number(values['delay-ms'] ?? 1) });
  console.log(`relay listening on ${relay.host}:${relay.port}`);
  const stop = () => {
    const s = relay.stats();
    console.log(`relay stats: ${s.chunks} chunks, mean hold ${s.meanHoldMs.toFixed(3)} ms, min ${s.minHoldMs.toFixed(3)} ms, max ${s.maxHoldMs.toFixed(3)} ms`);
    void relay.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
