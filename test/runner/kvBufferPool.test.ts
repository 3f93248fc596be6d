// The KV buffer pool: a batch's buffers come back for the next re-pack, sized to fit and bounded.
import { describe, expect, it } from 'vitest';
import { KvBufferPool } from '../../runtime/runner/kvBufferPool.ts';

describe('KvBufferPool', () => {
  it('hands a given buffer back for a take that fits, as a view of the asked length', () => {
    const pool = new KvBufferPool(4);
    const a = pool.take(1000);
    expect(a.length).toBe(1000);
    a.fill(3);
    pool.give(a);
    const b = pool.take(1100);
    expect(b.buffer).toBe(a.buffer);
    expect(b.length).toBe(1100);
    expect(pool.reused).toBe(1);
    expect(pool.size).toBe(0);
  });

  it('allocates rather than take a buffer too small or more than twice too big', () => {
    const pool = new KvBufferPool(4);
    const small = pool.take(100);
    const big = pool.take(10_000);
    pool.give(small);
    pool.give(big);
    const c = pool.take(1000);
    expect(c.buffer).not.toBe(small.buffer);
    expect(c.buffer).not.toBe(big.buffer);
    expect(pool.reused).toBe(0);
    // of two that fit, the smaller
    const d = pool.take(90);
    expect(d.buffer).toBe(small.buffer);
  });

  it('keeps at most `keep` buffers, dropping the smallest', () => {
    const pool = new KvBufferPool(2);
    const bufs = [pool.take(10), pool.take(20), pool.take(30)];
    for (const b of bufs) pool.give(b);
    expect(pool.size).toBe(2);
    expect(pool.take(9).buffer).not.toBe(bufs[0].buffer);
    expect(pool.take(20).buffer).toBe(bufs[1].buffer);
  });

  it('keeps at most `keepBytes`, dropping the biggest, and never keeps one bigger than the bound', () => {
    const pool = new KvBufferPool(10, 3500);
    const huge = pool.take(2000); // 10,000 bytes with its headroom, over the bound
    pool.give(huge);
    expect(pool.size).toBe(0);
    const bufs = [pool.take(100), pool.take(300), pool.take(400)]; // 500, 1,500, 2,000 bytes
    for (const b of bufs) pool.give(b);
    expect(pool.size).toBe(2);
    expect(pool.keptBytes).toBe(2000);
    expect(pool.take(300).buffer).toBe(bufs[1].buffer);
    expect(pool.take(90).buffer).toBe(bufs[0].buffer);
    expect(pool.keptBytes).toBe(0);
  });
});
