// Entry side of streamed remote lookahead: merges the passes each replica streams for one step into the step's AheadStream.
import type { TokenSignals } from '../../shared/algorithm.ts';
import { AheadChannel } from '../runner/aheadChannel.ts';
import type { AheadStream } from '../runner/modelRunner.ts';
import type { DecodedResult } from './stepCodec.ts';

interface ReplicaStream {
  /** Step row index of each of this part's rows. */
  idx: readonly number[];
  /** passes[p - 1][j]: this part's row j's result of pass p (undefined: it did not step). */
  passes: (TokenSignals | undefined)[][];
  ended: boolean;
}

/**
 * One step's rows may sit on several replicas, each streaming its passes for its own rows. Pass p
 * goes out to the engine once every replica still streaming has sent its pass p (or ended), with
 * each row's result in its place in the step; the stream ends when they all have. Messages that
 * arrive before their part is known (the stream can overtake the step's answer) wait.
 */
export class AheadAssembler {
  readonly stream: AheadStream;
  private readonly channel = new AheadChannel();
  private readonly parts = new Map<string, ReplicaStream>();
  private readonly early = new Map<string, DecodedResult[]>();
  /** Parts sent asking for lookahead and not yet answered (a yield must reach them too). */
  private readonly asking = new Set<string>();
  private next = 1;
  private closed = false;

  constructor(
    private readonly rowCount: number,
    /** Each row's result as the engine receives it, pass by pass (for the entry's books). */
    private readonly onPass: (pass: (TokenSignals | undefined)[]) => void,
    private readonly onEnd: () => void,
  ) {
    this.stream = this.channel;
  }

  /** Some part of the step asked for lookahead and was answered: there is a stream to hand to the engine. */
  get streaming(): boolean {
    return this.parts.size > 0;
  }

  /** A part asking for lookahead was sent. */
  asked(seq: number, replica: string): void {
    this.asking.add(`${seq}/${replica}`);
  }

  /** A part of the step was answered and asked for lookahead: wait for its stream. */
  expect(seq: number, replica: string, idx: readonly number[]): void {
    const key = `${seq}/${replica}`;
    this.asking.delete(key);
    const part: ReplicaStream = { idx, passes: [], ended: false };
    this.parts.set(key, part);
    for (const m of this.early.get(key) ?? []) this.apply(part, m);
    this.early.delete(key);
  }

  /** Every part is answered or given up: the stream ends once the expected ones have. */
  settle(): void {
    this.asking.clear();
    this.pump();
  }

  onMessage(m: DecodedResult): void {
    if (this.closed) return;
    const key = `${m.meta.seq}/${m.meta.replica}`;
    const part = this.parts.get(key);
    if (!part) {
      const list = this.early.get(key) ?? [];
      list.push(m);
      this.early.set(key, list);
      return;
    }
    this.apply(part, m);
    this.pump();
  }

  /** A replica is gone, or we lost NATS for a while: its passes to come will not; what came stands. */
  endReplica(replica: string | null): void {
    for (const [key, part] of this.parts) if (replica === null || key.endsWith(`/${replica}`)) part.ended = true;
    this.pump();
  }

  /** Replicas still computing this step's passes, or about to (to ask them to yield). */
  streamingReplicas(): { seq: number; replica: string }[] {
    const keys = [...this.asking, ...[...this.parts].filter(([, p]) => !p.ended).map(([k]) => k)];
    return keys.map((key) => {
      const cut = key.indexOf('/');
      return { seq: Number(key.slice(0, cut)), replica: key.slice(cut + 1) };
    });
  }

  private apply(part: ReplicaStream, m: DecodedResult): void {
    if (m.meta.end) {
      part.ended = true;
      return;
    }
    const p = m.meta.pass ?? 0;
    if (p < 1) return;
    part.passes[p - 1] = part.idx.map((_, j) => m.ahead?.[j]?.[0]);
  }

  private pump(): void {
    while (!this.closed) {
      let any = false;
      for (const part of this.parts.values()) {
        if (part.passes[this.next - 1]) any = true;
        else if (!part.ended) return; // wait for this replica's pass
      }
      if (!any) {
        this.closed = true;
        this.channel.end();
        this.onEnd();
        return;
      }
      const rows = new Array<TokenSignals | undefined>(this.rowCount);
      for (const part of this.parts.values()) {
        const got = part.passes[this.next - 1];
        if (got) part.idx.forEach((i, j) => (rows[i] = got[j]));
      }
      this.next++;
      this.onPass(rows);
      this.channel.push({ rows, modelMs: 0 });
    }
  }
}
