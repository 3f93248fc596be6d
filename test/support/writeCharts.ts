// Rewrites the statecharts in docs/runtime.md from the machines (npx tsx test/support/writeCharts.ts); a test checks they agree.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { documentedCharts, withCharts } from './chartText.ts';

const doc = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/runtime.md');
const before = fs.readFileSync(doc, 'utf8');
const after = withCharts(before, await documentedCharts());
fs.writeFileSync(doc, after);
console.log(after === before ? 'docs/runtime.md: charts already current' : 'docs/runtime.md: charts rewritten from the machines');
