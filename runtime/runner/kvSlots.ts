// KV slot copies over [B, kv, T, hd] tensors: which slots of a row are valid, and copying them row to row.

/** [start, end) runs of valid slots among the first T of row `row` of a [B, stride] mask. */
export function validRuns(mask: Uint8Array, row: number, T: number, stride = T): [number, number][] {
  const runs: [number, number][] = [];
  let s = -1;
  for (let t = 0; t < T; t++) {
    const on = mask[row * stride + t] !== 0;
    if (on && s < 0) s = t;
    else if (!on && s >= 0) {
      runs.push([s, t]);
      s = -1;
    }
  }
  if (s >= 0) runs.push([s, T]);
  return runs;
}

/** The runs covering only the first `n` slots of `runs` (a cache's first n tokens, in order). */
export function firstSlots(runs: readonly [number, number][], n: number): [number, number][] {
  const out: [number, number][] = [];
  for (const [s, e] of runs) {
    if (n <= 0) break;
    const take = Math.min(e - s, n);
    out.push([s, s + take]);
    n -= take;
  }
  return out;
}

/** Copies the valid slots (runs) of one row of a [B, kv, srcT, hd] tensor into slots dstStart.. of a row of [B, kv, dstT, hd]. */
export function copyKv(
  src: Float32Array,
  srcRow: number,
  srcT: number,
  runs: readonly [number, number][],
  dst: Float32Array,
  dstRow: number,
  dstT: number,
  dstStart: number,
  kv: number,
  hd: number,
): void {
  for (let h = 0; h < kv; h++) {
    const sb = (srcRow * kv + h) * srcT * hd;
    let d = ((dstRow * kv + h) * dstT + dstStart) * hd;
    for (const [s, e] of runs) {
      dst.set(src.subarray(sb + s * hd, sb + e * hd), d);
      d += (e - s) * hd;
    }
  }
}
