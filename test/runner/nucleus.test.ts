// The draw under min-p / top-k / top-p: the histogram path equals a full sort, and the candidates' path equals it whenever it answers.
import { describe, expect, it } from 'vitest';
import { BAND_MIN_V, drawCounts, drawExact, drawFromCandidates } from '../../runtime/runner/nucleus.ts';
import type { SamplingParams } from '../../runtime/runner/modelRunner.ts';

/** The rule written plainly: rank by weight (ties by id), cut, then inverse CDF over the kept set in id order. */
function reference(w: Float32Array, s: SamplingParams, u: number): number {
  const order = Array.from(w.keys()).sort((a, b) => w[b] - w[a] || a - b);
  let m = w.length;
  if ((s.minP ?? 0) > 0) m = order.filter((i) => w[i] >= (s.minP ?? 0) * w[order[0]]).length;
  if (s.topK > 0) m = Math.min(m, s.topK);
  let mass = 0;
  for (let j = 0; j < m; j++) mass += w[order[j]];
  if (s.topP < 1) {
    let acc = 0;
    let k = 0;
    while (k < m) {
      acc += w[order[k++]];
      if (acc >= s.topP * mass) break;
    }
    m = k;
    mass = acc;
  }
  const kept = order.slice(0, m).sort((a, b) => a - b);
  let acc = 0;
  for (const i of kept) {
    acc += w[i];
    if (acc > u * mass) return i;
  }
  return kept[kept.length - 1];
}

/** Seeded rows: flat (std 0.3, most of the vocabulary in the nucleus) or peaked (a few tokens hold it), with ties. */
function row(V: number, seed: number, kind: 'flat' | 'peaked'): Float32Array {
  let a = seed * 2654435761;
  const rnd = (): number => {
    a = (a * 1103515245 + 12345) >>> 0;
    return a / 4294967296;
  };
  const x = Float64Array.from({ length: V }, () => {
    const g = Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
    return kind === 'flat' ? 0.3 * g : 3 * g;
  });
  x[7] = x[11]; // a tie
  const max = Math.max(...x);
  return Float32Array.from(x, (v) => Math.exp(v - max));
}

const cases: Partial<SamplingParams>[] = [
  { topP: 0.9 },
  { topP: 0.5 },
  { topK: 5 },
  { topK: 300 },
  { minP: 0.1 },
  { minP: 0.6, topP: 0.8 },
  { topK: 40, topP: 0.7 },
  { topP: 0.999 },
];

describe('drawExact', () => {
  it('equals a full sort over flat and peaked rows, every cut and many uniforms', () => {
    for (const kind of ['flat', 'peaked'] as const) {
      for (let seed = 1; seed <= 4; seed++) {
        const w = row(3000, seed, kind);
        for (const c of cases) {
          const s: SamplingParams = { temperature: 1, topP: 1, topK: 0, seed: 0, ...c };
          for (const u of [0, 0.1, 0.37, 0.5, 0.81, 0.9999]) expect(drawExact(w, s, u)).toBe(reference(w, s, u));
        }
      }
    }
  });
});

describe('drawExact over a long row (top_p alone: a sampled band, else the histogram)', () => {
  it('equals a full sort on flat rows (the band holds the cut) and peaked ones (it may not), with ties across the band', () => {
    const V = BAND_MIN_V * 3 + 5;
    const used = { ...drawCounts };
    for (const kind of ['flat', 'peaked'] as const) {
      const w = row(V, 9, kind);
      // ties spread over the row: equal weights ranked by id, inside the band as anywhere
      for (let i = 100; i < V; i += 997) w[i] = w[50];
      let z = 0;
      for (const x of w) z += x;
      for (const topP of [0.9, 0.5, 0.999, 0.2]) {
        const s: SamplingParams = { temperature: 1, topP, topK: 0, seed: 0 };
        for (const u of [0, 0.13, 0.5, 0.77, 0.9999]) {
          const want = reference(w, s, u);
          expect(drawExact(w, s, u, z)).toBe(want);
          expect(drawExact(w, s, u)).toBe(want);
        }
      }
    }
    // both ways were taken
    expect(drawCounts.band - used.band).toBeGreaterThan(20);
    expect(drawCounts.histogram - used.histogram).toBeGreaterThan(0);
  });
});

describe('drawFromCandidates', () => {
  it('answers as drawExact does whenever it answers, and hands flat nuclei over to it', () => {
    let answered = 0;
    let handed = 0;
    for (const kind of ['flat', 'peaked'] as const) {
      for (let seed = 1; seed <= 4; seed++) {
        const w = row(3000, seed, kind);
        let z = 0;
        for (const x of w) z += x;
        const order = Array.from(w.keys())
          .sort((a, b) => w[b] - w[a] || a - b)
          .slice(0, 64);
        for (const c of cases) {
          const s: SamplingParams = { temperature: 1, topP: 1, topK: 0, seed: 0, ...c };
          for (const u of [0, 0.37, 0.9999]) {
            const t = drawFromCandidates(
              order,
              order.map((i) => w[i]),
              order.length,
              z,
              w.length,
              s,
              u,
            );
            if (t < 0) handed++;
            else {
              answered++;
              expect(t).toBe(drawExact(w, s, u, z));
            }
          }
        }
      }
    }
    expect(answered).toBeGreaterThan(20);
    expect(handed).toBeGreaterThan(20);
  });

  it('over the whole vocabulary never hands over', () => {
    const w = row(50, 3, 'flat');
    const order = Array.from(w.keys()).sort((a, b) => w[b] - w[a] || a - b);
    let z = 0;
    for (const x of w) z += x;
    for (const c of cases) {
      const s: SamplingParams = { temperature: 1, topP: 1, topK: 0, seed: 0, ...c };
      expect(
        drawFromCandidates(
          order,
          order.map((i) => w[i]),
          50,
          z,
          50,
          s,
          0.42,
        ),
      ).toBe(reference(w, s, 0.42));
    }
  });
});
