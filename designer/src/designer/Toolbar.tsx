// Top bar: document (open, new, import, export), edit history, save state, the one-click deploy, and whether the draft is what runs.
import { useEffect, useMemo, useRef, useState } from 'react';
import { ForgetTokenButton } from '../AdminTokenForm.tsx';
import { comparableIr } from './comparableIr.ts';
import { EXAMPLES } from './examples.ts';
import { useDesigner, useStore } from './useDesigner.ts';
import { versionDiff } from './versionDiff.ts';

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function OpenMenu() {
  const store = useStore();
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDivElement>(null);
  const file = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent) => {
      if (!ref.current?.contains(e.target as Node)) setOpen(false);
    };
    window.addEventListener('mousedown', close);
    return () => window.removeEventListener('mousedown', close);
  }, [open]);
  return (
    <div className="menu" ref={ref}>
      <button type="button" onClick={() => setOpen(!open)} data-testid="open-menu" aria-expanded={open}>
        Open ▾
      </button>
      {open && (
        <div className="menu-pop" role="menu">
          <div className="menu-title">Examples</div>
          {EXAMPLES.map((x) => (
            <button
              type="button"
              key={x.name}
              role="menuitem"
              className="menu-item"
              data-testid={`open-example-${x.name}`}
              onClick={() => {
                store.open(x.graph, `example ${x.title}`);
                setOpen(false);
              }}
            >
              <b>{x.title}</b>
              <span>{x.graph.description?.replace(/^[^:]{1,24}:\s*/, '')}</span>
            </button>
          ))}
          <div className="menu-sep" />
          <button
            type="button"
            className="menu-item"
            data-testid="new-graph"
            onClick={() => {
              store.newGraph();
              setOpen(false);
            }}
          >
            <b>New empty graph</b>
          </button>
          <button type="button" className="menu-item" data-testid="import-json" onClick={() => file.current?.click()}>
            <b>Import JSON…</b>
            <span>A designer graph or a compiled IR.</span>
          </button>
        </div>
      )}
      <input
        ref={file}
        type="file"
        accept="application/json,.json"
        hidden
        data-testid="import-file"
        onChange={async (e) => {
          const f = e.target.files?.[0];
          e.target.value = '';
          setOpen(false);
          if (!f) return;
          const problem = store.importJson(await f.text());
          if (problem) store.notify('error', `Import failed: ${problem}`);
        }}
      />
    </div>
  );
}

export function Toolbar() {
  const store = useStore();
  const name = useDesigner((s) => s.graph.name);
  const dirty = useDesigner((s) => s.dirty);
  const canUndo = useDesigner((s) => s.canUndo);
  const canRedo = useDesigner((s) => s.canRedo);
  const deploy = useDesigner((s) => s.deploy);
  const errorCount = useDesigner((s) => s.errorCount);
  const catalogSource = useDesigner((s) => s.catalogSource);
  const entry = useDesigner((s) => s.registry.algorithms.find((a) => a.name === s.graph.name));
  const graph = useDesigner((s) => s.graph); // the deploy blocker and the live comparison depend on the whole graph
  const catalog = useDesigner((s) => s.catalog);
  const blocker = store.deployBlocker();
  const live = entry?.versions.find((v) => v.version === entry.activeVersion);
  // A draft with errors differs from anything deployable; otherwise compare parameters and wiring, not layout.
  // biome-ignore lint/correctness/useExhaustiveDependencies: store.compiledIr() reads the graph
  const changes = useMemo(() => {
    if (!live) return 0;
    const ir = store.compiledIr();
    return ir ? versionDiff(comparableIr(live, catalog), ir).length : Infinity;
  }, [live, store, graph, catalog]);
  return (
    <header className="toolbar">
      <div className="brand">
        <span className="logo" />
        TokenRouter <span>Designer</span>
      </div>
      <div className="tb-doc">
        <span className="tb-name" title="Algorithm name (edit in the inspector with nothing selected)">
          {name}
        </span>
        <span
          className={`save-state ${dirty ? 'dirty' : 'clean'}`}
          data-testid="save-state"
          title="Drafts are kept in this browser; the save point moves on Save, Export and Deploy."
        >
          {dirty ? '● Unsaved changes' : '✓ Saved'}
        </span>
      </div>
      <div className="tb-group">
        <OpenMenu />
        <button type="button" onClick={() => store.markSaved()} disabled={!dirty} title="Mark this draft as saved (Ctrl+S)" data-testid="save">
          Save
        </button>
        <button type="button" onClick={() => download(`${name}.graph.json`, store.exportGraph())} data-testid="export-graph" title="Download the graph as JSON">
          Export
        </button>
        <button
          type="button"
          onClick={() => {
            const ir = store.compiledIr();
            if (ir) download(`${name}.ir.json`, `${JSON.stringify(ir, null, 2)}\n`);
          }}
          disabled={errorCount > 0}
          data-testid="export-ir"
          title="Download the compiled IR"
        >
          Export IR
        </button>
      </div>
      <div className="tb-group">
        <button type="button" onClick={store.undo} disabled={!canUndo} title="Undo (Ctrl+Z)" data-testid="undo">
          ↶
        </button>
        <button type="button" onClick={store.redo} disabled={!canRedo} title="Redo (Ctrl+Shift+Z)" data-testid="redo">
          ↷
        </button>
      </div>
      <div className="tb-spacer" />
      <span className={`conn conn-${catalogSource}`} title="Models come from GET /admin/models">
        <i />{' '}
        {catalogSource === 'server'
          ? 'server connected'
          : catalogSource === 'loading'
            ? 'connecting…'
            : catalogSource === 'locked'
              ? 'admin token needed'
              : 'offline'}
      </span>
      <ForgetTokenButton onForgot={store.tokenChanged} />
      <div className="tb-deploy">
        {live && entry?.served && (
          <span className="deploy-note ok" data-testid="deploy-status" title="The version the server runs for this name (from the registry)">
            Live: {name} v{live.version}
          </span>
        )}
        {live && !entry?.served && (
          <span
            className="deploy-note warn"
            data-testid="deploy-status"
            title={`v${live.version} is stored and active, but it does not load on the models this server serves (the server log says why when it is asked for): requests for “${name}” get 404.`}
          >
            Not served: {name} v{live.version}
          </span>
        )}
        {live && changes > 0 && (
          <span
            className="deploy-note warn"
            data-testid="draft-differs"
            title={
              Number.isFinite(changes)
                ? `The draft differs from live v${live.version} in ${changes} place${changes === 1 ? '' : 's'} (Versions tab: compare with draft)`
                : 'The draft has errors, so it is not what runs'
            }
          >
            Draft ≠ v{live.version}
          </span>
        )}
        {deploy.status === 'failed' && (
          <span className="deploy-note bad" data-testid="deploy-status" title={deploy.message}>
            Deploy failed
          </span>
        )}
        {blocker && deploy.status !== 'deploying' && (
          <span className="deploy-why" data-testid="deploy-blocker">
            {blocker}
          </span>
        )}
        <button
          type="button"
          className="primary"
          disabled={blocker !== null}
          onClick={() => void store.deploy()}
          title={blocker ?? `Store a new version of “${name}” and make it active`}
          data-testid="deploy"
        >
          {deploy.status === 'deploying' ? 'Deploying…' : 'Deploy'}
        </button>
      </div>
    </header>
  );
}
