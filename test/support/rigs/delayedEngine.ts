// A model's engine in this process behind a delay each way: the cross-host case with the network's added latency and nothing else (no NATS, no serialising).
import type { MessagePort } from 'node:worker_threads';
import type { Clock } from '../../../runtime/clock/clock.ts';
import { Cascade } from '../../../runtime/core/engineLoop.ts';
import { InprocEngine } from '../../../runtime/transport/inprocEngine.ts';
import type { Arrival, EngineEntry, EngineSettings } from '../../../shared/protocol/engineProtocol.ts';
import type { RequestCounters, RequestSpec } from '../../../runtime/core/localRequest.ts';
import type { ModelRunner } from '../../../runtime/runner/modelRunner.ts';
import type { DelayLine } from './delayLine.ts';

/**
 * What reaches the engine (arrivals, releases) and what it sends back (its reports and handoffs)
 * wait on `line`, in order, as a remote engine's messages wait on the network. The engine has a
 * cascade of its own, as one in another process has. Like a remote engine it has no `core` and
 * answers a release with no tallies (they ride on its finishes).
 */
export class DelayedEngine extends InprocEngine {
  constructor(
    name: string,
    runner: ModelRunner,
    clock: Clock,
    private readonly line: DelayLine,
  ) {
    super(name, runner, clock, undefined, new Cascade(), undefined);
  }

  override get core(): undefined {
    return undefined;
  }

  override begin(settings: EngineSettings, peers: Record<string, MessagePort>, entry: EngineEntry): void {
    const line = this.line;
    // the engine hands the entry a cascade (its report) and handoffs: both travel; what a cascade calls runs on arrival
    const far: EngineEntry = {
      cascade: <T>(fn: () => T): T => {
        line.push(() => entry.cascade(fn));
        // the engine's report ignores what its cascade returns
        return undefined as T;
      },
      deliver: (to, a) => line.push(() => entry.deliver(to, a)),
      commit: (c) => entry.commit(c),
      finish: (f) => entry.finish(f),
      moved: (id, to, hops) => entry.moved(id, to, hops),
      deliverWire: (to, arrivals) => entry.deliverWire(to, arrivals),
      traced: (events) => entry.traced(events),
      reported: (returned) => entry.reported(returned),
    };
    super.begin(settings, peers, far);
  }

  override arrive(a: Arrival): void {
    this.line.push(() => super.arrive(a));
  }

  override release(spec: RequestSpec, status: 'done' | 'failed' | 'cancelled'): RequestCounters | null {
    this.line.push(() => super.release(spec, status));
    return null;
  }
}
