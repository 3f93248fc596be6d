// The frontier plot shapes each point by its paired test against large-only and lists only the marks it uses.
import { describe, expect, it } from 'vitest';
import { frontierSvg } from '../../runtime/eval/evaluate.ts';
import { pointsAgainst } from '../../runtime/eval/pairedStats.ts';

const n = 40;
const col = (right: number) => Array.from({ length: n }, (_, i) => i < right);
const entries = [
  { name: 'large-only', kind: 'single', accuracy: 30 / n, throughput_tok_s: 1000, correct: col(30) },
  { name: 'better', kind: 'token-level', accuracy: 1, throughput_tok_s: 2000, correct: col(40) },
  { name: 'worse', kind: 'token-level', accuracy: 10 / n, throughput_tok_s: 3000, correct: col(10) },
  { name: 'tie', kind: 'query-level', accuracy: 29 / n, throughput_tok_s: 1500, correct: col(29) },
];

describe('frontierSvg', () => {
  it('draws above as an up triangle, below as a down triangle, a tie as a circle and the reference as a diamond', () => {
    const points = pointsAgainst(entries, 'large-only');
    expect(points.map((p) => p.versus_reference)).toEqual(['reference', 'above', 'below', 'same']);
    const svg = frontierSvg(points);
    const titles = [...svg.matchAll(/<path d="([^"]+)"[^>]*><title>([^:]+):/g)].map((m) => [
      m[2],
      m[1][0],
      m[1].includes('a6 6') ? 'circle' : m[1].split('L').length,
    ]);
    expect(titles).toEqual([
      ['large-only', 'M', 4],
      ['better', 'M', 3],
      ['worse', 'M', 3],
      ['tie', 'M', 'circle'],
    ]);
    // Up triangle: apex above the centre; down triangle: apex below.
    const apex = (name: string) => {
      const d = new RegExp(`<path d="M([\\d.]+) ([\\d.]+)L[\\d.]+ ([\\d.]+)[^"]*"[^>]*><title>${name}:`).exec(svg)!;
      return Number(d[2]) < Number(d[3]) ? 'up' : 'down';
    };
    expect(apex('better')).toBe('up');
    expect(apex('worse')).toBe('down');
    for (const label of ['significantly above large-only', 'significantly below large-only', 'not different from large-only', 'large-only (the reference)'])
      expect(svg).toContain(label);
    expect(svg).not.toContain('untested');
    // Well-formed XML: every '<' opens a tag (a bare '<' in a label broke the committed plot once).
    expect(svg.replace(/<\/?[a-z][^>]*>/g, '')).not.toContain('<');
  });
});
