// The page's yes/no for registry changes that replace, roll back or delete: a modal <dialog> saying what changes, with the diff.
import { useEffect, useRef } from 'react';
import './confirmDialog.css';
import type { Confirm } from './registryFlow.ts';
import { DiffTable } from './DiffTable.tsx';
import { useDesigner, useStore } from './useDesigner.ts';
import { plural } from '../plural.ts';

function Body({ c }: { c: Confirm }) {
  if (c.kind === 'delete') {
    return (
      <p>
        Removes <b>{c.name}</b> and its {plural(c.versions, 'version')} from the server{c.live !== null && <> (v{c.live} is live)</>}. Requests already running
        on it finish; new requests naming it get 404. The draft on the canvas stays.
      </p>
    );
  }
  const rows = c.diff;
  const intro =
    c.kind === 'replace' ? (
      <p>
        <b>{c.name}</b> already exists ({c.live === null ? 'no version live' : `v${c.live} live`}, {plural(c.versions, 'version')}). Deploying stores this graph
        as <b>v{c.next}</b> and makes it live; earlier versions stay for rollback.
        {c.liveKind === 'builtin' && <> v{c.live} is a built-in: its parameters live in code, so every node of the graph shows as new.</>}
      </p>
    ) : (
      <p>
        <b>{c.name}</b> goes back from v{c.from} to <b>v{c.to}</b> for new requests (running ones finish on v{c.from}).
        {c.toKind === 'ir'
          ? ` If the canvas holds ${c.name}, it then shows v${c.to} (your draft stays in undo).`
          : ` v${c.to} is a built-in with no graph: the toolbar flags the draft as differing from it.`}
      </p>
    );
  const from = c.kind === 'replace' ? (c.live === null ? 'nothing live' : `live v${c.live}`) : `v${c.from}`;
  const to = c.kind === 'replace' ? 'this draft' : `v${c.to}`;
  return (
    <>
      {intro}
      <div className="muted small">
        Changes from {from} (red) to {to} (green):
      </div>
      {rows.length === 0 ? <div className="muted pad">No parameter or wiring changes.</div> : <DiffTable rows={rows} testId="confirm-diff" />}
    </>
  );
}

function labels(c: Confirm): { title: string; action: string } {
  if (c.kind === 'replace') return { title: `Replace ${c.name}?`, action: `Deploy as v${c.next}` };
  if (c.kind === 'rollback') return { title: `Roll back ${c.name}?`, action: `Roll back to v${c.to}` };
  return { title: `Delete ${c.name}?`, action: `Delete ${c.name}` };
}

export function ConfirmDialog() {
  const store = useStore();
  const confirm = useDesigner((s) => s.confirm);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (confirm && d && !d.open) d.showModal();
    if (!confirm && d?.open) d.close();
  }, [confirm]);
  // Escape closes a modal dialog natively; this tells the store it was a no.
  const onClose = () => {
    if (store.getState().confirm) store.cancelConfirm();
  };
  return (
    <dialog ref={ref} className="confirm" data-testid="confirm-dialog" data-kind={confirm?.kind} onClose={onClose} aria-labelledby="confirm-title">
      {confirm && (
        <>
          <h2 id="confirm-title">{labels(confirm).title}</h2>
          <Body c={confirm} />
          <div className="confirm-actions">
            {/* biome-ignore lint/a11y/noAutofocus: a dialog focuses its least destructive action when it opens */}
            <button type="button" onClick={store.cancelConfirm} data-testid="confirm-cancel" autoFocus>
              Cancel
            </button>
            <button type="button" className={confirm.kind === 'delete' ? 'danger' : 'primary'} onClick={() => void store.confirm()} data-testid="confirm-ok">
              {labels(confirm).action}
            </button>
          </div>
        </>
      )}
    </dialog>
  );
}
