// Versions of an algorithm from the registry: which is active, a parameter diff against the draft or the previous version, activate, roll back and delete.
import { useEffect, useMemo, useState } from 'react';
import type { ApiVersion } from './api.ts';
import { comparableIr } from './comparableIr.ts';
import { DiffTable } from './DiffTable.tsx';
import { useDesigner, useStore } from './useDesigner.ts';
import { versionDiff, type DiffRow } from './versionDiff.ts';

type Baseline = 'draft' | 'previous' | 'active';

function ago(iso: string): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return iso;
  const s = Math.max(0, (Date.now() - t) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toLocaleDateString();
}

export function VersionsPanel() {
  const store = useStore();
  const registry = useDesigner((s) => s.registry);
  const graphName = useDesigner((s) => s.graph.name);
  useDesigner((s) => s.graph); // the draft diff follows edits
  const catalog = useDesigner((s) => s.catalog);
  const irOf = (v: ApiVersion) => comparableIr(v, catalog);
  const [name, setName] = useState(graphName);
  const [picked, setPicked] = useState<number | null>(null);
  const [baseline, setBaseline] = useState<Baseline>('draft');

  useEffect(() => setName(graphName), [graphName]);
  useEffect(() => {
    if (registry.status === 'idle') void store.refreshRegistry();
  }, [registry.status, store]);

  const entry = registry.algorithms.find((a) => a.name === name);
  const versions = useMemo(() => [...(entry?.versions ?? [])].sort((a, b) => b.version - a.version), [entry]);
  const selected: ApiVersion | undefined =
    versions.find((v) => v.version === picked) ?? versions.find((v) => v.version === entry?.activeVersion) ?? versions[0];
  const names = [...new Set([graphName, ...registry.algorithms.map((a) => a.name)])];

  // biome-ignore lint/correctness/useExhaustiveDependencies: store.compiledIr reads the live graph, which the hook above subscribes to; irOf reads catalog
  const diff: DiffRow[] | null = useMemo(() => {
    if (!selected) return null;
    if (baseline === 'draft') return versionDiff(irOf(selected), store.compiledIr());
    const other = baseline === 'previous' ? versions.find((v) => v.version < selected.version) : versions.find((v) => v.version === entry?.activeVersion);
    return other ? versionDiff(irOf(other), irOf(selected)) : null;
  }, [selected, baseline, versions, entry, store, store.getState().graph, catalog]);

  return (
    <div className="versions" data-testid="versions">
      <div className="v-top">
        <select value={name} onChange={(e) => (setName(e.target.value), setPicked(null))} aria-label="Algorithm" data-testid="versions-algorithm">
          {names.map((n) => (
            <option key={n}>{n}</option>
          ))}
        </select>
        <button type="button" onClick={() => void store.refreshRegistry()} title="Reload from the server">
          ⟳
        </button>
        <button
          type="button"
          disabled={!entry?.rollbackTo}
          onClick={() => store.rollback(name)}
          data-testid="rollback"
          title={
            entry?.rollbackTo
              ? `Re-activate v${entry.rollbackTo}, the version that was active before v${entry.activeVersion}`
              : 'No earlier active version to roll back to'
          }
        >
          Roll back
        </button>
        <button
          type="button"
          className="danger"
          disabled={!entry || entry.isDefault}
          onClick={() => store.deleteAlgorithm(name)}
          data-testid="delete-algorithm"
          title={entry?.isDefault ? `${name} is the server's default algorithm and cannot be deleted` : `Delete ${name} and all its versions from the server`}
        >
          Delete
        </button>
      </div>
      {registry.status === 'error' && <div className="banner bad">Registry unavailable: {registry.message}</div>}
      {registry.status === 'loading' && !entry && <div className="muted pad">Loading versions…</div>}
      {registry.status !== 'loading' && !entry && <div className="muted pad">“{name}” has not been deployed yet. Deploy the draft to create version 1.</div>}
      {versions.length > 0 && (
        <ul className="v-list">
          {versions.map((v) => (
            <li
              key={v.version}
              className={`${v.version === selected?.version ? 'sel' : ''}`}
              onClick={() => setPicked(v.version)}
              data-testid={`version-${v.version}`}
            >
              <b>v{v.version}</b>
              <span className={`kind ${v.kind}`}>{v.kind}</span>
              {v.version === entry?.activeVersion && <span className="active-badge">active</span>}
              <span className="muted when">{ago(v.createdAt)}</span>
            </li>
          ))}
        </ul>
      )}
      {selected && (
        <div className="v-detail">
          <div className="v-actions">
            <button
              type="button"
              disabled={selected.version === entry?.activeVersion}
              onClick={() => void store.activate(name, selected.version)}
              data-testid="activate"
            >
              Activate v{selected.version}
            </button>
            <button type="button" disabled={selected.kind !== 'ir'} onClick={() => store.openVersion(name, selected)} data-testid="open-version">
              Open in editor
            </button>
          </div>
          <div className="v-compare">
            <span className="muted">Compare v{selected.version} with</span>
            {(['draft', 'previous', 'active'] as const).map((b) => (
              <button type="button" key={b} className={baseline === b ? 'on' : ''} onClick={() => setBaseline(b)}>
                {b}
              </button>
            ))}
          </div>
          {selected.kind === 'builtin' && <div className="muted pad">A built-in algorithm: its parameters live in code, not in a graph.</div>}
          {diff === null && (
            <div className="muted pad">
              {baseline === 'draft' ? 'The draft has errors, so there is nothing to compare yet.' : `No ${baseline} version to compare with.`}
            </div>
          )}
          {diff && diff.length === 0 && <div className="muted pad">Identical.</div>}
          {diff && diff.length > 0 && <DiffTable rows={diff} testId="version-diff" />}
          {diff && diff.length > 0 && (
            <div className="muted small pad">
              {baseline === 'draft'
                ? `Red: v${selected.version}; green: the draft.`
                : baseline === 'previous'
                  ? `Red: the previous version; green: v${selected.version}.`
                  : `Red: the active version; green: v${selected.version}.`}
            </div>
          )}
        </div>
      )}
    </div>
  );
}
