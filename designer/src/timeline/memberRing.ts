// Request indices of batch rows in one growable ring, addressed by absolute position so batches can point into it.

export class MemberRing {
  buf: Int32Array;
  mask: number;
  tail = 0;
  head = 0;
  constructor(
    readonly maxLength: number,
    initial = 8192,
  ) {
    this.buf = new Int32Array(Math.min(2 ** Math.ceil(Math.log2(initial)), 2 ** Math.ceil(Math.log2(maxLength))));
    this.mask = this.buf.length - 1;
  }
  get length(): number {
    return this.head - this.tail;
  }
  fits(n: number): boolean {
    return this.length + n <= this.maxLength;
  }
  push(v: number): void {
    if (this.length === this.buf.length) {
      const next = new Int32Array(this.buf.length * 2);
      const m = next.length - 1;
      for (let a = this.tail; a < this.head; a++) next[a & m] = this.buf[a & this.mask];
      this.buf = next;
      this.mask = m;
    }
    this.buf[this.head & this.mask] = v;
    this.head++;
  }
  at(abs: number): number {
    return this.buf[abs & this.mask];
  }
}
