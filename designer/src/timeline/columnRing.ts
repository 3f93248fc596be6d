// Columnar ring buffer over typed arrays: grows by doubling up to a cap, then the owner evicts the oldest rows.

type TypedArray = Float64Array | Float32Array | Int32Array | Uint32Array | Int16Array | Uint16Array | Uint8Array;
type TypedArrayCtor = new (length: number) => TypedArray;
export type ColumnSchema = Record<string, TypedArrayCtor>;
export type Columns<S extends ColumnSchema> = { [K in keyof S]: InstanceType<S[K]> };

const pow2 = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(2, n)));

/**
 * Rows are addressed three ways: logical index (0 = oldest retained), physical index into the
 * column arrays (`phys(i)`), and absolute id (count of rows ever pushed before it; stable while
 * the row is retained, so other structures can point at it).
 */
export class ColumnRing<S extends ColumnSchema> {
  cols: Columns<S>;
  /** Allocated rows (a power of two, so physical index = (head + i) & mask). */
  capacity: number;
  mask: number;
  head = 0;
  length = 0;
  /** Rows evicted so far = absolute id of the oldest retained row. */
  evicted = 0;

  constructor(
    private readonly schema: S,
    readonly maxLength: number,
    initial = 1024,
  ) {
    this.capacity = Math.min(pow2(initial), pow2(maxLength));
    this.mask = this.capacity - 1;
    this.cols = this.alloc(this.capacity);
  }

  private alloc(n: number): Columns<S> {
    const cols = {} as Columns<S>;
    for (const k of Object.keys(this.schema) as (keyof S)[]) cols[k] = new this.schema[k](n) as InstanceType<S[typeof k]>;
    return cols;
  }

  /** Absolute id the next pushed row will get. */
  get nextAbs(): number {
    return this.evicted + this.length;
  }

  phys(i: number): number {
    return (this.head + i) & this.mask;
  }

  /** Physical index of an absolute id, or -1 when that row was evicted (or never existed). */
  physOfAbs(abs: number): number {
    const i = abs - this.evicted;
    return i >= 0 && i < this.length ? this.phys(i) : -1;
  }

  /** Appends a row and returns its physical index for the caller to fill. The caller evicts first when full. */
  push(): number {
    if (this.length >= this.maxLength) throw new Error('ColumnRing full: evict before pushing');
    if (this.length === this.capacity) this.grow();
    const p = this.phys(this.length);
    this.length++;
    return p;
  }

  /** Drops the oldest row. */
  shift(): void {
    if (this.length === 0) return;
    this.head = (this.head + 1) & this.mask;
    this.length--;
    this.evicted++;
  }

  private grow(): void {
    const next = this.capacity * 2;
    const cols = this.alloc(next);
    for (const k of Object.keys(this.schema) as (keyof S)[]) {
      const src = this.cols[k];
      const dst = cols[k];
      // Copy in logical order so that the new head is 0.
      const first = src.subarray(this.head, Math.min(this.capacity, this.head + this.length));
      dst.set(first as never, 0);
      if (first.length < this.length) dst.set(src.subarray(0, this.length - first.length) as never, first.length);
    }
    this.cols = cols;
    this.head = 0;
    this.capacity = next;
    this.mask = next - 1;
  }

  /** Bytes held by the column arrays (for the memory-bound tests and the page's status line). */
  bytes(): number {
    let n = 0;
    for (const k of Object.keys(this.cols)) n += this.cols[k as keyof S].byteLength;
    return n;
  }

  /**
   * First logical index whose value in a non-decreasing column is >= t (length when none).
   * Used with running-max columns so that slightly out-of-order input still searches correctly.
   */
  lowerBound(col: keyof S, t: number): number {
    const c = this.cols[col];
    let lo = 0;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (c[(this.head + mid) & this.mask] < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
