// An AheadStream a runner fills as its lookahead steps finish; parts wait in order until someone listens.
import type { AheadPart, AheadStream } from './modelRunner.ts';

export class AheadChannel implements AheadStream {
  private parts: AheadPart[] = [];
  private ended: { error: Error | null } | null = null;
  private onPart: ((part: AheadPart) => void) | null = null;
  private onEnd: ((error: Error | null) => void) | null = null;

  get done(): boolean {
    return this.ended !== null;
  }

  push(part: AheadPart): void {
    if (this.ended) return;
    if (this.onPart) this.onPart(part);
    else this.parts.push(part);
  }

  end(error: Error | null = null): void {
    if (this.ended) return;
    this.ended = { error };
    this.onEnd?.(error);
  }

  listen(onPart: (part: AheadPart) => void, onEnd: (error: Error | null) => void): void {
    if (this.onPart) throw new Error('an ahead stream has one listener');
    this.onPart = onPart;
    this.onEnd = onEnd;
    const buffered = this.parts;
    this.parts = [];
    for (const p of buffered) onPart(p);
    if (this.ended) onEnd(this.ended.error);
  }
}
