// Node `counter`: a per-request count kept in the request metadata, stepped while `inc` holds.
import type { MemoryDef } from '../../nodeTypeDef.ts';
import { bool, fmt, num, value } from '../parts.ts';

export const counter: MemoryDef = {
  type: 'counter',
  category: 'memory',
  label: 'Counter',
  description: 'Per-request count kept in the request metadata. Adds Step when inc is true (always, if unconnected).',
  inputs: [bool('inc', 'inc', true), bool('reset', 'reset', true)],
  outputs: [num('value', 'value'), num('prev', 'prev')],
  params: [value('Initial', 0), { kind: 'number', name: 'step', label: 'Step', min: -1e6, max: 1e6, default: 1 }],
  initial: (p) => p.value as number,
  update(ctx) {
    const reset = ctx.has('reset') ? ctx.bool('reset') : null;
    const inc = ctx.has('inc') ? ctx.bool('inc') : null;
    const initial = ctx.params.value as number;
    const step = ctx.params.step as number;
    return (x, v) => (reset !== null && reset(x) ? initial : inc === null || inc(x) ? v + step : v);
  },
  summary: (p) => `from ${fmt(p.value)}, step ${fmt(p.step)}`,
};
