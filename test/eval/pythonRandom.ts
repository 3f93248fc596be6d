// CPython's `random.Random(seed)` (MT19937 with init_by_array seeding) for the calls the task's problem stream makes.

const N = 624;

/** randint / random exactly as CPython computes them, so a test can replay examples/training/splits.py's streams. */
export class PythonRandom {
  private readonly mt = new Uint32Array(N);
  private i = N;

  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32) throw new RangeError('PythonRandom: seeds from 0 to 2^32-1 only');
    this.initByArray([seed]);
  }

  private initGenrand(s: number): void {
    const mt = this.mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) mt[i] = (Math.imul(1812433253, mt[i - 1] ^ (mt[i - 1] >>> 30)) + i) >>> 0;
  }

  private initByArray(key: number[]): void {
    const mt = this.mt;
    this.initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(N, key.length); k > 0; k--) {
      mt[i] = ((mt[i] ^ Math.imul(mt[i - 1] ^ (mt[i - 1] >>> 30), 1664525)) + key[j] + j) >>> 0;
      i++;
      j++;
      if (i >= N) {
        mt[0] = mt[N - 1];
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = N - 1; k > 0; k--) {
      mt[i] = ((mt[i] ^ Math.imul(mt[i - 1] ^ (mt[i - 1] >>> 30), 1566083941)) - i) >>> 0;
      i++;
      if (i >= N) {
        mt[0] = mt[N - 1];
        i = 1;
      }
    }
    mt[0] = 0x80000000;
    this.i = N;
  }

  private next32(): number {
    const mt = this.mt;
    if (this.i >= N) {
      for (let k = 0; k < N; k++) {
        const y = (mt[k] & 0x80000000) | (mt[(k + 1) % N] & 0x7fffffff);
        mt[k] = mt[(k + 397) % N] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      this.i = 0;
    }
    let y = mt[this.i++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** random.random(): 53 random bits from two draws. */
  random(): number {
    const a = this.next32() >>> 5;
    const b = this.next32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** random.randint(a, b) via _randbelow: rejection sampling on bit_length(width) bits. */
  randint(a: number, b: number): number {
    const n = b - a + 1;
    const k = 32 - Math.clz32(n);
    let r = this.next32() >>> (32 - k);
    while (r >= n) r = this.next32() >>> (32 - k);
    return a + r;
  }
}

/** splits.py's make_problem, as "a*b". */
export function makeProblem(rng: PythonRandom): string {
  const a = rng.randint(10, 999);
  const b = rng.random() < 0.9 ? rng.randint(2, 99) : rng.randint(2, 9);
  return `${a}*${b}`;
}
