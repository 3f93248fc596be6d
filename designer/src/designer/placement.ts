// Where click-to-add puts a node: the free spot nearest the view's centre, clear of nodes and of the edges' lines, so nodes added in a row never pile up or sit across an edge. Pure.
import type { GraphDocument } from '../../../shared/ir/graph.ts';

export interface Size {
  width: number;
  height: number;
}

export interface Box extends Size {
  x: number;
  y: number;
}

/** A node React Flow has not measured yet (the new one included) counts as about the largest common node. */
export const UNMEASURED: Size = { width: 240, height: 110 };
/** Room kept below every node for its issue callout, which hangs outside the node's own box. */
const CALLOUT = 70;
const GAP = 20;
const STEP = 20;
const REACH = 50;

/** Grid offsets within REACH steps, nearest first; ties go right and down, the way a graph reads. */
const OFFSETS: readonly (readonly [number, number])[] = (() => {
  const all: [number, number][] = [];
  for (let dx = -REACH; dx <= REACH; dx++) for (let dy = -REACH; dy <= REACH; dy++) all.push([dx, dy]);
  return all.sort(([ax, ay], [bx, by]) => ax * ax + ay * ay - (bx * bx + by * by) || bx - ax || by - ay);
})();

const crowds = (a: Box, b: Box): boolean => a.x < b.x + b.width + GAP && b.x < a.x + a.width + GAP && a.y < b.y + b.height + GAP && b.y < a.y + a.height + GAP;

export interface Point {
  x: number;
  y: number;
}

/** A point of an edge's line under (or GAP from) the box: a node there would have the edge run through it. */
const covers = (b: Box, p: Point): boolean => p.x > b.x - GAP && p.x < b.x + b.width + GAP && p.y > b.y - GAP && p.y < b.y + b.height + GAP;

/** The boxes the graph's nodes take on the canvas (callout included), at their measured size where known. */
export function nodeBoxes(g: GraphDocument, measured: Readonly<Record<string, Size>>): Box[] {
  return g.nodes.map((n) => {
    const { width, height } = measured[n.id] ?? UNMEASURED;
    return { ...n.position, width, height: height + CALLOUT };
  });
}

/** Top-left for a node of `size` centred as near `centre` as the grid allows, it and its callout GAP clear of every taken box and of the `avoid` points (the edges' lines). */
export function freeSpot(
  centre: { x: number; y: number },
  taken: readonly Box[],
  size: Size = UNMEASURED,
  avoid: readonly Point[] = [],
): { x: number; y: number } {
  const x0 = Math.round(centre.x - size.width / 2);
  const y0 = Math.round(centre.y - size.height / 2);
  for (const [dx, dy] of OFFSETS) {
    const box = { x: x0 + dx * STEP, y: y0 + dy * STEP, width: size.width, height: size.height + CALLOUT };
    if (!taken.some((t) => crowds(box, t)) && !avoid.some((p) => covers(box, p))) return { x: box.x, y: box.y };
  }
  // A crowded neighbourhood: right of everything is always free.
  return { x: Math.max(...taken.map((t) => t.x + t.width)) + GAP, y: y0 };
}
