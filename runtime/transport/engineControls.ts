// What steers an engine beside the requests it serves: the operator's and the serving policy's calls, peers joining, its runner's loss.
import type { MessagePort } from 'node:worker_threads';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { Engine } from '../core/engine.ts';
import type { HostCall } from '../core/engineHost.ts';
import type { LaneStats, RequestCounters, WireArrival } from '../../shared/protocol/engineProtocol.ts';

/** A peer's handoff sent just before that peer died (or was replaced): as if model `name` had seen nothing, so its next visit re-prefills. */
export function forgetModel(w: WireArrival, name: string): WireArrival {
  const m = w.spec.models.indexOf(name) + 1;
  if (m === 0 || w.known[m] === 0) return w;
  const known = w.known.slice();
  known[m] = 0;
  return { ...w, known };
}

/** The engine handle's calls that are not a request's (engineHandle.ts has those), whatever the transport. */
export abstract class EngineControls {
  threshold = 1;
  protected takenDown = false;
  /** MessagePorts can travel to it (a worker thread): it gets direct channels to the peers that take them too. */
  abstract readonly acceptsPorts: boolean;
  /** The lane as a sync round reads it (as the engine last reported it). */
  abstract readonly readyCount: number;
  abstract readonly executing: boolean;

  constructor(readonly name: string) {}

  /** The engine itself, when it runs in this process (benches and tests read its figures). */
  get core(): Engine | undefined {
    return undefined;
  }

  /** A peer engine thread was (re)started: its new port (only engines that take ports get one). */
  addPeer(_name: string, _port: MessagePort): void {}

  /** Makes the host call: directly (its answer), or as a message on the link (null: the engine answers later, in its events). */
  protected abstract send(m: HostCall): RequestCounters | null;

  /** The delayed-batching threshold and max-wait deadline from now on. */
  setSchedule(threshold: number, maxWaitMs: number): void {
    this.threshold = threshold;
    this.send({ type: 'threshold', threshold, maxWaitMs });
  }

  /** Trace events on (something at the entry reads them) or off. */
  setTracing(on: boolean): void {
    this.send({ type: 'trace', on });
  }

  /** The serving policy's round lets this engine launch one step (sync modes). */
  grant(): void {
    this.send({ type: 'grant' });
  }

  setDown(down: boolean): void {
    this.takenDown = down;
    this.send({ type: 'down', down });
  }

  /** The engine of model `name` restarted empty: requests decoding here re-send it their whole sequence. */
  peerLost(name: string): void {
    this.send({ type: 'peer-lost', model: name });
  }

  /** The runner died: in this process the engine fails what it held and says how many; across a port it died with it (null). */
  runnerLost(_error: Error): number | null {
    return null;
  }

  /** Puts a fresh runner in place of a dead one (an engine in this process only). */
  replaceRunner(_runner: ModelRunner): void {
    throw new TokenRouterError(
      'invalid_request',
      `model ${this.name} runs its engine beside its runner, elsewhere: replace the engine (replaceThread)`,
      'model',
    );
  }

  abstract onFailure(listener: (error: Error) => void): void;
  abstract laneStats(): LaneStats;
  abstract close(): Promise<void>;
}
