// Helpers over the shared seeded generator for reproducible random tests.
import { mulberry32, type Rng } from '../../shared/rng.ts';

export type { Rng };
export const rng = mulberry32;
export const int = (r: Rng, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
export const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
