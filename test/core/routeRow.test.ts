// routeRow, table-driven: every decision a row's result can lead to, from data alone (no cluster, no clock).
import { describe, expect, it } from 'vitest';
import { standardSend, type Algorithm, type TokenSignals } from '../../shared/algorithm.ts';
import { routeRow, type RowDecision, type RowView } from '../../runtime/core/localRequest.ts';

const EOS = 0;
/** A second EOS id (Llama 3's <|eot_id|> beside <|end_of_text|>) and a request's stop_token_ids. */
const EOS2 = 7;
const EOS_IDS = [EOS, EOS2];
const STOP = [11];

function alg(route: Algorithm['route'], send?: Algorithm['send']): Algorithm<unknown> {
  return { name: 't', models: ['a', 'b'], entry: 1, initMeta: () => ({}), route, ...(send ? { send } : {}) };
}

/** A row's view with the spec's fields given flat. */
type Over = Partial<Omit<RowView, 'spec'> & RowView['spec']>;

function view({ id = 'r', algorithm = alg(() => 0), models = ['a', 'b'], drawSeed = 1, maxLength = 20, ...row }: Over): RowView {
  return {
    spec: { id, algorithm, models, drawSeed, maxLength },
    model: 1,
    tokens: [5, 6, 7, 8],
    known: [0, 4, 2],
    stepsHere: 1,
    generated: 2,
    meta: {},
    ...row,
  };
}

const sig = (token: number): TokenSignals => ({ token, entropy: 0.5, maxProb: 0.5, margin: 0.1, tokenProb: 0.5, topIds: [], topProbs: [], heads: {} });

const keepSend: Algorithm['send'] = (req) => standardSend(req, true);
const dropSend: Algorithm['send'] = (req) => standardSend(req, false);

const cases: [name: string, v: Over, token: number, expected: Partial<RowDecision> & { kind: RowDecision['kind'] }][] = [
  ['route 0 stays and commits', {}, 9, { kind: 'stay', commit: 9 }],
  ['route to itself stays', { algorithm: alg(() => 1) }, 9, { kind: 'stay', commit: 9 }],
  ['EOS while staying finishes uncommitted', {}, EOS, { kind: 'finish', reason: 'stop' }],
  ['a second EOS id finishes uncommitted', {}, EOS2, { kind: 'finish', reason: 'stop' }],
  ['a stop_token_id finishes uncommitted', {}, 11, { kind: 'finish', reason: 'stop' }],
  ['a kept stop_token_id finishes: nothing crosses', { algorithm: alg(() => 2, keepSend) }, 11, { kind: 'finish', reason: 'stop' }],
  ['the token reaching the length limit commits and finishes', { maxLength: 5 }, 9, { kind: 'finish', reason: 'length', commit: 9 }],
  ['one below the limit stays', { maxLength: 6 }, 9, { kind: 'stay', commit: 9 }],
  ['discarding handoff commits nothing', { algorithm: alg(() => 2, dropSend) }, 9, { kind: 'handoff', to: 2, at: 2 }],
  ['kept handoff commits the token', { algorithm: alg(() => 2, keepSend) }, 9, { kind: 'handoff', to: 2, commit: 9 }],
  ['default send keeps', { algorithm: alg(() => 2) }, 9, { kind: 'handoff', to: 2, commit: 9 }],
  ['kept EOS finishes: nothing crosses', { algorithm: alg(() => 2, keepSend) }, EOS, { kind: 'finish', reason: 'stop' }],
  ['discarded EOS still hands off (the peer regenerates)', { algorithm: alg(() => 2, dropSend) }, EOS, { kind: 'handoff', to: 2 }],
  ['kept token at the length limit finishes', { algorithm: alg(() => 2, keepSend), maxLength: 5 }, 9, { kind: 'finish', reason: 'length', commit: 9 }],
  ['route out of range fails', { algorithm: alg(() => 3) }, 9, { kind: 'fail', fn: 'route' }],
  ['route not an integer fails', { algorithm: alg(() => 1.5) }, 9, { kind: 'fail', fn: 'route' }],
  [
    'route throwing fails with its message',
    {
      algorithm: alg(() => {
        throw new Error('boom');
      }),
    },
    9,
    { kind: 'fail', fn: 'route', message: 'boom' },
  ],
  [
    'send with a wrong anchor fails',
    {
      algorithm: alg(
        () => 2,
        (req) => ({ ...standardSend(req, true), anchor: 0 }),
      ),
    },
    9,
    { kind: 'fail', fn: 'send' },
  ],
  [
    'send missing the unseen suffix fails',
    {
      algorithm: alg(
        () => 2,
        (req) => ({ ...standardSend(req, false), tokens: [] }),
      ),
    },
    9,
    { kind: 'fail', fn: 'send' },
  ],
];

describe('routeRow', () => {
  it.each(cases)('%s', (_name, over, token, expected) => {
    const d = routeRow(view(over), sig(token), EOS_IDS, STOP);
    expect(d).toMatchObject(expected);
    if (expected.kind !== 'fail' && !('commit' in expected)) expect('commit' in d && d.commit !== undefined).toBe(false);
  });

  it('a handoff carries exactly the suffix the peer has not seen, anchored where its view ends', () => {
    const kept = routeRow(view({ algorithm: alg(() => 2, keepSend) }), sig(9), EOS_IDS, STOP);
    const dropped = routeRow(view({ algorithm: alg(() => 2, dropSend) }), sig(9), EOS_IDS, STOP);
    // model 2 has seen 2 of the 4 committed tokens
    expect(kept).toMatchObject({ kind: 'handoff', handoff: { anchor: 2, tokens: [7, 8, 9], keep: true, from: 1, to: 2 } });
    expect(dropped).toMatchObject({ kind: 'handoff', handoff: { anchor: 2, tokens: [7, 8], keep: false } });
  });

  it('route sees position, steps here, output count and a draw keyed by (seed, position, model)', () => {
    const seen: unknown[] = [];
    const a = alg((r) => (seen.push({ position: r.position, stepsHere: r.stepsHere, generated: r.generated, draw: r.draw }), 0));
    routeRow(view({ algorithm: a, stepsHere: 3, generated: 2, drawSeed: 7 }), sig(9), EOS_IDS, STOP);
    routeRow(view({ algorithm: a, stepsHere: 3, generated: 2, drawSeed: 7 }), sig(9), EOS_IDS, STOP);
    routeRow(view({ algorithm: a, stepsHere: 3, generated: 2, drawSeed: 8 }), sig(9), EOS_IDS, STOP);
    expect(seen[0]).toMatchObject({ position: 4, stepsHere: 3, generated: 2 });
    expect(seen[0]).toEqual(seen[1]);
    expect((seen[2] as { draw: number }).draw).not.toBe((seen[0] as { draw: number }).draw);
  });

  it('reads its view without changing it', () => {
    const v = view({ algorithm: alg(() => 2, keepSend) });
    const before = JSON.stringify(v);
    routeRow(v, sig(9), EOS_IDS, STOP);
    expect(JSON.stringify(v)).toBe(before);
  });
});
