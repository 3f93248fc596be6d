// An engine host: the engine loop (engineLoop.ts) with the calls that control it: schedule, sync grants, tracing, peers, failures.
import type { ModelRunner } from '../runner/modelRunner.ts';
import { EngineLoop } from './engineLoop.ts';
import type { PeerLink, RequestCounters, ToEngine } from '../../shared/protocol/engineProtocol.ts';

/** The entry's calls an engine host takes as they are: made directly in this process, sent as these messages across a port. */
export type HostCall = Extract<ToEngine, { type: 'release' | 'threshold' | 'grant' | 'down' | 'trace' | 'peer-lost' }>;

/** What the entry, an operator or a failure does to an engine, each as one of its loop's inputs. */
export class EngineHost extends EngineLoop {
  get held(): number {
    return this.engine.locals.size;
  }

  /** The peer died: handoffs there go by the entry until it is back. Its link is dropped, not closed: what it sent before it died may still be queued on it. */
  peerLost(name: string): void {
    this.peers.delete(name);
    // the requests decoding here forget what the restarted engine had seen, so it re-prefills them
    this.input(() => {
      for (const local of this.engine.locals.values()) {
        const m = local.spec.models.indexOf(name) + 1;
        if (m > 0 && local.owned) local.known[m] = 0;
      }
    });
  }

  addPeer(name: string, link: PeerLink): void {
    this.peers.get(name)?.close();
    this.peers.set(name, link);
  }

  /** The one mapping from the entry's calls to the engine's inputs, whichever side of a port it runs on. */
  call(m: HostCall): RequestCounters | null {
    if (m.type === 'release') return this.release(m.id, m.serial, m.status);
    if (m.type === 'trace') this.trace = m.on ? this.sink : undefined;
    else if (m.type === 'peer-lost') this.peerLost(m.model);
    else if (m.type === 'down') this.input(() => this.tell(m.down ? 'DOWN' : 'UP'));
    else if (m.type === 'threshold') {
      this.input(() => {
        this.engine.threshold = m.threshold;
        this.actor.send({ type: 'SCHEDULE', facts: this.facts(), maxWaitMs: m.maxWaitMs });
      });
    } else {
      // a sync round lets this engine launch one step
      this.input(() => {
        this.baseline?.allow();
        this.look();
      });
    }
    return null;
  }

  /** The runner died with every cache: what this engine held fails, and it refuses work until a runner is put in place. */
  runnerLost(error: Error): number {
    return this.input(() => {
      this.tell('DOWN');
      return this.engine.failAll(error);
    });
  }

  replaceRunner(runner: ModelRunner): void {
    this.input(() => {
      runner.useClock?.(this.clock);
      this.engine.runner = runner;
      this.tell('UP');
    });
  }

  dispose(): void {
    for (const p of this.peers.values()) p.close();
    this.peers.clear();
    this.actor.stop();
    // the runner outlives this engine: a `begin` that replaces it starts an empty prefix cache, so the old one's KV must go
    this.engine.queues.prefix?.clear();
  }
}
