// Deterministic normal weights from a text seed: the same seed gives the same numbers on every machine and run.

/** cyrb128: four 32-bit words from a string, to seed the generator. */
function hash128(text: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  return [(h1 ^ h2 ^ h3 ^ h4) >>> 0, (h2 ^ h1) >>> 0, (h3 ^ h1) >>> 0, (h4 ^ h1) >>> 0];
}

/** sfc32: a small fast generator of uniform 32-bit words (passes PractRand to 2^60), seeded by hash128. */
function sfc32(seed: string): () => number {
  let [a, b, c, d] = hash128(seed);
  const next = () => {
    a |= 0;
    b |= 0;
    c |= 0;
    d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  for (let i = 0; i < 15; i++) next();
  return next;
}

/** `count` numbers drawn from N(0, std²) (Box-Muller), a function of `seed` alone. */
export function seededNormal(seed: string, count: number, std: number): Float32Array {
  const next = sfc32(seed);
  const out = new Float32Array(count);
  const TWO_PI = 2 * Math.PI;
  for (let i = 0; i < count; i += 2) {
    // (0, 1]: log never sees 0
    const u1 = (next() + 1) / 4294967296;
    const u2 = next() / 4294967296;
    const r = std * Math.sqrt(-2 * Math.log(u1));
    out[i] = r * Math.cos(TWO_PI * u2);
    if (i + 1 < count) out[i + 1] = r * Math.sin(TWO_PI * u2);
  }
  return out;
}
