// Open-addressing hash from packed state keys (integers < 2^53 held in doubles) to dense state indices.
// A JS Map keyed by doubles boxes every key and dominated chain-build time; this keeps keys unboxed.

export class StateTable {
  private keys: Float64Array;
  private vals: Int32Array;
  private mask: number;
  size = 0;

  constructor(expected = 1 << 12) {
    let cap = 16;
    while (cap < expected * 2) cap *= 2;
    this.keys = new Float64Array(cap).fill(-1);
    this.vals = new Int32Array(cap);
    this.mask = cap - 1;
  }

  private static hash(key: number): number {
    // Mix the high and low 32-bit halves; keys are non-negative integers.
    const lo = key >>> 0;
    const hi = Math.floor(key / 4294967296) >>> 0;
    let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    return (h ^ (h >>> 16)) >>> 0;
  }

  /** Index of `key`, or -1. */
  get(key: number): number {
    let slot = StateTable.hash(key) & this.mask;
    for (;;) {
      const k = this.keys[slot];
      if (k === key) return this.vals[slot];
      if (k === -1) return -1;
      slot = (slot + 1) & this.mask;
    }
  }

  /** Index of `key`, inserting it with index `size` if absent (then `size` grows by one). */
  getOrInsert(key: number): number {
    if ((this.size + 1) * 2 > this.keys.length) this.grow();
    let slot = StateTable.hash(key) & this.mask;
    for (;;) {
      const k = this.keys[slot];
      if (k === key) return this.vals[slot];
      if (k === -1) {
        this.keys[slot] = key;
        this.vals[slot] = this.size;
        return this.size++;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  private grow(): void {
    const oldK = this.keys;
    const oldV = this.vals;
    this.keys = new Float64Array(oldK.length * 2).fill(-1);
    this.vals = new Int32Array(oldK.length * 2);
    this.mask = this.keys.length - 1;
    for (let s = 0; s < oldK.length; s++) {
      const k = oldK[s];
      if (k === -1) continue;
      let slot = StateTable.hash(k) & this.mask;
      while (this.keys[slot] !== -1) slot = (slot + 1) & this.mask;
      this.keys[slot] = k;
      this.vals[slot] = oldV[s];
    }
  }
}
