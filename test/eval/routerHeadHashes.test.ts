// The fixture family's router heads are the files its README records: a changed head fails here, not as an odd routing result.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

const MODELS = TINY_FAMILY_DIR;
const readme = fs.readFileSync(path.join(MODELS, 'README.md'), 'utf8');
/** Rows `| \`small/routers/x.onnx\` | \`<sha256>\` |` of the README's hash table. */
const recorded = [...readme.matchAll(/^\| `([^`]+)` *\| `([0-9a-f]{64})` *\|/gm)].map((m) => ({ file: m[1], sha: m[2] }));
const sha256 = (f: string) =>
  crypto
    .createHash('sha256')
    .update(fs.readFileSync(path.join(MODELS, f)))
    .digest('hex');

describe('router head hashes', () => {
  it('cover every head routers.json ships, and routers.json itself', () => {
    const heads = JSON.parse(fs.readFileSync(path.join(MODELS, 'small/routers/routers.json'), 'utf8')) as { heads: Record<string, { file: string }> };
    const files = [...Object.values(heads.heads).map((h) => `small/routers/${h.file}`), 'small/routers/routers.json'];
    expect(recorded.map((r) => r.file).sort()).toEqual(expect.arrayContaining(files.sort()));
  });

  it.each(recorded)('$file matches its recorded sha256', ({ file, sha }) => {
    expect(sha256(file)).toBe(sha);
  });
});
