// The files of one request's life listed in docs/runtime.md: parsed, recounted, checked against the budget; run it to rewrite the counts.
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.join(import.meta.dirname, '../..');
export const RUNTIME_DOC = path.join(ROOT, 'docs/runtime.md');

const BLOCK = /<!-- life budget: (\d+) files, (\d+) lines -->\n([\s\S]*?)<!-- \/life -->/;
const ROW = /^\| `([^`]+)` \| (\d+) \| (.*) \|$/;
const HEAD = '| file | lines | what it does for the request |\n|---|---:|---|';

export interface LifeFile {
  path: string;
  lines: number;
  role: string;
}

export interface Life {
  budget: { files: number; lines: number };
  files: LifeFile[];
  /** The total the table states. */
  total: number;
}

/** The block of docs/runtime.md between `<!-- life budget: … -->` and `<!-- /life -->`. */
export function parseLife(doc: string): Life {
  const m = BLOCK.exec(doc);
  if (!m) throw new Error('docs/runtime.md: no `<!-- life budget: N files, M lines -->` … `<!-- /life -->` block');
  const files: LifeFile[] = [];
  let total = -1;
  for (const line of m[3].split('\n')) {
    const row = ROW.exec(line);
    if (row) files.push({ path: row[1], lines: Number(row[2]), role: row[3] });
    const sum = /^\| \*\*total\*\* \| \*\*(\d+)\*\* \|/.exec(line);
    if (sum) total = Number(sum[1]);
  }
  return { budget: { files: Number(m[1]), lines: Number(m[2]) }, files, total };
}

/** Lines as `wc -l` counts them; -1 when the file is missing. */
export function countLines(file: string): number {
  const p = path.join(ROOT, file);
  if (!fs.existsSync(p)) return -1;
  const text = fs.readFileSync(p, 'utf8');
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** What is wrong with the block: files missing or not opening with a role comment, counts stale, the budget exceeded. */
export function lifeProblems(doc: string, lines: (file: string) => number = countLines, head: (file: string) => string = firstLine): string[] {
  const life = parseLife(doc);
  const out: string[] = [];
  let sum = 0;
  for (const f of life.files) {
    const n = lines(f.path);
    if (n < 0) {
      out.push(`${f.path}: listed, but no such file`);
      continue;
    }
    sum += n;
    if (n !== f.lines) out.push(`${f.path}: ${n} lines, the table says ${f.lines}`);
    if (!head(f.path).startsWith('// ')) out.push(`${f.path}: does not open with a one-line role comment`);
  }
  if (life.total !== life.files.reduce((s, f) => s + f.lines, 0)) out.push(`the table's total ${life.total} is not the sum of its rows`);
  if (life.files.length > life.budget.files) out.push(`${life.files.length} files, over the budget of ${life.budget.files}`);
  if (sum > life.budget.lines) out.push(`${sum} lines, over the budget of ${life.budget.lines}`);
  return out;
}

function firstLine(file: string): string {
  return fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n', 1)[0];
}

/** The block with every count taken from the files (the budget and the roles as written). */
export function withCounts(doc: string, lines: (file: string) => number = countLines): string {
  const life = parseLife(doc);
  const files = life.files.map((f) => ({ ...f, lines: lines(f.path) }));
  const total = files.reduce((s, f) => s + Math.max(0, f.lines), 0);
  const rows = files.map((f) => `| \`${f.path}\` | ${f.lines} | ${f.role} |`);
  const block = `<!-- life budget: ${life.budget.files} files, ${life.budget.lines} lines -->\n${HEAD}\n${rows.join('\n')}\n| **total** | **${total}** | ${files.length} files |\n<!-- /life -->`;
  return doc.replace(BLOCK, () => block);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const doc = fs.readFileSync(RUNTIME_DOC, 'utf8');
  fs.writeFileSync(RUNTIME_DOC, withCounts(doc));
  const problems = lifeProblems(fs.readFileSync(RUNTIME_DOC, 'utf8'));
  for (const p of problems) console.error(p);
  process.exitCode = problems.length > 0 ? 1 : 0;
}
