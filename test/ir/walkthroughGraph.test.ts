// docs/walkthrough.md's graph, built as its steps say: the problems it names appear at those steps, and the finished graph compiles with no error.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileGraph } from '../../shared/ir/compileGraph.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const doc = fs.readFileSync(path.join(ROOT, 'docs/walkthrough.md'), 'utf8');
const CATALOG = [
  { name: 'small', heads: [] },
  { name: 'medium', heads: [] },
  { name: 'large', heads: [] },
];

type Node = { id: string; type: string; params: Record<string, unknown> };
const graph = (nodes: Node[], edges: [string, string, string, string][]) => ({
  schemaVersion: 1,
  kind: 'tokenrouter.graph',
  name: 'my-stitch',
  nodes: nodes.map((n, i) => ({ ...n, position: { x: 200 * i, y: 0 } })),
  edges: edges.map(([source, sourceHandle, target, targetHandle]) => ({
    id: `${source}.${sourceHandle}-${target}.${targetHandle}`,
    source,
    sourceHandle,
    target,
    targetHandle,
  })),
});
const codes = (r: ReturnType<typeof compileGraph>) => (r.ok ? [] : r.issues.map((i) => i.code));

const start: Node = { id: 'start', type: 'start', params: { model: 'small' } };
const entropy: Node = { id: 'entropy', type: 'entropy', params: { model: 'small' } };
const compare: Node = { id: 'unsure', type: 'compare', params: { op: '>', value: 0.05 } };
const handoff: Node = { id: 'toLarge', type: 'handoff', params: { model: 'small', to: 'large', keep: false, priority: 10 } };
const stay = (priority: number): Node => ({ id: 'stay', type: 'stay', params: { model: 'small', priority } });
const handBack: Node = { id: 'back', type: 'handBack', params: { model: 'large', to: 'small', after: 2, priority: 10 } };
const wires: [string, string, string, string][] = [
  ['entropy', 'out', 'unsure', 'a'],
  ['unsure', 'out', 'toLarge', 'when'],
];

describe('the walkthrough graph', () => {
  it('uses the values the page gives', () => {
    expect(doc).toContain('set **Value (b)** to `0.05`');
    expect(doc).toContain('**After N tokens** 2');
    expect(doc).toContain('**Priority** 10');
    expect(doc).toContain('**Stay** on `small` with **Priority** 20');
  });

  it('step 3: Start alone is missing a decision on small', () => {
    expect(codes(compileGraph(graph([start], []), CATALOG))).toContain('missing_decision');
  });

  it('step 4: a Stay tried before the hand-off shadows it', () => {
    const r = compileGraph(graph([start, entropy, compare, handoff, stay(5), handBack], wires), CATALOG);
    // a warning, on the node that never runs
    expect(r.issues.filter((i) => i.code === 'shadowed_decision').map((i) => i.nodeId)).toEqual(['toLarge']);
  });

  it('step 5: the finished graph compiles with no error or warning', () => {
    const r = compileGraph(graph([start, entropy, compare, handoff, stay(20), handBack], wires), CATALOG);
    expect(r.ok, JSON.stringify(r.ok ? null : r.issues)).toBe(true);
    if (r.ok) expect(r.issues).toEqual([]);
  });
});
