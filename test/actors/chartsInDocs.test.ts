// docs/runtime.md draws the actors' statecharts from the machines: a machine changed without its drawing fails here.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { chartText, documentedCharts, withCharts } from '../support/chartText.ts';

const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/runtime.md'), 'utf8');

describe('statecharts in docs/runtime.md', () => {
  it('are exactly what the machines draw (rewrite them with npx tsx test/support/writeCharts.ts)', async () => {
    const charts = await documentedCharts();
    expect(Object.keys(charts)).toEqual(['engine', 'local-request', 'request']);
    for (const [name, text] of Object.entries(charts)) expect(doc, name).toContain(`<!-- chart:${name} -->\n\`\`\`mermaid\n${text}\n\`\`\``);
    expect(withCharts(doc, charts)).toBe(doc);
  });

  it('a chart names every transition with its event, guard, delay and effects (not assignments), and its final states', () => {
    const m = setup({
      types: { context: {} as { n: number } },
      guards: { ok: () => true },
      delays: { wait: 5 },
      actions: { count: assign({ n: 1 }), ring: () => {} },
    }).createMachine({
      context: { n: 0 },
      initial: 'a',
      on: { TICK: { actions: 'count' } },
      states: {
        a: { on: { GO: { target: 'b-c', guard: 'ok', actions: ['count', 'ring'] } }, after: { wait: 'b-c' }, always: { target: 'b-c', guard: 'ok' } },
        'b-c': { type: 'final' },
      },
    });
    expect(chartText(m)).toBe(
      [
        'stateDiagram-v2',
        '  state "b-c" as b_c',
        '  [*] --> a',
        '  a --> b_c: after wait',
        '  a --> b_c: GO [ok] / ring',
        '  a --> b_c: always [ok]',
        '  b_c --> [*]',
      ].join('\n'),
    );
  });
});
