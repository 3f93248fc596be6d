// Weight encodings the quantized exports use: symmetric int8 per column (DequantizeLinear), 4-bit blocks (MatMulNBits), float16 bits.

/**
 * int8 per output column of a [K, N] MatMul weight: q = round(w / scale), scale = max|w| / 127
 * (DequantizeLinear with axis 1 and no zero point gives back q × scale).
 */
export function quantizeInt8PerColumn(w: Float32Array, K: number, N: number): { q: Int8Array; scale: Float32Array } {
  if (w.length !== K * N) throw new Error(`quantizeInt8PerColumn: ${w.length} weights are not [${K}, ${N}]`);
  const scale = new Float32Array(N);
  for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) scale[n] = Math.max(scale[n], Math.abs(w[k * N + n]));
  for (let n = 0; n < N; n++) scale[n] = scale[n] / 127 || 1;
  const q = new Int8Array(K * N);
  for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) q[k * N + n] = Math.max(-127, Math.min(127, Math.round(w[k * N + n] / scale[n])));
  return { q, scale };
}

/** int8 per row of an [N, K] table (DequantizeLinear with axis 0): the tied LM head, stored as the embedding is. */
export function quantizeInt8PerRow(w: Float32Array, N: number, K: number): { q: Int8Array; scale: Float32Array } {
  if (w.length !== K * N) throw new Error(`quantizeInt8PerRow: ${w.length} weights are not [${N}, ${K}]`);
  const scale = new Float32Array(N);
  const q = new Int8Array(K * N);
  for (let n = 0; n < N; n++) {
    let m = 0;
    for (let k = 0; k < K; k++) m = Math.max(m, Math.abs(w[n * K + k]));
    const s = m / 127 || 1;
    scale[n] = s;
    for (let k = 0; k < K; k++) q[n * K + k] = Math.max(-127, Math.min(127, Math.round(w[n * K + k] / s)));
  }
  return { q, scale };
}

/**
 * com.microsoft MatMulNBits' layout for 4 bits: B [N, ceil(K / block), block / 2] uint8, two values a
 * byte (the first in the low nibble), each stored as q + 8 with q in [-8, 7] (the default zero point
 * 8), and one float scale a block ([N × blocks]). `rowMajorNK`: w is [N, K] (a tied table) rather than [K, N].
 */
export function quantizeQ4(
  w: Float32Array,
  K: number,
  N: number,
  block: number,
  rowMajorNK = false,
): { packed: Uint8Array; scales: Float32Array; blocks: number } {
  if (w.length !== K * N) throw new Error(`quantizeQ4: ${w.length} weights are not ${K} × ${N}`);
  if (block < 16 || (block & (block - 1)) !== 0) throw new Error(`quantizeQ4: block ${block} must be a power of 2 ≥ 16`);
  const blocks = Math.ceil(K / block);
  const half = block / 2;
  const packed = new Uint8Array(N * blocks * half);
  const scales = new Float32Array(N * blocks);
  // one row of K values per output n, contiguous, whichever way w is laid out
  const row = new Float32Array(blocks * block);
  for (let n = 0; n < N; n++) {
    if (rowMajorNK) row.set(w.subarray(n * K, (n + 1) * K));
    else for (let k = 0; k < K; k++) row[k] = w[k * N + n];
    for (let b = 0; b < blocks; b++) {
      let m = 0;
      for (let j = b * block; j < (b + 1) * block; j++) m = Math.max(m, Math.abs(row[j]));
      const s = m / 7 || 1;
      scales[n * blocks + b] = s;
      const base = (n * blocks + b) * half;
      for (let j = 0; j < half; j++) {
        const lo = Math.max(-8, Math.min(7, Math.round(row[b * block + 2 * j] / s))) + 8;
        const hi = Math.max(-8, Math.min(7, Math.round(row[b * block + 2 * j + 1] / s))) + 8;
        packed[base + j] = lo | (hi << 4);
      }
    }
  }
  return { packed, scales, blocks };
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 half-precision bits of each value (round to nearest even; overflow to ±Infinity). */
export function float16Bits(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) {
    f32[0] = values[i];
    const x = u32[0];
    const sign = (x >>> 16) & 0x8000;
    const exp = (x >>> 23) & 0xff;
    let mant = x & 0x7fffff;
    if (exp === 0xff) {
      out[i] = sign | 0x7c00 | (mant ? 0x200 : 0);
      continue;
    }
    const e = exp - 127 + 15;
    if (e >= 0x1f) {
      out[i] = sign | 0x7c00;
    } else if (e <= 0) {
      if (e < -10) {
        out[i] = sign;
        continue;
      }
      mant |= 0x800000;
      const shift = 14 - e;
      let h = mant >>> shift;
      const rem = mant & ((1 << shift) - 1);
      const half = 1 << (shift - 1);
      if (rem > half || (rem === half && h & 1)) h++;
      out[i] = sign | h;
    } else {
      let h = (e << 10) | (mant >>> 13);
      const rem = mant & 0x1fff;
      if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
      out[i] = sign | h;
    }
  }
  return out;
}
