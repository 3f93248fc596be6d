// The lookahead passes of steps over NATS: an inbox per step that the replicas stream to, merged by an AheadAssembler each.
import { createInbox, type NatsConnection } from '@nats-io/transport-node';
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { StepRow } from '../runner/modelRunner.ts';
import { AheadAssembler } from './aheadAssembler.ts';
import { decodeResult, encodeControl, WireKind } from './stepCodec.ts';

/** One step's lookahead: the inbox its replicas stream to, and what merges their passes. */
export interface AheadStep {
  inbox: string;
  assembler: AheadAssembler;
}

export interface AheadStreamsHooks {
  /** A streamed pass fed `token` to a cache: the entry's books follow every pass taken. */
  fedAhead(cacheId: number, token: number): void;
  publish(subject: string, data: Uint8Array | string): void;
  log(line: string): void;
}

export class AheadStreams {
  /** Steps whose lookahead passes are still streaming in. */
  private readonly streams = new Set<AheadAssembler>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly entry: string,
    private readonly hooks: AheadStreamsHooks,
  ) {}

  /**
   * Each replica streams the step's passes to an inbox of this step as they finish, as a local
   * worker streams them; the engine routes each pass while the model runs on.
   */
  open(rows: readonly StepRow[], main: readonly TokenSignals[]): AheadStep {
    const inbox = createInbox();
    const last: (TokenSignals | undefined)[] = [];
    const assembler = new AheadAssembler(
      rows.length,
      (pass) =>
        pass.forEach((sig, i) => {
          if (!sig) return;
          // this pass fed the token the one before it sampled
          this.hooks.fedAhead(rows[i].cacheId, (last[i] ?? main[i]).token);
          last[i] = sig;
        }),
      () => {
        sub.unsubscribe();
        this.streams.delete(assembler);
      },
    );
    const sub = this.nc.subscribe(inbox, {
      callback: (err, msg) => {
        if (err) return;
        try {
          assembler.onMessage(decodeResult(msg.data));
        } catch (e) {
          this.hooks.log(`bad lookahead message: ${(e as Error).message}`);
        }
      },
    });
    this.streams.add(assembler);
    return { inbox, assembler };
  }

  /** The engine has new work: replicas still looking ahead for us hand back what they have. */
  yieldAll(): void {
    for (const a of this.streams) {
      for (const { seq, replica } of a.streamingReplicas()) this.hooks.publish(replica, encodeControl(WireKind.Yield, { entry: this.entry, seq }));
    }
  }

  /** No more passes will come from `replica` (null: from any replica); what came stands. */
  end(replica: string | null): void {
    for (const a of [...this.streams]) a.endReplica(replica);
  }
}
