// Designer page layout: toolbar, the admin-token question, palette, canvas with problems bar, the inspector / versions / playground / evaluate side panel, and the confirm dialog.
import { ReactFlowProvider } from '@xyflow/react';
import { useEffect } from 'react';
import { AdminTokenForm } from '../AdminTokenForm.tsx';
import { Canvas } from './Canvas.tsx';
import { ConfirmDialog } from './ConfirmDialog.tsx';
import type { DesignerStore, RightTab } from './designerStore.ts';
import { Inspector } from './Inspector.tsx';
import { EvaluateContext, EvaluatePanel } from './EvaluatePanel.tsx';
import type { EvaluateFlow } from './evaluateFlow.ts';
import { Palette } from './Palette.tsx';
import { Playground } from './Playground.tsx';
import { ProblemsBar } from './ProblemsBar.tsx';
import { Toolbar } from './Toolbar.tsx';
import { StoreContext, useDesigner, useStore } from './useDesigner.ts';
import { VersionsPanel } from './VersionsPanel.tsx';

const TABS: { id: RightTab; label: string }[] = [
  { id: 'inspect', label: 'Inspector' },
  { id: 'versions', label: 'Versions' },
  { id: 'playground', label: 'Playground' },
  { id: 'evaluate', label: 'Evaluate' },
];

function isTyping(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  return !!el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.isContentEditable);
}

/** Editor shortcuts; Delete/Backspace belong to the canvas itself. */
function useShortcuts(store: DesignerStore): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const mod = e.ctrlKey || e.metaKey;
      // An open confirm dialog is modal: the graph behind it does not change under the question.
      if (!mod || isTyping(e.target) || store.getState().confirm) return;
      const k = e.key.toLowerCase();
      if (k === 'z' && !e.shiftKey) store.undo();
      else if ((k === 'z' && e.shiftKey) || k === 'y') store.redo();
      else if (k === 'c') store.copy();
      else if (k === 'v') store.paste();
      else if (k === 's') store.markSaved();
      else if (k === 'a') store.selectAll();
      else return;
      e.preventDefault();
    };
    const flush = () => store.persistNow();
    window.addEventListener('keydown', onKey);
    window.addEventListener('pagehide', flush);
    window.addEventListener('beforeunload', flush);
    return () => {
      window.removeEventListener('keydown', onKey);
      window.removeEventListener('pagehide', flush);
      window.removeEventListener('beforeunload', flush);
    };
  }, [store]);
}

function Toasts() {
  const store = useStore();
  const toast = useDesigner((s) => s.toast);
  useEffect(() => {
    if (!toast) return;
    const t = setTimeout(() => store.dismissToast(toast.id), toast.kind === 'error' ? 6000 : 3000);
    return () => clearTimeout(t);
  }, [toast, store]);
  if (!toast) return null;
  return (
    <div className={`toast ${toast.kind}`} role="status" data-testid="toast" onClick={() => store.dismissToast(toast.id)}>
      {toast.text}
    </div>
  );
}

function SidePanel() {
  const store = useStore();
  const tab = useDesigner((s) => s.tab);
  const errorCount = useDesigner((s) => s.errorCount);
  return (
    <aside className="side">
      <div className="tabs" role="tablist">
        {TABS.map((t) => (
          <button
            type="button"
            key={t.id}
            role="tab"
            aria-selected={tab === t.id}
            className={tab === t.id ? 'on' : ''}
            onClick={() => store.setTab(t.id)}
            data-testid={`tab-${t.id}`}
          >
            {t.label}
            {t.id === 'inspect' && errorCount > 0 && <span className="tab-badge">{errorCount}</span>}
          </button>
        ))}
      </div>
      <div className="side-body">
        {tab === 'inspect' && <Inspector />}
        {tab === 'versions' && <VersionsPanel />}
        {tab === 'playground' && <Playground />}
        {tab === 'evaluate' && <EvaluatePanel />}
      </div>
    </aside>
  );
}

/** Asks for the admin token while the server refuses this page. */
function TokenBar() {
  const store = useStore();
  const locked = useDesigner((s) => s.catalogSource === 'locked');
  if (!locked) return null;
  return (
    <div className="token-bar" role="alert">
      <AdminTokenForm refused onSaved={store.tokenChanged} />
    </div>
  );
}

function Layout() {
  const store = useStore();
  useShortcuts(store);
  useEffect(() => {
    void store.start();
  }, [store]);
  return (
    <div className="app">
      <Toolbar />
      <TokenBar />
      <div className="main">
        <Palette />
        <div className="center">
          <Canvas />
          <ProblemsBar />
        </div>
        <SidePanel />
      </div>
      <Toasts />
      <ConfirmDialog />
    </div>
  );
}

export function App({ store, evaluation }: { store: DesignerStore; evaluation: EvaluateFlow }) {
  return (
    <StoreContext.Provider value={store}>
      <EvaluateContext.Provider value={evaluation}>
        <ReactFlowProvider>
          <Layout />
        </ReactFlowProvider>
      </EvaluateContext.Provider>
    </StoreContext.Provider>
  );
}
