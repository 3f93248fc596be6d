// Parameter-level diff of two IR documents, for the versions list ("what changes if I deploy / roll back").
import type { IrDocument } from '../../../shared/ir/irSchema.ts';

export type DiffRow =
  | { type: 'added'; nodeId: string; nodeType: string }
  | { type: 'removed'; nodeId: string; nodeType: string }
  | { type: 'param'; nodeId: string; nodeType: string; param: string; from: string; to: string }
  | { type: 'wiring'; nodeId: string; nodeType: string; port: string; from: string; to: string }
  | { type: 'algorithm'; field: string; from: string; to: string };

export function show(v: unknown): string {
  if (v === undefined) return '—';
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/** What turns `from` into `to`. Either side may be missing (a built-in version has no IR). */
export function versionDiff(from: IrDocument | null | undefined, to: IrDocument | null | undefined): DiffRow[] {
  const rows: DiffRow[] = [];
  const a = from ?? null;
  const b = to ?? null;
  for (const field of ['models', 'entry'] as const) {
    const x = show(a?.[field]);
    const y = show(b?.[field]);
    if (x !== y) rows.push({ type: 'algorithm', field, from: x, to: y });
  }
  const before = new Map((a?.nodes ?? []).map((n) => [n.id, n]));
  const after = new Map((b?.nodes ?? []).map((n) => [n.id, n]));
  for (const [id, n] of before) if (!after.has(id)) rows.push({ type: 'removed', nodeId: id, nodeType: n.type });
  for (const [id, n] of after) {
    const old = before.get(id);
    if (!old) {
      rows.push({ type: 'added', nodeId: id, nodeType: n.type });
      continue;
    }
    if (old.type !== n.type) {
      rows.push({ type: 'removed', nodeId: id, nodeType: old.type }, { type: 'added', nodeId: id, nodeType: n.type });
      continue;
    }
    for (const p of new Set([...Object.keys(old.params), ...Object.keys(n.params)])) {
      const x = show(old.params[p]);
      const y = show(n.params[p]);
      if (x !== y) rows.push({ type: 'param', nodeId: id, nodeType: n.type, param: p, from: x, to: y });
    }
    for (const port of new Set([...Object.keys(old.inputs), ...Object.keys(n.inputs)])) {
      const x = old.inputs[port] ? `${old.inputs[port].node}.${old.inputs[port].port}` : '—';
      const y = n.inputs[port] ? `${n.inputs[port].node}.${n.inputs[port].port}` : '—';
      if (x !== y) rows.push({ type: 'wiring', nodeId: id, nodeType: n.type, port, from: x, to: y });
    }
  }
  return rows;
}
