// Later: a thenable settled by the virtual clock, synchronously, and loud when nobody listens for a failure.
import { describe, expect, it } from 'vitest';
import { Later } from '../../runtime/clock/later.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';

describe('Later', () => {
  it('settles after its delay on the virtual clock, within the run, in timer order', () => {
    const clock = new VirtualClock();
    const seen: string[] = [];
    Later.after(clock, 5, 'b').then((v) => seen.push(`${v}@${clock.now()}`));
    Later.after(clock, 2, 'a').then((v) => seen.push(`${v}@${clock.now()}`));
    expect(seen).toEqual([]);
    clock.run();
    expect(seen).toEqual(['a@2', 'b@5']);
  });

  it('without a clock, settles at once; a chained then gets the callback value or the failure', async () => {
    expect(await Later.after(null, 10, 3).then((v) => v * 2)).toBe(6);
    await expect(Later.failAfter(null, 0, new Error('boom'))).rejects.toThrow('boom');
    // settled already: the callback runs inside then(), where nobody is chained yet, so its throw comes out of then()
    expect(() =>
      Later.after(null, 0, 1).then(() => {
        throw new Error('in callback');
      }),
    ).toThrow('in callback');
  });

  it('a throw in a callback nobody chained comes out of the clock run (an invariant error stays loud)', () => {
    const clock = new VirtualClock();
    Later.after(clock, 1, 0).then(() => {
      throw new Error('invariant broken');
    });
    expect(() => clock.run()).toThrow('invariant broken');
  });

  it('a throw in a callback with a listener rejects the chained thenable instead', () => {
    const clock = new VirtualClock();
    let caught: unknown;
    Later.after(clock, 1, 0)
      .then(() => {
        throw new Error('handled');
      })
      .then(undefined, (e) => (caught = e));
    clock.run();
    expect((caught as Error).message).toBe('handled');
  });
});
