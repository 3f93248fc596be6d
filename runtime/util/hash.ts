// Counter-based hashing: reproducible pseudo-random draws keyed by (seed, position, model), no hidden state.

/** murmur3's 32-bit finaliser: every input bit reaches every output bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** murmur3's per-block step: folds the 32-bit word k into the running hash h. */
export function murmurBlock(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) >>> 0;
}

/** 32-bit mix of two integers (murmur3 finaliser on a combined word). */
export function mix(a: number, b: number): number {
  return fmix32((Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35)) >>> 0);
}

/** Uniform draw in [0, 1) from three integer keys. */
export function draw3(a: number, b: number, c: number): number {
  return mix(mix(a, b), c) / 4294967296;
}

/** Stable 32-bit hash of a string (FNV-1a). */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
