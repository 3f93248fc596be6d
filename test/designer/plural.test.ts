// Counts in the designer's and the timeline's text read as English: one request, not "1 requests".
import { describe, expect, it } from 'vitest';
import { plural } from '../../designer/src/plural.ts';

describe('plural', () => {
  it('singular for exactly one, plural otherwise (zero included)', () => {
    expect([0, 1, 2, 17].map((n) => plural(n, 'request'))).toEqual(['0 requests', '1 request', '2 requests', '17 requests']);
  });
});
