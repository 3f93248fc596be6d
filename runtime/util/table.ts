// The one table formatter: a row list as aligned text (console) or GitHub markdown (results.md).

export type Row = Record<string, unknown>;

/** A number at a precision that reads (3 decimals below 10, 1 above), anything else as text. */
function formatCell(v: unknown): string {
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : Math.abs(v) < 10 ? v.toFixed(3) : v.toFixed(1);
  if (v === null || v === undefined) return '';
  return String(v);
}

const columns = (rows: readonly Row[]): string[] => [...new Set(rows.flatMap((r) => Object.keys(r)))];

/** Right-aligned columns under a dashed rule (columns from every row, in first-seen order). */
export function textTable(rows: readonly Row[]): string {
  if (rows.length === 0) return '(no rows)\n';
  const cols = columns(rows);
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => formatCell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padStart(widths[i])).join('  ');
  return [line(cols), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map((r) => line(cols.map((c) => formatCell(r[c]))))].join('\n') + '\n';
}

/** A GitHub-flavoured markdown table; numeric columns (by their first value) align right. */
export function markdownTable(rows: readonly Row[]): string {
  if (rows.length === 0) return '_(no rows)_\n';
  const cols = columns(rows);
  const numeric = (c: string) => typeof rows.find((r) => r[c] !== undefined)?.[c] === 'number';
  const lines = [`| ${cols.join(' | ')} |`, `|${cols.map((c) => (numeric(c) ? '---:' : '---')).join('|')}|`];
  for (const r of rows) lines.push(`| ${cols.map((c) => formatCell(r[c])).join(' | ')} |`);
  return lines.join('\n') + '\n';
}

/** Prints rows as an aligned text table on stdout. */
export function printTable(rows: readonly Row[]): void {
  if (rows.length > 0) process.stdout.write(textTable(rows));
}
