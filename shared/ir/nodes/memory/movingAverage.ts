// Node `movingAverage`: an exponential moving average of a number, kept in the request metadata.
import type { MemoryDef } from '../../nodeTypeDef.ts';
import { bool, fmt, num, value } from '../parts.ts';

export const movingAverage: MemoryDef = {
  type: 'movingAverage',
  category: 'memory',
  label: 'Moving average',
  description: 'Exponential moving average v ← α·x + (1−α)·v kept in the request metadata.',
  inputs: [num('x'), bool('reset', 'reset', true)],
  outputs: [num('value', 'value'), num('prev', 'prev')],
  params: [{ kind: 'number', name: 'alpha', label: 'α', min: 0, max: 1, minExclusive: true, default: 0.5 }, value('Initial', 0)],
  initial: (p) => p.value as number,
  update(ctx) {
    const reset = ctx.has('reset') ? ctx.bool('reset') : null;
    const input = ctx.num('x');
    const initial = ctx.params.value as number;
    const alpha = ctx.params.alpha as number;
    return (x, v) => (reset !== null && reset(x) ? initial : alpha * input(x) + (1 - alpha) * v);
  },
  summary: (p) => `α ${fmt(p.alpha)}, from ${fmt(p.value)}`,
};
