// docs/serving.md's configuration section spells out the defaults: it must parse to exactly what the schema defaults to, and name every limit.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';

const SERVING_DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/serving.md');

describe("docs/serving.md's defaults block", () => {
  it('parses to the schema defaults and lists every limits key', () => {
    const text = fs.readFileSync(SERVING_DOC, 'utf8');
    const m = /The defaults, spelled out:\s*```json\n([\s\S]*?)```/.exec(text);
    expect(m, 'docs/serving.md has the defaults block').not.toBeNull();
    const block = JSON.parse(m![1]) as { limits: Record<string, unknown> };
    const defaults = parseServerConfig({});
    expect(parseServerConfig(block)).toEqual(defaults);
    expect(Object.keys(block.limits).sort()).toEqual(Object.keys(defaults.limits).sort());
  });
});
