// The one seeded pseudo-random generator (mulberry32) for simulations, generated traces and tests: small, fast, reproducible.

export type Rng = () => number;

/** Uniform draws in [0, 1) from a 32-bit seed; the same seed gives the same sequence everywhere. */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
