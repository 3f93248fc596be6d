// A thenable a clock settles: a simulated step's result comes back on the clock, synchronously, where a Promise would wait for a microtask the virtual clock never yields to.

import type { Clock } from './clock.ts';

/**
 * Settled once; callbacks registered after that run at once, within `then` (a Promise would defer
 * them to a microtask). That is the point: a virtual clock's `run()` fires a timer and every
 * consequence of it before the next, so simulated time stays deterministic.
 */
export class Later<T> implements PromiseLike<T> {
  private state: 'pending' | 'ok' | 'failed' = 'pending';
  private value: unknown;
  private waiting: (() => void)[] | null = null;

  /** Resolves with `value` after `ms` on `clock`; at once when there is no clock. */
  static after<T>(clock: Clock | null, ms: number, value: T): Later<T> {
    return new Later<T>().settleAfter(clock, ms, true, value);
  }

  /** Rejects with `error` after `ms` on `clock`; at once when there is no clock. */
  static failAfter<T>(clock: Clock | null, ms: number, error: Error): Later<T> {
    return new Later<T>().settleAfter(clock, ms, false, error);
  }

  protected settleAfter(clock: Clock | null, ms: number, ok: boolean, value: unknown): this {
    if (clock) clock.setTimeout(() => this.settle(ok, value), ms);
    else this.settle(ok, value);
    return this;
  }

  private settle(ok: boolean, value: unknown): void {
    if (this.state !== 'pending') return;
    if (ok && isThenable(value)) {
      value.then(
        (v) => this.settle(true, v),
        (e) => this.settle(false, e),
      );
      return;
    }
    this.state = ok ? 'ok' : 'failed';
    this.value = value;
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting) for (const run of waiting) run();
  }

  // biome-ignore lint/suspicious/noThenProperty: a Later is a PromiseLike on purpose, settled on the clock
  then<R1 = T, R2 = never>(onOk?: ((value: T) => R1 | PromiseLike<R1>) | null, onFail?: ((reason: unknown) => R2 | PromiseLike<R2>) | null): Later<R1 | R2> {
    const next = new Later<R1 | R2>();
    const run = (): void => {
      const ok = this.state === 'ok';
      const cb = ok ? onOk : onFail;
      if (!cb) return next.settle(ok, this.value);
      let out: unknown;
      try {
        out = (cb as (v: unknown) => unknown)(this.value);
      } catch (e) {
        // nobody listens for it: it stays loud (out of the clock's run, or out of `then`) rather than vanish
        if (next.waiting === null) throw e;
        return next.settle(false, e);
      }
      next.settle(true, out);
    };
    if (this.state === 'pending') (this.waiting ??= []).push(run);
    else run();
    return next;
  }
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}
