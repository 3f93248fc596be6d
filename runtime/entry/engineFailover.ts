// When an engine dies and when it comes back: the entry fails the requests decoding there, holds the handoffs sent to it, and puts the fresh engine (or runner) in place.
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import type { Arrival, EngineEntry, EngineSettings } from '../core/messages.ts';
import type { FinishReason, RequestState } from './requestState.ts';
import { rejoinEngine } from '../transport/engineHandle.ts';

/** What failover reads and does at the entry (the cluster). */
export interface FailoverHost {
  readonly engines: EngineHandle[];
  engine(name: string): EngineHandle | undefined;
  /** The fresh engine takes the old one's name in the entry's lookup. */
  rename(name: string, engine: EngineHandle): void;
  request(id: string): RequestState | undefined;
  activeRequests(): IterableIterator<RequestState>;
  end(req: RequestState, status: 'done' | 'failed' | 'cancelled', reason: FinishReason, error?: Error): void;
  flush(): void;
  settingsFor(index: number, t: EngineHandle): EngineSettings;
}

export class EngineFailover {
  /** Handoffs to an engine that died, until its replacement joins. */
  private readonly held = new Map<string, Arrival[]>();
  /** How many requests each death failed, by its error. */
  private readonly failedBy = new WeakMap<Error, number>();

  constructor(private readonly host: FailoverHost) {}

  private engineNamed(name: string): EngineHandle {
    const e = this.host.engine(name);
    if (!e) throw new TokenRouterError('not_found', `no model "${name}"`, 'model');
    return e;
  }

  /** A dead engine's requests fail at once, whoever restarts it. */
  watch(t: EngineHandle): void {
    t.onFailure((e) => {
      if (this.engineNamed(t.name) === t) this.failLane(t.name, e);
    });
  }

  /**
   * A model's runner died and took every cache with it: requests that hold state there fail with a
   * clear error (the rest keep going), and the lane refuses work until it is replaced.
   */
  failLane(name: string, error: Error): number {
    const { host } = this;
    // the engine's own watch and the restarter both hear one death: the second call reports the first's count
    const seen = this.failedBy.get(error);
    if (seen !== undefined) return seen;
    const e = this.engineNamed(name);
    let failed = e.runnerLost(error);
    if (failed === null) {
      failed = 0;
      // Only the requests decoding there fail; the others lost a cache there at most, and re-send
      // that engine their whole sequence when they next go there (it re-prefills).
      for (const req of [...host.activeRequests()]) {
        if (req.whereabouts.model !== name) continue;
        host.end(req, 'failed', 'error', new TokenRouterError('unavailable', `model ${name} failed: ${error.message}`, 'model'));
        failed++;
      }
      for (const other of host.engines) if (other !== e) other.peerLost(name);
    }
    host.flush();
    this.failedBy.set(error, failed);
    return failed;
  }

  /** Takes an engine down (its batches fail) or brings it back. */
  setDown(name: string, down: boolean): void {
    this.engineNamed(name).setDown(down);
  }

  replaceRunner(name: string, runner: ModelRunner): void {
    this.engineNamed(name).replaceRunner(runner);
    this.host.flush();
  }

  /** `entry`: what the fresh engine reports to. */
  replaceThread(name: string, fresh: EngineHandle, entry: EngineEntry): void {
    const { host } = this;
    const old = this.engineNamed(name);
    const i = host.engines.indexOf(old);
    host.engines[i] = fresh;
    host.rename(name, fresh);
    this.watch(fresh);
    rejoinEngine(fresh, host.settingsFor(i, old), host.engines, entry);
    // the fresh engine builds the algorithms of the requests still going, then takes the handoffs held for it
    for (const req of host.activeRequests()) if (req.spec.ref && req.spec.models.includes(name)) fresh.deploy(req.spec.ref);
    const held = this.held.get(name) ?? [];
    this.held.delete(name);
    for (const a of held) if (host.request(a.spec.id)?.spec === a.spec) fresh.arrive(a);
    host.flush();
  }

  /** A handoff to a dead engine thread waits here for the fresh one; false: the engine is up, deliver it. */
  hold(e: EngineHandle, a: Arrival, live: boolean): boolean {
    if (!e.failed) return false;
    if (live) {
      const list = this.held.get(e.name) ?? [];
      list.push(a);
      this.held.set(e.name, list);
    }
    return true;
  }

  /** A request just sent to an engine that had died before its peer heard is lost with it. */
  lostOnTheWay(req: RequestState, to: EngineHandle): boolean {
    if (!to.failed || this.held.get(to.name)?.some((a) => a.spec.id === req.id)) return false;
    this.host.end(
      req,
      'failed',
      'error',
      new TokenRouterError('unavailable', `model ${to.name} failed: ${to.failure?.message} (before this request reached it)`, 'model'),
    );
    return true;
  }
}
