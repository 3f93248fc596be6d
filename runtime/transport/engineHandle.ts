// The engine as the entry drives it: one handle, one implementation per transport (this process, a thread, NATS).
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { TokenRouterError } from '../errors.ts';
import type { ModelInfo, ModelRunner } from '../runner/modelRunner.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { Engine } from '../core/engine.ts';
import type { EngineHost } from '../core/engineHost.ts';
import type { RequestCounters, RequestSpec } from '../core/localRequest.ts';
import type { Arrival, EngineEntry, EngineReport, EngineSettings, LaneStats, ToEngine } from '../../shared/protocol/engineProtocol.ts';

/** The entry's calls an engine host takes as they are: made directly in this process, sent as these messages across a port. */
export type HostCall = Extract<ToEngine, { type: 'release' | 'threshold' | 'grant' | 'down' | 'trace' | 'peer-lost' }>;

/** The one mapping from the entry's calls to the engine host's, whichever side of a port it runs on. */
export function callHost(host: EngineHost, m: HostCall): RequestCounters | null {
  if (m.type === 'release') return host.release(m.id, m.serial, m.status);
  if (m.type === 'threshold') host.setSchedule(m.threshold, m.maxWaitMs);
  else if (m.type === 'grant') host.allow();
  else if (m.type === 'down') host.setDown(m.down);
  else if (m.type === 'trace') host.setTracing(m.on);
  else host.peerLost(m.model);
  return null;
}

/** An engine as the entry drives it, wherever it runs, so the entry never asks which. */
export abstract class EngineHandle {
  abstract readonly info: ModelInfo;
  index = -1;
  maxBatch = 1;
  maxStepTokens = Infinity;
  threshold = 1;
  kvCapacityTokens = Infinity;
  protected takenDown = false;
  /** The engine died with its state (a thread or a link gone for good), until a fresh one takes its place. */
  failure: Error | null = null;
  /** MessagePorts can travel to it (a worker thread): it gets direct channels to the peers that take them too. */
  abstract readonly acceptsPorts: boolean;
  /** The lane as a sync round reads it (as the engine last reported it). */
  abstract readonly readyCount: number;
  abstract readonly executing: boolean;
  protected entry: EngineEntry | null = null;

  constructor(readonly name: string) {}

  /** The engine itself, when it runs in this process (benches and tests read its figures). */
  get core(): Engine | undefined {
    return undefined;
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  /** Taken down by the operator, its runner dead, or no replica to place on: new requests are refused. */
  get down(): boolean {
    return this.takenDown || this.failure !== null;
  }

  /** Gives the engine its place in a deployment and its peers; called again, it joins a new one (benches reuse loaded models). */
  begin(settings: EngineSettings, _peers: Record<string, MessagePort>, entry: EngineEntry): void {
    const { index, maxBatch, maxStepTokens, threshold, kvCapacityTokens } = settings;
    Object.assign(this, { index, maxBatch, maxStepTokens, threshold, kvCapacityTokens, entry });
  }

  /** A peer engine thread was (re)started: its new port (only engines that take ports get one). */
  addPeer(_name: string, _port: MessagePort): void {}

  /** Why a new request must be refused now although the engine is not down (a remote model cut off from its broker). */
  admissionError?(): Error | null;
  /** Makes sure the engine can build the algorithm before a request of it arrives (in this process its spec carries it). */
  deploy(_ref: AlgorithmRef): void {}

  abstract arrive(a: Arrival): void;
  /** Makes the host call: directly (its answer), or as a message on the link (null: the engine answers later, in its events). */
  protected abstract send(m: HostCall): RequestCounters | null;

  /** Drops what the engine holds of a request; its tallies when the engine can say them now (in this process). */
  release(spec: RequestSpec, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null {
    return this.send({ type: 'release', id: spec.id, serial: spec.serial, status });
  }

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

/** A deployment starts engine by engine, each joining those begun before it. */
export function beginEngines(starts: readonly { engine: EngineHandle; settings: EngineSettings }[], entry: EngineEntry): void {
  const begun: EngineHandle[] = [];
  for (const s of starts) {
    rejoinEngine(s.engine, s.settings, begun, entry);
    begun.push(s.engine);
  }
}

/** Begins `fresh` beside `engines` (a restart takes a dead one's place): a channel to each that takes ports, as `fresh` does. */
export function rejoinEngine(fresh: EngineHandle, settings: EngineSettings, engines: readonly EngineHandle[], entry: EngineEntry): void {
  const peers: Record<string, MessagePort> = {};
  for (const other of engines) {
    if (other === fresh || !other.acceptsPorts || !fresh.acceptsPorts) continue;
    const ch = new MessageChannel();
    peers[other.name] = ch.port1;
    other.addPeer(fresh.name, ch.port2);
  }
  fresh.begin(settings, peers, entry);
}

/** A report's events in order as one cascade: requests the entry starts as others finish join one batch of an engine beside it. */
export function reportToEntry(entry: EngineEntry, r: EngineReport): void {
  entry.cascade(() => {
    if (r.trace.length > 0) entry.traced(r.trace);
    for (const e of r.events) {
      if (e.type === 'commit') entry.commit(e);
      else if (e.type === 'moved') entry.moved(e.requestId, e.to, e.hops);
      else entry.finish(e);
    }
    entry.reported(r.returned);
  });
}
