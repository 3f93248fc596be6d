// Constrained requests through real engines (two real-shaped Qwen3 runners with random weights: only the mask makes the output valid), across handoffs, discards and recomputes.
import Ajv from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rStitch } from '../../examples/algorithms/rStitch.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import type { Algorithm } from '../../shared/algorithm.ts';
import { alternate } from './alternate.ts';
import type { Constraint } from '../../shared/protocol/constraint.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { everyN } from '../core/everyN.ts';
import { realShapeFolder } from '../support/realShape/realShapeFolder.ts';

const SCHEMAS = [
  {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 3, maxLength: 12 },
      age: { type: 'integer', minimum: 0, maximum: 150 },
      tags: { type: 'array', items: { enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 4 },
      ok: { type: 'boolean' },
    },
    required: ['name', 'age', 'tags', 'ok'],
    additionalProperties: false,
  },
  {
    type: 'object',
    properties: { point: { $ref: '#/$defs/pt' }, path: { type: 'array', items: { $ref: '#/$defs/pt' }, maxItems: 3 } },
    required: ['point', 'path'],
    additionalProperties: false,
    $defs: {
      pt: {
        type: 'object',
        properties: { x: { type: 'integer', minimum: -99, maximum: 99 }, y: { type: 'integer', minimum: 0, maximum: 9999 } },
        required: ['x', 'y'],
        additionalProperties: false,
      },
    },
  },
];
const REGEX = '[a-z]{3,8}-[0-9]{2,5}(\\.[a-z]{2,3})?';
const CHOICES = ['yes', 'no', 'ça dépend', 'say "maybe"'];

let small: OnnxRunner;
let large: OnnxRunner;
let tok: TextTokenizer;
const ajv = new Ajv({ strict: false });

beforeAll(async () => {
  const dir = realShapeFolder('qwen3-tiny').dir;
  tok = TextTokenizer.fromFolder(loadModelFolder(dir));
  [small, large] = await Promise.all([OnnxRunner.load(dir, { name: 'small' }), OnnxRunner.load(dir, { name: 'large' })]);
}, 180_000);
afterAll(async () => {
  await small?.close();
  await large?.close();
});

interface Run {
  results: RequestResult[];
  events: TraceEvent[];
  evictions: number;
}

/** Submits each constraint `n` times (sampled, seeds differ) on a fresh cluster and waits for all. */
async function serve(
  algorithm: Algorithm<unknown>,
  constraints: Constraint[],
  n: number,
  opts: { kvSmall?: number; retainState?: boolean } = {},
): Promise<Run> {
  const events: TraceEvent[] = [];
  const cluster = new Cluster({
    clock: createRealClock(),
    mode: 'async-immediate',
    checkInvariants: true,
    retainState: opts.retainState ?? true,
    tokenizer: tok,
    trace: { emit: (e) => events.push(e) },
    models: [
      { name: 'small', runner: small, maxBatch: 8, kvCapacityTokens: opts.kvSmall },
      { name: 'large', runner: large, maxBatch: 8 },
    ],
  });
  const prompt = tok.encode('Answer:', false);
  const jobs = constraints.flatMap((constraint, k) =>
    Array.from(
      { length: n },
      (_, i) => cluster.submit({ prompt, maxTokens: 120, algorithm, constraint, sampling: { temperature: 1, topP: 1, topK: 0, seed: 1000 * k + i + 1 } }).done,
    ),
  );
  const results = await Promise.all(jobs);
  const evictions = cluster.inProcessEngines.reduce((s, l) => s + l.stats.evictions, 0);
  return { results, events, evictions };
}

const text = (r: RequestResult) => (r.tokens.length > 0 ? tok.decode(r.tokens) : '');

