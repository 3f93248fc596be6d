// The relay's worker-thread alarm: fires once per arm, not before its due time, and can be re-armed.
import { afterEach, describe, expect, it } from 'vitest';
import { createPreciseAlarm, type PreciseAlarm } from '../support/rigs/preciseAlarm.ts';

describe('precise alarm', () => {
  let alarm: PreciseAlarm | null = null;
  afterEach(async () => {
    await alarm?.close();
    alarm = null;
  });

  it('fires once per arm, never before the due time, in order of arming', async () => {
    const fired: number[] = [];
    let wake: () => void = () => {};
    alarm = createPreciseAlarm(() => {
      fired.push(performance.now());
      wake();
    });
    const dues: number[] = [];
    for (const ms of [5, 0.5, 2, 1.5]) {
      const due = performance.now() + ms;
      dues.push(due);
      await new Promise<void>((r) => {
        wake = r;
        alarm!.arm(due);
        expect(alarm!.armed).toBe(true);
      });
      expect(alarm.armed).toBe(false);
    }
    expect(fired).toHaveLength(4);
    // the worker and this thread read one clock; allow a few microseconds of conversion error
    for (let i = 0; i < 4; i++) expect(fired[i]).toBeGreaterThanOrEqual(dues[i] - 0.05);
    // no stray second firing
    await new Promise((r) => setTimeout(r, 20));
    expect(fired).toHaveLength(4);
  });

  it('refuses a second arm while one is pending, and close() stops a pending one', async () => {
    let calls = 0;
    alarm = createPreciseAlarm(() => calls++);
    alarm.arm(performance.now() + 30);
    expect(() => alarm!.arm(performance.now() + 1)).toThrow(/already armed/);
    await alarm.close();
    alarm = null;
    await new Promise((r) => setTimeout(r, 60));
    expect(calls).toBe(0);
  });
});
