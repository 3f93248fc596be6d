// A TCP relay that holds every chunk for a fixed delay in each direction: added network latency where the kernel has no netem.
import net from 'node:net';
import { parseArgs } from 'node:util';
import { createPreciseAlarm } from './preciseAlarm.ts';

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

/** A chunk this close to its release time leaves now: the alarm's and this thread's clocks agree to microseconds. */
const DUE_SLACK_MS = 0.02;

/**
 * Chunks leave in arrival order: each direction queues them with their due time, and one precise
 * alarm (a worker thread, see preciseAlarm.ts) wakes the relay at the earliest one, so a late
 * wake-up delays the chunks behind it rather than reordering them.
 *
 * The alarm's message still has to wake this thread, which on a busy machine takes a few hundred
 * microseconds. The relay measures that lateness (an average over recent wake-ups) and sets its
 * alarm that much early, so the mean hold is the delay asked for rather than delay + wake-up.
 */
export async function startDelayRelay(opts: DelayRelayOptions): Promise<DelayRelay> {
  const sockets = new Set<net.Socket>();
  let chunks = 0;
  let holdSum = 0;
  let holdMax = 0;
  let holdMin = Infinity;
  /** Mean lateness of recent wake-ups (ms), the alarm's lead; at most half the delay. */
  let lead = 0;
  const maxLead = opts.delayMs / 2;
  const queues = new Set<{ items: { due: number; at: number; data: Buffer }[]; to: net.Socket; closed: boolean }>();
  const drain = (target: number) => {
    const now = performance.now();
    lead = Math.min(maxLead, Math.max(0, lead + (now - target - lead) / 16));
    let next = Infinity;
    for (const q of queues) {
      while (q.items.length && q.items[0].due - lead <= now + DUE_SLACK_MS) {
        const c = q.items.shift()!;
        const hold = now - c.at;
        chunks++;
        holdSum += hold;
        if (hold > holdMax) holdMax = hold;
        if (hold < holdMin) holdMin = hold;
        if (!q.to.destroyed) q.to.write(c.data);
      }
      if (q.items.length) next = Math.min(next, q.items[0].due);
      else if (q.closed) queues.delete(q);
    }
    if (next < Infinity) arm(next);
  };
  let target = 0;
  const arm = (due: number) => {
    target = due - lead;
    alarm.arm(target);
  };
  const alarm = createPreciseAlarm(() => drain(target));
  const pipe = (from: net.Socket, to: net.Socket) => {
    const q = { items: [] as { due: number; at: number; data: Buffer }[], to, closed: false };
    queues.add(q);
    from.on('data', (data) => {
      const now = performance.now();
      q.items.push({ due: now + opts.delayMs, at: now, data });
      // FIFO with one delay: a pending alarm is never later than this chunk's due time
      if (!alarm.armed) arm(now + opts.delayMs);
    });
    from.on('end', () => {
      const finish = () => (q.items.length ? setTimeout(finish, opts.delayMs) : (queues.delete(q), to.end()));
      finish();
    });
    from.on('close', () => {
      q.closed = true;
      if (!q.items.length) queues.delete(q);
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
        stats: () => ({ chunks, meanHoldMs: chunks ? holdSum / chunks : 0, minHoldMs: chunks ? holdMin : 0, maxHoldMs: holdMax }),
        close: async () => {
          for (const s of sockets) s.destroy();
          await new Promise<void>((r) => server.close(() => r()));
          await alarm.close();
        },
      });
    });
  });
}

/** `tsx runtime/bench/rigs/delayRelay.ts --listen HOST:PORT --target HOST:PORT --delay-ms 1`: the relay as its own process. */
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
