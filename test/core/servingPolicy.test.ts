// The serving policy alone: when each mode lets an engine launch (mayLaunch, a baseline's rule), and the sync modes' rounds at the entry.
import { describe, expect, it } from 'vitest';
import { baselineLaunch, entryRounds, type RoundEngine } from '../../runtime/core/servingPolicy.ts';
import { mayLaunch } from '../../runtime/core/engineLoop.ts';

function engines(ready: number[], executing: boolean[] = ready.map(() => false)) {
  const granted: number[] = [];
  const list: RoundEngine[] = ready.map((readyCount, index) => ({
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
    const immediate = baselineLaunch('async-immediate');
    expect(mayLaunch(2, 3, false, immediate)).toBe(true);
    expect(mayLaunch(0, 3, true, immediate)).toBe(false);
    expect(baselineLaunch('async-delayed')).toBeUndefined();
    expect(mayLaunch(2, 3, false)).toBe(false);
    expect(mayLaunch(2, 3, true)).toBe(true);
    expect(mayLaunch(3, 3, false)).toBe(true);
    expect(mayLaunch(0, 3, true)).toBe(false);
  });

  it('a sync engine launches once per grant, deadline or not', () => {
    const rule = baselineLaunch('step-sync');
    expect(mayLaunch(4, 1, false, rule)).toBe(false);
    expect(mayLaunch(4, 1, true, rule)).toBe(false);
    rule!.allow();
    expect(mayLaunch(4, 1, false, rule)).toBe(true);
    expect(mayLaunch(0, 1, false, rule)).toBe(false);
    rule!.launched();
    expect(mayLaunch(4, 1, false, rule)).toBe(false);
  });

  it('step-sync lets every idle engine with work launch, and opens the next round when all its steps are back', () => {
    const rounds = entryRounds('step-sync');
    const a = engines([2, 0, 1, 3], [false, false, false, true]);
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
    const rounds = entryRounds('model-sync');
    const a = engines([1, 1, 1]);
    for (let i = 0; i < 4; i++) {
      rounds.open(a.list);
      rounds.finished(1);
    }
    expect(a.granted).toEqual([0, 1, 2, 0]);
    const b = engines([1, 0, 1]);
    rounds.open(b.list);
    expect(b.granted).toEqual([2]);
  });

  it('async modes keep no rounds', () => {
    const a = engines([5, 5]);
    entryRounds('async-delayed').open(a.list);
    entryRounds('async-immediate').open(a.list);
    expect(a.granted).toEqual([]);
  });
});
