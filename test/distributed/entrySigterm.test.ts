// Issue 34 finding 0: SIGTERM of an entry while streams run leaves its sub-servers up (3 rounds here; 10 in test/stress/entrySigterm.test.ts).
import { describe, expect, it } from 'vitest';
import { HAVE_NATS } from './helpers.ts';
import { sigtermRounds } from './entrySigterm.ts';

describe.skipIf(!HAVE_NATS)('SIGTERM of the entry while streams run', () => {
  it('3 entries SIGTERMed with 10 streams each: both sub-server processes stay up, hold nothing of the gone entries, and the next entry serves', async () => {
    const rounds = await sigtermRounds(3);
    expect(rounds).toHaveLength(3);
    for (const r of rounds) expect(r.ends.done + r.ends['sse-error'] + r.ends.cut).toBe(10);
  }, 180_000);
});
