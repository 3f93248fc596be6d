// The prefix cache: longest match, covered entries dropped, LRU eviction, later inserts matched correctly after evictions.
import { describe, expect, it } from 'vitest';
import { PrefixCache } from '../../runtime/core/prefixCache.ts';

function cache() {
  const dropped: [number, number][] = [];
  const c = new PrefixCache((id, n) => dropped.push([id, n]));
  return { c, dropped };
}

describe('PrefixCache', () => {
  it('finds the entry holding the longest prefix, cut to the limit', () => {
    const { c } = cache();
    c.insert(1, [1, 2, 3, 4]);
    c.insert(2, [1, 2, 9]);
    expect(c.match([1, 2, 3, 7], 10)).toMatchObject({ entry: { cacheId: 1 }, length: 3 });
    expect(c.match([1, 2, 9, 9], 10)).toMatchObject({ entry: { cacheId: 2 }, length: 3 });
    expect(c.match([1, 2, 3, 4, 5], 2)).toMatchObject({ length: 2 });
    expect(c.match([7], 10)).toBeNull();
    expect(c.heldTokens).toBe(7);
  });

  it('drops a cache an entry already covers, and an entry a new cache extends', () => {
    const { c, dropped } = cache();
    c.insert(1, [1, 2, 3]);
    c.insert(2, [1, 2]);
    expect(dropped).toEqual([[2, 2]]);
    c.insert(3, [1, 2, 3, 4, 5]);
    expect(dropped).toEqual([
      [2, 2],
      [1, 3],
    ]);
    expect([...c.entries()].map((e) => e.cacheId)).toEqual([3]);
    expect(c.heldTokens).toBe(5);
    expect(c.match([1, 2, 3, 4, 5, 6], 10)).toMatchObject({ entry: { cacheId: 3 }, length: 5 });
  });

  it('evicts least recently used first and matches correctly after', () => {
    const { c, dropped } = cache();
    c.insert(1, [1, 2, 3]);
    c.insert(2, [1, 2, 4]);
    c.insert(3, [5, 6]);
    c.match([1, 2, 3], 3); // 1 is now the most recent
    expect(c.evictOne()).toBe(3);
    expect(dropped.at(-1)).toEqual([2, 3]);
    expect(c.evictOne()).toBe(2);
    expect(dropped.at(-1)).toEqual([3, 2]);
    // a later entry sharing a shorter prefix leaves the longer match intact
    c.insert(4, [1, 9]);
    expect(c.match([1, 2, 3], 3)).toMatchObject({ entry: { cacheId: 1 }, length: 3 });
    expect(c.match([1, 9], 2)).toMatchObject({ entry: { cacheId: 4 }, length: 2 });
    c.clear();
    expect(c.size).toBe(0);
    expect(c.heldTokens).toBe(0);
    expect(c.match([1, 2], 2)).toBeNull();
  });
});
