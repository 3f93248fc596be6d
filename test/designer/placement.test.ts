// Click-to-add placement: nodes added one after another at the same view centre land apart, near it, never on top of each other.
import { describe, expect, it } from 'vitest';
import type { GraphDocument } from '../../shared/ir/graph.ts';
import { addNode } from '../../designer/src/designer/graphEdits.ts';
import { freeSpot, nodeBoxes, UNMEASURED, type Box } from '../../designer/src/designer/placement.ts';

const empty: GraphDocument = { schemaVersion: 1, kind: 'tokenrouter.graph', name: 't', nodes: [], edges: [] };
const overlap = (a: Box, b: Box) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
const centre = { x: 400, y: 300 };

function addInARow(n: number, measured: Record<string, { width: number; height: number }> = {}): GraphDocument {
  let g = empty;
  for (let i = 0; i < n; i++) g = addNode(g, 'entropy', freeSpot(centre, nodeBoxes(g, measured))).graph;
  return g;
}

describe('freeSpot', () => {
  it('puts the first node centred on the point', () => {
    expect(freeSpot(centre, [])).toEqual({ x: centre.x - UNMEASURED.width / 2, y: centre.y - UNMEASURED.height / 2 });
  });

  it('gives three nodes added in a row three non-overlapping boxes near the centre', () => {
    const boxes = nodeBoxes(addInARow(3), {});
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) expect(overlap(boxes[i], boxes[j]), `${i} and ${j}`).toBe(false);
    for (const b of boxes) expect(Math.hypot(b.x + b.width / 2 - centre.x, b.y + b.height / 2 - centre.y)).toBeLessThan(400);
  });

  it('keeps clear of the measured size of a node larger than the default', () => {
    const big = { entropy1: { width: 260, height: 400 } };
    const [a, b] = nodeBoxes(addInARow(2, big), big);
    expect(overlap(a, b)).toBe(false);
  });

  it('twenty nodes around one centre never overlap', () => {
    const boxes = nodeBoxes(addInARow(20), {});
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) expect(overlap(boxes[i], boxes[j])).toBe(false);
  });

  it('beyond its search it still finds room, right of everything', () => {
    const wall: Box = { x: -5000, y: -5000, width: 10_000, height: 10_000 };
    const p = freeSpot(centre, [wall]);
    expect(overlap({ ...p, ...UNMEASURED }, wall)).toBe(false);
  });

  it('keeps clear of the edges’ lines: no edge runs through the new node (issue 53 item 16)', () => {
    // an edge straight across the centre, left to right
    const line = Array.from({ length: 121 }, (_, k) => ({ x: centre.x - 600 + 10 * k, y: centre.y }));
    const p = freeSpot(centre, [], UNMEASURED, line);
    const box = { ...p, width: UNMEASURED.width, height: UNMEASURED.height + 70 };
    for (const q of line) expect(q.x > box.x && q.x < box.x + box.width && q.y > box.y && q.y < box.y + box.height).toBe(false);
    // without the edge it would have sat right on it
    const q = freeSpot(centre, []);
    expect(q.y < centre.y && centre.y < q.y + UNMEASURED.height).toBe(true);
  });
});
