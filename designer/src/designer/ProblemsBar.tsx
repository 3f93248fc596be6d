// Bottom bar: error and warning counts, expandable into a list; clicking one selects and centres its node.
import { useReactFlow } from '@xyflow/react';
import { useState } from 'react';
import { useDesigner, useStore } from './useDesigner.ts';

export function ProblemsBar() {
  const store = useStore();
  const issues = useDesigner((s) => s.issues);
  const graph = useDesigner((s) => s.graph);
  const rf = useReactFlow();
  const [open, setOpen] = useState(false);
  const errors = issues.filter((i) => i.severity === 'error');
  const warnings = issues.filter((i) => i.severity === 'warning');
  const focus = (id: string | null) => {
    if (!id) return;
    store.select([id], []);
    const n = graph.nodes.find((x) => x.id === id);
    if (n) void rf.setCenter(n.position.x + 100, n.position.y + 50, { zoom: 1.1, duration: 300 });
  };
  return (
    <div className={`problems${open ? ' open' : ''}`} data-testid="problems">
      <button type="button" className="problems-toggle" onClick={() => setOpen(!open)} data-testid="problems-toggle">
        <span className={errors.length ? 'bad' : 'ok'}>{errors.length ? `✕ ${errors.length} error${errors.length > 1 ? 's' : ''}` : '✓ No errors'}</span>
        <span className={warnings.length ? 'warn' : 'muted'}>
          ⚠ {warnings.length} warning{warnings.length === 1 ? '' : 's'}
        </span>
        <span className="muted">{open ? '▾ hide' : '▸ show'}</span>
      </button>
      {open && (
        <ul className="problems-list">
          {issues.length === 0 && <li className="muted">The graph compiles. Deploy it, or run it as a draft in the playground.</li>}
          {issues.map((i, k) => (
            <li key={k} className={i.severity} onClick={() => focus(i.nodeId)}>
              <code>{i.code}</code>
              <span className="p-node">{i.nodeId ?? 'graph'}</span>
              <span className="p-msg">{i.message}</span>
              <span className="p-fix">→ {i.fix}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
