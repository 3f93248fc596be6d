// The one engine host: serves one model's engine, whatever its placement; only the outlet it reports through differs.
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { Decoder } from '../runner/incrementalDetokenizer.ts';
import { EngineGrammar } from '../grammar/engineGrammar.ts';
import { Engine, type EngineEnv } from './engine.ts';
import { Cascade, EngineLoop, type LoopPorts } from './engineLoop.ts';
import type { RequestCounters } from './localRequest.ts';
import type { Arrival, EngineOutlet, EngineSettings, PeerLink } from './messages.ts';
import { OutputProcessor } from './outputProcessor.ts';
import { servingPolicy, type ServingPolicy } from './servingPolicy.ts';

/** Releases remembered for requests this engine does not hold: a handoff still on its way here is dropped. */
const TOMBSTONES = 4096;

/** One engine with its clock, serving policy, links to its peers and loop: every call of the entry or a peer runs as one of the loop's inputs. */
export class EngineHost implements EngineEnv, LoopPorts {
  readonly policy: ServingPolicy;
  readonly output: OutputProcessor | undefined;
  readonly grammar: EngineGrammar;
  /** Where trace events go while something reads them (`settings.trace`, then the entry's `trace` messages); undefined: none are made. */
  trace: TraceSink | undefined;
  private readonly sink: TraceSink;
  readonly engine: Engine;
  readonly loop: EngineLoop;
  readonly peers = new Map<string, PeerLink>();
  private readonly tombstones = new Set<number>();

  constructor(
    readonly outlet: EngineOutlet,
    readonly settings: EngineSettings,
    runner: ModelRunner,
    decoder: Decoder | undefined,
    readonly clock: Clock,
    /** Where trace events go at once (an engine in the entry's process); absent: they travel in the report, when `settings.trace`. */
    traceSink?: TraceSink,
    /** Shared by the engines of one thread (the entry's); an engine alone in its thread has its own. */
    readonly cascade = new Cascade(),
    /** A batch's outputs and everything they set off are over, and nothing else runs (the entry's debug checks). */
    readonly settled?: () => void,
  ) {
    this.policy = servingPolicy(settings.mode, settings.retainState);
    this.output = decoder && new OutputProcessor(decoder);
    this.grammar = new EngineGrammar(decoder);
    this.sink = traceSink ?? { emit: (e) => this.loop.traced.push(e) };
    this.trace = settings.trace ? this.sink : undefined;
    runner.useClock?.(clock);
    this.engine = new Engine(settings, runner, this);
    this.loop = new EngineLoop(this.engine, this);
  }

  get held(): number {
    return this.engine.locals.size;
  }

  /** The peer died: handoffs there go by the entry until it is back. Its link is dropped, not closed: what it sent before it died may still be queued on it. */
  peerLost(name: string): void {
    this.peers.delete(name);
    this.loop.input(() => this.engine.peerLost(name));
  }

  /** `link` is the one handoffs to `name` take now (false: that peer died since, or was replaced). */
  linked(name: string, link: PeerLink): boolean {
    return this.peers.get(name) === link;
  }

  addPeer(name: string, link: PeerLink): void {
    this.peers.get(name)?.close();
    this.peers.set(name, link);
  }

  arrive(arrivals: readonly Arrival[]): void {
    this.loop.input(() => {
      for (const a of arrivals) if (!this.tombstones.has(a.spec.serial)) this.engine.arrive(a);
    });
  }

  deferArrival(ready: Promise<unknown>, a: Arrival): void {
    void ready.then(() => this.arrive([a]));
  }

  release(id: string, serial: number, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null {
    return this.loop.input(() => {
      const local = this.engine.locals.get(id);
      if (local && local.spec.serial === serial) return this.engine.release(local.spec, status);
      this.tombstones.add(serial);
      if (this.tombstones.size > TOMBSTONES) this.tombstones.delete(this.tombstones.values().next().value!);
      return null;
    });
  }

  setSchedule(threshold: number, maxWaitMs: number): void {
    this.loop.schedule(threshold, maxWaitMs);
  }

  /** The entry's round lets this engine launch one step. */
  allow(): void {
    this.loop.input(() => {
      this.policy.launch.allow();
      this.loop.look();
    });
  }

  setTracing(on: boolean): void {
    this.trace = on ? this.sink : undefined;
  }

  setDown(down: boolean): void {
    this.loop.input(() => this.loop.tell(down ? 'DOWN' : 'UP'));
  }

  /** Fails every request this engine holds (their state here may be off); the engine serves on. */
  failHeld(error: Error): number {
    return this.loop.input(() => this.engine.failAll(error));
  }

  /** The runner died with every cache: what this engine held fails, and it refuses work until a runner is put in place. */
  runnerLost(error: Error): number {
    return this.loop.input(() => {
      this.loop.tell('DOWN');
      return this.engine.failAll(error);
    });
  }

  replaceRunner(runner: ModelRunner): void {
    this.loop.input(() => {
      runner.useClock?.(this.clock);
      this.engine.runner = runner;
      this.loop.tell('UP');
    });
  }

  dispose(): void {
    for (const p of this.peers.values()) p.close();
    this.peers.clear();
    this.loop.actor.stop();
    // the runner outlives this engine: a `begin` that replaces it starts an empty prefix cache, so the old one's KV must go
    this.engine.queues.prefix?.clear();
  }
}
