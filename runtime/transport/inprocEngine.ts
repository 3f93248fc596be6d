// An engine in the entry's own process: the one engine host, reached by direct calls instead of messages.
import type { MessagePort } from 'node:worker_threads';
import type { TraceSink } from '../../shared/trace.ts';
import type { Clock } from '../clock/clock.ts';
import { TokenRouterError } from '../errors.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import { EngineHost, type HostCall } from '../core/engineHost.ts';
import type { Cascade } from '../core/engineLoop.ts';
import type { Engine } from '../core/engine.ts';
import type { Arrival, EngineEntry, EngineSettings, LaneStats } from '../../shared/protocol/engineProtocol.ts';
import type { Decoder } from '../runner/detokenizer.ts';
import { EngineHandle, reportToEntry } from './engineHandle.ts';

export class InprocEngine extends EngineHandle {
  readonly acceptsPorts = false;
  private host: EngineHost | null = null;

  constructor(
    name: string,
    private runner: ModelRunner,
    private readonly clock: Clock,
    private readonly trace: TraceSink | undefined,
    /** Shared by the engines of this process: none launches before a cascade among them is over. */
    private readonly cascade: Cascade,
    /** The models' tokenizer in this process: requests that ask for text are detokenised by the engine. */
    private readonly decoder: Decoder | undefined,
  ) {
    super(name);
  }

  get info() {
    return this.runner.info;
  }

  private get h(): EngineHost {
    if (!this.host) throw new TokenRouterError('internal', `engine of model ${this.name} has not begun`, 'model');
    return this.host;
  }

  override get core(): Engine | undefined {
    return this.host?.engine;
  }
  override get down(): boolean {
    return this.host?.engine.down ?? false;
  }
  get readyCount(): number {
    return this.host?.engine.readyCount ?? 0;
  }
  get executing(): boolean {
    return this.host?.engine.executing ?? false;
  }

  override begin(settings: EngineSettings, peers: Record<string, MessagePort>, entry: EngineEntry): void {
    super.begin(settings, peers, entry);
    this.host?.dispose();
    this.host = new EngineHost(
      { inProcess: true, report: (r) => reportToEntry(entry, r), viaEntry: (to, arrivals) => arrivals.forEach((a) => entry.deliver(to, a)) },
      settings,
      this.runner,
      this.decoder,
      this.clock,
      this.trace,
      this.cascade,
      () => entry.settled?.(),
    );
  }

  protected send(m: HostCall) {
    return this.h.call(m);
  }

  /** In wall time an arrival outside a cascade holds this thread's engines to the end of the turn: a turn's requests prefill in one step. */
  arrive(a: Arrival): void {
    const endOfTurn = this.clock.endOfTurn;
    if (endOfTurn && this.cascade.idle) {
      this.cascade.enter();
      endOfTurn(() => this.cascade.leave());
    }
    this.h.arrive([a]);
  }

  override runnerLost(error: Error): number {
    return this.h.runnerLost(error);
  }

  override replaceRunner(runner: ModelRunner): void {
    this.runner = runner;
    this.h.replaceRunner(runner);
  }

  /** The engine never dies as a whole here; its runner does, watched by whoever started it (runnerLost, replaceRunner). */
  onFailure(): void {}

  laneStats(): LaneStats {
    return this.h.engine.laneStats();
  }

  async close(): Promise<void> {
    this.host?.dispose();
  }
}
