// Issue 34 finding 0 as a scenario: entries SIGTERMed one after another while streams run, over sub-servers that must outlive them all.
import { expect } from 'vitest';
import { startNatsServer, type NatsServerProcess } from '../support/rigs/natsServerProcess.ts';
import { spawnSubServer, type SubServerProcess } from '../support/rigs/subServerProcess.ts';
import { until } from './helpers.ts';
import { spawnEntry, stream, watchHeartbeats, type StreamEnd, type StreamResult } from './entryProcess.ts';

export interface SigtermRound {
  ends: Record<StreamEnd, number>;
  /** Chunks the streams had received when the entry got SIGTERM. */
  chunksAtSignal: number;
  /** Signal to exit of the entry, and to the replicas holding nothing of it. */
  exitMs: number;
  freedMs: number;
}

/**
 * `rounds` times: a fresh entry (`tokenrouter serve`: the bundled small model local, or with
 * `smallRemote` on a sub-server process of its own, handing off to large engine to engine; `large`
 * on two sub-server processes), 10 streams (5 on `large`, 5 through R-Stitch), SIGTERM to the entry
 * once they all stream. After every round every sub-server must be up and hold nothing of that
 * entry; after the last, a new entry serves `large`.
 */
export async function sigtermRounds(rounds: number, log: (line: string) => void = console.log, opts: { smallRemote?: boolean } = {}): Promise<SigtermRound[]> {
  let nats: NatsServerProcess | undefined;
  const subs: SubServerProcess[] = [];
  let beats: Awaited<ReturnType<typeof watchHeartbeats>> | undefined;
  try {
    nats = await startNatsServer();
    const replicas = [['large', 'large-a', '8'], ['large', 'large-b', '8'], ...(opts.smallRemote ? [['small', 'small-a', '2']] : [])];
    for (const [model, name, ms] of replicas)
      subs.push(
        await spawnSubServer({
          args: ['--model', model, '--nats', nats.url, '--replica', name, '--heartbeat-ms', '100', '--sim', '--sim-latency', `${ms},0,0`],
          timeoutMs: 90_000,
        }),
      );
    beats = await watchHeartbeats(nats.url, opts.smallRemote ? '*' : 'large');
    // a short grace, so some streams finish and the rest end with the drain's SSE error event
    const remote = { nats: nats.url, heartbeatTimeoutMs: 2500, connectTimeoutMs: 20_000 };
    const config = {
      models: [
        { name: 'small', ...(opts.smallRemote ? { remote } : {}) },
        { name: 'large', remote },
      ],
      limits: { shutdownGraceMs: 1000 },
    };
    const up = () => subs.every((s) => s.child.exitCode === null && s.child.signalCode === null);
    /** Requests the replicas hold, by heartbeats sent after `since`. */
    const heldSince = (since: number) => {
      const fresh = [...beats!.latest.values()].filter((a) => a.at > since);
      return fresh.length < subs.length ? Infinity : fresh.reduce((n, a) => n + a.requests, 0);
    };
    const results: SigtermRound[] = [];
    for (let round = 0; round < rounds; round++) {
      const entry = await spawnEntry(config);
      let chunks = 0;
      const started = new Set<number>();
      const streams: Promise<StreamResult>[] = [];
      for (let k = 0; k < 10; k++)
        streams.push(stream(entry.url, k % 2 === 0 ? 'large' : 'r-stitch', `${round * 10 + k + 12}*${k + 3}`, 240, () => (chunks++, started.add(k))));
      // as the runs did: SIGTERM while every stream is under way
      await until(() => started.size === 10, 30_000, 'all 10 streams under way');
      const chunksAtSignal = chunks;
      const t0 = performance.now();
      entry.child.kill('SIGTERM');
      const ended = await Promise.all(streams);
      const code = await entry.exited;
      const exitMs = performance.now() - t0;
      expect(code, entry.output()).toBe(0);
      const exitedAt = performance.now();
      await until(() => !up() || heldSince(exitedAt) === 0, 20_000, `replicas free of round ${round}'s requests`);
      expect(up(), `a sub-server died in round ${round + 1}:\n${subs.map((s) => s.output()).join('\n')}`).toBe(true);
      const freedMs = performance.now() - t0;
      const ends: Record<StreamEnd, number> = { done: 0, 'sse-error': 0, cut: 0, refused: 0 };
      for (const e of ended) ends[e.end]++;
      results.push({ ends, chunksAtSignal, exitMs, freedMs });
      log(
        `round ${round + 1}/${rounds}: ${JSON.stringify(ends)}, ${chunksAtSignal} chunks before SIGTERM, entry exited after ${Math.round(exitMs)} ms, replicas free after ${Math.round(freedMs)} ms`,
      );
      // every stream ended (none was left hanging) and none was refused: each was streaming at the signal
      expect(ends.refused).toBe(0);
    }
    // the sub-servers outlived every entry, logged no failure, and the next entry serves on them at once
    for (const s of subs) expect(s.output()).not.toMatch(/engine failed|exiting/);
    const next = await spawnEntry(config);
    try {
      const ok = await Promise.all([0, 1, 2, 3].map((k) => stream(next.url, k % 2 ? 'large' : 'r-stitch', `${k + 40}*7`, 30)));
      expect(ok.map((r) => r.end)).toEqual(['done', 'done', 'done', 'done']);
    } finally {
      next.child.kill('SIGTERM');
      await next.exited;
    }
    expect(up()).toBe(true);
    return results;
  } finally {
    await beats?.close();
    for (const s of subs) await s.kill();
    await nats?.stop();
  }
}
