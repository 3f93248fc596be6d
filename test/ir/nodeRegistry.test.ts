// The product's node registry: every node module's canvas summary, and the cross-references inside a spec.
import { describe, expect, it } from 'vitest';
import { defaultParams, NODE_REGISTRY, nodeSpec } from '../../shared/ir/nodeRegistry.ts';

/** Summaries of every type at its defaults, as the canvas showed them before the modules took them over. */
const SUMMARIES: Record<string, string> = {
  start: 'entry · small',
  entropy: 'on small',
  maxProb: 'on small',
  margin: 'on small',
  tokenProb: 'on small',
  head: 'citer · small',
  sampledToken: 'on small',
  distribution: 'top-8 · small',
  stepsHere: 'on small',
  position: 'on small',
  generated: 'on small',
  draw: 'on small',
  constant: '0.03',
  flag: 'true',
  compare: 'a > 0.03',
  and: '',
  or: '',
  not: '',
  arith: 'a * 1',
  minMax: 'max(a, b)',
  tokenMatch: 'matches nothing',
  topKMass: 'k = 2',
  probOf: '',
  counter: 'from 0, step 1',
  movingAverage: 'α 0.5, from 0',
  stay: 'on small · p10',
  handoff: 'small → large · discard · p10',
  handBack: 'large → small after 1 · p10',
  drawModel: 'on small · small 0.5 · medium 0.3 · large 0.2',
  receiveAccept: 'on small',
  receiveCommit: 'on small',
};

describe('node registry', () => {
  it('holds every node type once, in palette order, each summarising its defaults', () => {
    expect(NODE_REGISTRY.defs.map((d) => d.type)).toEqual(Object.keys(SUMMARIES));
    for (const d of NODE_REGISTRY.defs) expect([d.type, d.summary(defaultParams(d.type), new Set())]).toEqual([d.type, SUMMARIES[d.type]]);
  });

  it('summarises what the parameters and connections say', () => {
    const summary = (type: string, params: Record<string, unknown>, connected: string[] = []) =>
      nodeSpec(type)!.summary({ ...defaultParams(type), ...(params as object) }, new Set(connected));
    expect(summary('compare', { op: '<', value: 0.1234567 })).toBe('a < 0.123457');
    expect(summary('arith', { op: '/' }, ['b'])).toBe('a / b');
    expect(summary('tokenMatch', { ids: [1, 2, 3, 4, 5], text: 'x' })).toBe('ids 1,2,3,4… or “x”');
    expect(summary('drawModel', { weights: { small: 0, large: 1 / 3 } })).toBe('on small · large 0.333333');
    expect(summary('receiveCommit', { reset: ['c1', 'c2'] })).toBe('on small · reset c1, c2');
  });

  it('names only real, optional inputs as what replaces a parameter', () => {
    const replaced = NODE_REGISTRY.defs.flatMap((d) =>
      d.params.flatMap((p) => (p.kind === 'number' && p.replacedBy ? [[d.type, d.inputs.find((i) => i.name === p.replacedBy)?.optional]] : [])),
    );
    expect(replaced).toEqual([
      ['compare', true],
      ['arith', true],
    ]);
  });

  it('refuses defaults for a type it does not hold', () => {
    expect(() => defaultParams('bogus')).toThrow(/unknown node type "bogus"/);
  });
});