function expectValid(r: RequestResult, c: Constraint): void {
  const out = text(r);
  const ctx = `${r.id} ${JSON.stringify(out)} ${r.error?.message ?? ''}`;
  expect(r.status, ctx).toBe('done');
  expect(r.finishReason, ctx).toBe('stop');
  const g = c.grammar;
  if (g.kind === 'json_schema') {
    const value = JSON.parse(out) as unknown;
    expect(ajv.validate(JSON.parse(g.schema), value), `${ctx} ${ajv.errorsText()}`).toBe(true);
  } else if (g.kind === 'regex') expect(out, ctx).toMatch(new RegExp(`^(?:${g.pattern})$`));
  else if (g.kind === 'choice') expect(g.choices, ctx).toContain(out);
}

const ALL: Constraint[] = [
  ...SCHEMAS.map((s) => ({ grammar: { kind: 'json_schema' as const, schema: JSON.stringify(s) } })),
  { grammar: { kind: 'regex', pattern: REGEX } },
  { grammar: { kind: 'choice', choices: CHOICES } },
];

describe('grammars through the engines', () => {
  it('R-Stitch: every output is valid, with handoffs between the models', async () => {
    const { results, events } = await serve(rStitch({ tau: 0.5 }) as Algorithm<unknown>, ALL, 3);
    for (const [i, r] of results.entries()) expectValid(r, ALL[Math.floor(i / 3)]);
    expect(results.reduce((s, r) => s + r.handoffs, 0)).toBeGreaterThan(0);
    const batches = events.filter((e) => e.type === 'batch');
    expect(batches.some((b) => (b.maskedRows ?? 0) > 0)).toBe(true);
    for (const e of events) if (e.type === 'request-end') expect(e.maskedFrom).toBe(0);
  }, 300_000);

  it('a handoff on every token: strings, numbers and arrays continue on the other engine mid-value', async () => {
    const { results } = await serve(alternate() as Algorithm<unknown>, ALL, 2);
    let longest = 0;
    for (const [i, r] of results.entries()) {
      expectValid(r, ALL[Math.floor(i / 2)]);
      // every token after the first was committed on the other engine than the one before
      expect(r.handoffs).toBeGreaterThanOrEqual(r.tokens.length - 1);
      for (let k = 1; k < r.producedBy.length; k++) expect(r.producedBy[k]).not.toBe(r.producedBy[k - 1]);
      longest = Math.max(longest, r.tokens.length);
    }
    // JSON answers of many tokens: their strings, numbers and arrays cross engines inside them
    expect(longest).toBeGreaterThan(15);
  }, 300_000);

  it('discards: the sender drew a token it never committed; the receiver masks from the committed sequence', async () => {
    const { results } = await serve(everyN(2) as Algorithm<unknown>, ALL, 2);
    for (const [i, r] of results.entries()) expectValid(r, ALL[Math.floor(i / 2)]);
    expect(results.reduce((s, r) => s + r.discarded, 0)).toBeGreaterThan(0);
  }, 300_000);

  it('evict-and-recompute under memory pressure, and standard serving (every return a new request): the state is rebuilt from the tokens', async () => {
    const pressed = await serve(everyN(2) as Algorithm<unknown>, ALL, 3, { kvSmall: 160 });
    for (const [i, r] of pressed.results.entries()) expectValid(r, ALL[Math.floor(i / 3)]);
    expect(pressed.evictions).toBeGreaterThan(0);
    const standard = await serve(alternate() as Algorithm<unknown>, ALL.slice(0, 2), 2, { retainState: false });
    for (const [i, r] of standard.results.entries()) expectValid(r, ALL[Math.floor(i / 2)]);
  }, 300_000);

  it('a grammar the engine cannot compile fails the request clearly (the API refuses it before)', async () => {
    const cluster = new Cluster({
      clock: createRealClock(),
      tokenizer: tok,
      models: [
        { name: 'small', runner: small },
        { name: 'large', runner: large },
      ],
    });
    const r = await cluster.submit({
      prompt: [1, 2],
      maxTokens: 5,
      algorithm: alternate() as Algorithm<unknown>,
      constraint: { grammar: { kind: 'regex', pattern: '(' } },
    }).done;
    expect(r.status).toBe('failed');
    expect(r.error?.message).toMatch(/regex does not compile/);
  }, 60_000);
});
