// The engine as the entry drives it: one interface, one implementation per transport (this process, a thread, NATS).
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { ModelInfo, ModelRunner } from '../runner/modelRunner.ts';
import type { AlgorithmRef } from '../registry/algorithmSource.ts';
import type { Engine } from '../core/engine.ts';
import type { LaneStats } from '../core/messages.ts';
import type { RequestCounters, RequestSpec } from '../core/localRequest.ts';
import type { Arrival, EngineEntry, EngineReport, EngineSettings } from '../core/messages.ts';

/** An engine as the entry drives it, wherever it runs, so the entry never asks which. */
export interface EngineHandle {
  readonly name: string;
  readonly info: ModelInfo;
  readonly index: number;
  readonly maxBatch: number;
  readonly maxStepTokens: number;
  readonly threshold: number;
  readonly kvCapacityTokens: number;
  /** Taken down by the operator, its runner dead, or no replica to place on: new requests are refused. */
  readonly down: boolean;
  /** The engine died with its state (a thread or a link gone for good), until a fresh one takes its place. */
  readonly failed: boolean;
  readonly failure: Error | null;
  /** MessagePorts can travel to it (a worker thread): it gets direct channels to the peers that take them too. */
  readonly acceptsPorts: boolean;
  /** The lane as a sync round reads it (as the engine last reported it). */
  readonly readyCount: number;
  readonly executing: boolean;
  /** The engine itself, when it runs in this process (benches and tests read its figures). */
  readonly core?: Engine;
  /** Gives the engine its place in a deployment and its peers; called again, it joins a new one (benches reuse loaded models). */
  begin(settings: EngineSettings, peers: Record<string, MessagePort>, entry: EngineEntry): void;
  /** A peer engine thread was (re)started: its new port. */
  addPeer(name: string, port: MessagePort): void;
  /** Why a new request must be refused now although the engine is not down (a remote model cut off from its broker). */
  admissionError?(): Error | null;
  /** Makes sure the engine can build the algorithm before a request of it arrives. */
  deploy(ref: AlgorithmRef): void;
  arrive(a: Arrival): void;
  /** Drops what the engine holds of a request; its tallies when the engine can say them now (in this process). */
  release(spec: RequestSpec, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null;
  /** The delayed-batching threshold and max-wait deadline from now on. */
  setSchedule(threshold: number, maxWaitMs: number): void;
  /** Trace events on (something at the entry reads them) or off. */
  setTracing(on: boolean): void;
  /** The serving policy's round lets this engine launch one step (sync modes). */
  grant(): void;
  setDown(down: boolean): void;
  /** The engine of model `name` restarted empty: requests decoding here re-send it their whole sequence. */
  peerLost(name: string): void;
  /**
   * The runner died: an engine in this process fails what it held, stays down until replaceRunner and
   * says how many failed; across a port the engine died with it (null).
   */
  runnerLost(error: Error): number | null;
  /** Puts a fresh runner in place of a dead one (an engine in this process only). */
  replaceRunner(runner: ModelRunner): void;
  onFailure(listener: (error: Error) => void): void;
  laneStats(): LaneStats;
  close(): Promise<void>;
}

/** Starts a deployment: a channel between every pair of engines that take ports (threads), then each begins with its ports. */
export function beginEngines(starts: readonly { engine: EngineHandle; settings: EngineSettings }[], entry: EngineEntry): void {
  const peers = starts.map(() => ({}) as Record<string, MessagePort>);
  for (let a = 0; a < starts.length; a++) {
    for (let b = a + 1; b < starts.length; b++) {
      if (!starts[a].engine.acceptsPorts || !starts[b].engine.acceptsPorts) continue;
      const ch = new MessageChannel();
      peers[a][starts[b].engine.name] = ch.port1;
      peers[b][starts[a].engine.name] = ch.port2;
    }
  }
  starts.forEach((s, k) => s.engine.begin(s.settings, peers[k], entry));
}

/** A restarted engine takes the place of a dead one: fresh channels to every other engine that takes ports. */
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
