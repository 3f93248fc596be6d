// A TCP relay that holds every chunk for a fixed delay in each direction: added network latency where the kernel has no netem.
import net from 'node:net';
import { parseArgs } from 'node:util';

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
  /** Measured hold per chunk (timers fire late, never early), for reporting what was really added. */
  stats(): { chunks: number; meanHoldMs: number; maxHoldMs: number };
  close(): Promise<void>;
}

/**
 * Chunks leave in arrival order: they are queued with their due time and one timer drains the
 * queue head, so a late timer delays the chunks behind it rather than reordering them.
 */
export function startDelayRelay(opts: DelayRelayOptions): Promise<DelayRelay> {
  const sockets = new Set<net.Socket>();
  let chunks = 0;
  let holdSum = 0;
  let holdMax = 0;
  const pipe = (from: net.Socket, to: net.Socket) => {
    const queue: { due: number; at: number; data: Buffer }[] = [];
    let timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
    // Node timers count whole milliseconds from a loop time cached at the start of the iteration, so
    // they fire up to 1 ms early or late; re-arming a 1 ms timer for an early fire would double the
    // delay. The sub-millisecond rest is waited out with setImmediate, which keeps serving I/O.
    const arm = (ms: number) => {
      timer = ms >= 1 ? setTimeout(drain, ms) : setImmediate(drain);
    };
    const drain = () => {
      timer = null;
      const now = performance.now();
      while (queue.length && queue[0].due <= now) {
        const c = queue.shift()!;
        const hold = now - c.at;
        chunks++;
        holdSum += hold;
        if (hold > holdMax) holdMax = hold;
        if (!to.destroyed) to.write(c.data);
      }
      if (queue.length) arm(queue[0].due - now);
    };
    from.on('data', (data) => {
      const now = performance.now();
      queue.push({ due: now + opts.delayMs, at: now, data });
      if (!timer) arm(opts.delayMs);
    });
    from.on('end', () => {
      const finish = () => (queue.length ? setTimeout(finish, opts.delayMs) : to.end());
      finish();
    });
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
        stats: () => ({ chunks, meanHoldMs: chunks ? holdSum / chunks : 0, maxHoldMs: holdMax }),
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      });
    });
  });
}

/** `tsx runtime/distributed/delayRelay.ts --listen HOST:PORT --target HOST:PORT --delay-ms 1`: the relay as its own process. */
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
    console.log(`relay stats: ${s.chunks} chunks, mean hold ${s.meanHoldMs.toFixed(3)} ms, max ${s.maxHoldMs.toFixed(3)} ms`);
    void relay.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
