// The serving policy alone: when each mode lets an engine launch (its LaunchRule), and the sync modes' rounds at the entry.
import { describe, expect, it } from 'vitest';
import { servingPolicy, type RoundLane } from '../../runtime/core/servingPolicy.ts';
import { LaunchRule } from '../../runtime/core/subServerMachine.ts';

function lanes(ready: number[], executing: boolean[] = ready.map(() => false)) {
  const granted: number[] = [];
  const list: RoundLane[] = ready.map((readyCount, index) => ({
    index,
    readyCount,
    threshold: 1,
    executing: executing[index],
    grant: () => void granted.push(index),
  }));
  return { list, granted };
}

describe('serving policy', () => {
  it('async-immediate launches on any ready request; async-delayed at the threshold, or any after the deadline', () => {
    const lane = { index: 0, readyCount: 2, threshold: 3, executing: false };
    expect(new LaunchRule('async-immediate').mayLaunch(lane)).toBe(true);
    const delayed = new LaunchRule('async-delayed');
    expect(delayed.mayLaunch(lane)).toBe(false);
    expect(delayed.mayLaunch(lane, true)).toBe(true);
    expect(delayed.mayLaunch({ ...lane, readyCount: 3 })).toBe(true);
    expect(delayed.mayLaunch({ ...lane, readyCount: 0 }, true)).toBe(false);
  });

  it('a sync engine launches once per grant, deadline or not', () => {
    const rule = new LaunchRule('step-sync');
    const lane = { index: 0, readyCount: 4, threshold: 1, executing: false };
    expect(rule.mayLaunch(lane)).toBe(false);
    expect(rule.mayLaunch(lane, true)).toBe(false);
    rule.allow();
    expect(rule.mayLaunch(lane)).toBe(true);
    expect(rule.mayLaunch({ ...lane, readyCount: 0 })).toBe(false);
    rule.launched();
    expect(rule.mayLaunch(lane)).toBe(false);
  });

  it('step-sync lets every idle engine with work launch, and opens the next round when all its steps are back', () => {
    const { rounds } = servingPolicy('step-sync', true);
    const a = lanes([2, 0, 1, 3], [false, false, false, true]);
    rounds.open(a.list);
    expect(a.granted).toEqual([0, 2]);
    rounds.open(a.list);
    expect(a.granted).toEqual([0, 2]);
    rounds.finished(1);
    rounds.open(a.list);
    expect(a.granted).toEqual([0, 2]);
    rounds.finished(1);
    rounds.open(a.list);
    expect(a.granted).toEqual([0, 2, 0, 2]);
  });

  it('model-sync lets one engine launch per round, round-robin from the one after the last served', () => {
    const { rounds } = servingPolicy('model-sync', true);
    const a = lanes([1, 1, 1]);
    for (let i = 0; i < 4; i++) {
      rounds.open(a.list);
      rounds.finished(1);
    }
    expect(a.granted).toEqual([0, 1, 2, 0]);
    const b = lanes([1, 0, 1]);
    rounds.open(b.list);
    expect(b.granted).toEqual([2]);
  });

  it('async modes keep no rounds; retain says whether a handoff leaves state behind', () => {
    const a = lanes([5, 5]);
    servingPolicy('async-delayed', false).rounds.open(a.list);
    expect(a.granted).toEqual([]);
    expect(servingPolicy('async-delayed', false).retain).toBe(false);
    expect(servingPolicy('model-sync', true).retain).toBe(true);
  });
});
