// docs/runtime.md draws the actors' statecharts from the machines: a machine changed without its drawing fails here.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { chartText, documentedCharts, withCharts } from '../../runtime/actors/chartText.ts';

const doc = fs.readFileSync(path.join(import.meta.dirname, '../../docs/runtime.md'), 'utf8');

describe('statecharts in docs/runtime.md', () => {
  it('are exactly what the machines draw (rewrite them with npx tsx runtime/actors/writeCharts.ts)', async () => {
    const charts = await documentedCharts();
    expect(Object.keys(charts)).toEqual(['engine', 'local-request', 'request']);
    for (const [name, text] of Object.entries(charts)) expect(doc, name).toContain(`<!-- chart:${name} -->\n\`\`\`mermaid\n${text}\n\`\`\``);
    expect(withCharts(doc, charts)).toBe(doc);
  });

  it('a chart names every transition with its event, guard and delay, and its final states', () => {
    const m = setup({ guards: { ok: () => true }, delays: { wait: 5 } }).createMachine({
      initial: 'a',
      states: { a: { on: { GO: { target: 'b-c', guard: 'ok' } }, after: { wait: 'b-c' } }, 'b-c': { type: 'final' } },
    });
    expect(chartText(m)).toBe(['stateDiagram-v2', '  state "b-c" as b_c', '  [*] --> a', '  a --> b_c: GO [ok]', '  a --> b_c: after wait', '  b_c --> [*]'].join('\n'));
  });
});
