// Seeded random grammar masks for the masked-draw tests and benches.
import { maskWords } from '../../runtime/runner/maskedRow.ts';

/** A seeded uniform generator in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = (seed * 2654435761) >>> 0 || 1;
  return () => {
    a ^= a << 13;
    a ^= a >>> 17;
    a ^= a << 5;
    return (a >>> 0) / 4294967296;
  };
}

/** A mask over V tokens allowing each with probability `density` (at least one token always). */
export function randomMask(V: number, density: number, seed: number): Int32Array {
  const rnd = seededRandom(seed);
  const mask = new Int32Array(maskWords(V));
  const set = (t: number) => (mask[t >>> 5] |= 1 << (t & 31));
  if (density * V < 64) {
    const n = Math.max(1, Math.round(density * V));
    for (let k = 0; k < n; k++) set(Math.floor(rnd() * V));
  } else for (let t = 0; t < V; t++) if (rnd() < density) set(t);
  set(Math.floor(rnd() * V));
  return mask;
}

/** A mask allowing exactly `ids`. */
export function maskOf(V: number, ids: readonly number[]): Int32Array {
  const mask = new Int32Array(maskWords(V));
  for (const t of ids) mask[t >>> 5] |= 1 << (t & 31);
  return mask;
}
