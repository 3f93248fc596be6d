// When an engine dies and when it comes back: the entry fails the requests decoding there, holds the handoffs sent to it, and puts the fresh engine in place.
import { TokenRouterError } from '../errors.ts';
import type { EngineHandle } from '../transport/engineHandle.ts';
import type { Arrival, EngineEntry, EngineSettings } from '../../shared/protocol/engineProtocol.ts';
import type { EngineLimits } from './clusterOptions.ts';
import type { RequestState } from './requestState.ts';
import { rejoinEngine } from '../transport/threadEngine.ts';

/** What failover reads and does at the entry. */
export interface FailoverHost {
  /** Every engine in model order: a fresh one takes the dead one's place. */
  readonly engines: EngineHandle[];
  readonly active: ReadonlyMap<string, RequestState>;
  fail(req: RequestState, error: Error): void;
  flush(): void;
  settingsFor(index: number, limits: EngineLimits): EngineSettings;
}

export class EngineFailover {
  /** Handoffs to an engine that died, until its replacement joins. */
  private readonly held = new Map<string, Arrival[]>();
  /** How many requests each death failed: the engine's own watch and the restarter both hear one death. */
  private readonly failedBy = new WeakMap<Error, number>();

  constructor(
    private readonly host: FailoverHost,
    private readonly entry: EngineEntry,
  ) {
    for (const e of host.engines) this.watch(e);
  }

  /** A dead engine's requests fail at once, whoever restarts it. */
  private watch(e: EngineHandle): void {
    e.onFailure((error) => {
      if (this.host.engines.includes(e)) this.failLane(e, error);
    });
  }

  /**
   * A model's runner died and took every cache with it: the requests decoding there fail (the others
   * lost a cache there at most, and re-send their whole sequence when they next go there), and the
   * engine refuses work until it is replaced.
   */
  failLane(e: EngineHandle, error: Error): number {
    const seen = this.failedBy.get(error);
    if (seen !== undefined) return seen;
    const { host } = this;
    let failed = e.runnerLost(error);
    if (failed === null) {
      failed = 0;
      for (const req of [...host.active.values()]) {
        if (req.whereabouts.model !== e.name) continue;
        host.fail(req, new TokenRouterError('unavailable', `model ${e.name} failed: ${error.message}`, 'model'));
        failed++;
      }
      for (const other of host.engines) if (other !== e) other.peerLost(e.name);
    }
    host.flush();
    this.failedBy.set(error, failed);
    return failed;
  }

  /** The fresh engine builds the algorithms of the requests still going, then takes the handoffs held for it. */
  replaceThread(old: EngineHandle, fresh: EngineHandle): void {
    const { host } = this;
    const i = host.engines.indexOf(old);
    host.engines[i] = fresh;
    this.watch(fresh);
    rejoinEngine(fresh, host.settingsFor(i, old), host.engines, this.entry);
    for (const req of host.active.values()) if (req.spec.ref && req.spec.models.includes(old.name)) fresh.deploy(req.spec.ref);
    for (const a of this.held.get(old.name) ?? []) if (host.active.get(a.spec.id)?.spec === a.spec) fresh.arrive(a);
    this.held.delete(old.name);
    host.flush();
  }

  /** A handoff to a dead engine waits here for the fresh one. */
  hold(name: string, a: Arrival): void {
    this.held.set(name, [...(this.held.get(name) ?? []), a]);
  }

  /** A request just sent to an engine that had died before its peer heard is lost with it. */
  lostOnTheWay(req: RequestState, to: EngineHandle): void {
    if (!to.failure || this.held.get(to.name)?.some((a) => a.spec.id === req.id)) return;
    const error = new TokenRouterError('unavailable', `model ${to.name} failed: ${to.failure.message} (before this request reached it)`, 'model');
    this.host.fail(req, error);
  }
}
