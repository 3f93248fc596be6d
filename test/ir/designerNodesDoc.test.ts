// docs/designer-nodes.md documents every node type the designer offers, and each one's parameters, in the section headed by its type.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BUILTIN_NODE_TYPES } from '../../shared/ir/nodeRegistry.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const doc = fs.readFileSync(path.join(ROOT, 'docs/designer-nodes.md'), 'utf8');
const sections = doc.split(/^(?=#{2,3} )/m);
/** The common parameters the page explains once per category rather than in each node's table. */
const COMMON: Record<string, readonly string[]> = { signal: ['model'], decision: ['model', 'priority'] };

describe('docs/designer-nodes.md', () => {
  it.each(BUILTIN_NODE_TYPES.map((d) => [d.type, d] as const))('documents %s and its parameters', (type, def) => {
    const section = sections.find((s) => s.startsWith('### ') && s.split('\n')[0].includes(`(\`${type}\`)`));
    expect(section, `a "### ${def.label} (\`${type}\`)" heading`).toBeDefined();
    expect(section!.split('\n')[0]).toContain(def.label);
    for (const p of def.params) {
      if (COMMON[def.category]?.includes(p.name) && !section!.includes(`(\`${p.name}\`)`)) continue;
      expect(section, `parameter ${p.name} of ${type}`).toContain(`${p.label} (\`${p.name}\`)`);
    }
  });

  it('is linked from the README', () => {
    expect(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')).toContain('docs/designer-nodes.md');
  });
});
