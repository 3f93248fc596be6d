// Inspector: the selected node's parameters and issues, or the algorithm's own settings when nothing is selected.
import { useMemo } from 'react';
import { compileGraph } from '../../../shared/ir/compileGraph.ts';
import { nodeSpec } from '../../../shared/ir/nodeRegistry.ts';
import { modelColor } from './modelColors.ts';
import { ParamField } from './ParamField.tsx';
import { algorithmNameProblem } from './registryFlow.ts';
import { CATEGORY_COLORS, CATEGORY_SHORT } from './theme.ts';
import { useDesigner, useStore } from './useDesigner.ts';

export function Inspector() {
  const store = useStore();
  const graph = useDesigner((s) => s.graph);
  const selection = useDesigner((s) => s.selection);
  const issues = useDesigner((s) => s.issues);
  const catalog = useDesigner((s) => s.catalog);

  if (selection.nodes.length > 1 || (selection.nodes.length === 0 && selection.edges.length > 0)) {
    const n = selection.nodes.length;
    const e = selection.edges.length;
    return (
      <div className="inspector" data-testid="inspector">
        <div className="insp-empty">
          {n > 0 && `${n} nodes`}
          {n > 0 && e > 0 && ' and '}
          {e > 0 && `${e} edge${e > 1 ? 's' : ''}`} selected
        </div>
        <div className="insp-actions">
          {n > 0 && (
            <button type="button" onClick={() => store.copy()}>
              Copy
            </button>
          )}
          <button type="button" className="danger" onClick={() => store.removeSelection()} data-testid="delete-selection">
            Delete
          </button>
        </div>
      </div>
    );
  }
  if (selection.nodes.length === 0) return <AlgorithmSettings />;

  const node = graph.nodes.find((x) => x.id === selection.nodes[0]);
  if (!node) return null;
  const spec = nodeSpec(node.type);
  const mine = issues.filter((i) => i.nodeId === node.id);
  const connected = new Set(graph.edges.filter((e) => e.target === node.id).map((e) => e.targetHandle));
  return (
    <div className="inspector" data-testid="inspector">
      <div className="insp-head">
        <span className="chip" style={{ color: spec ? CATEGORY_COLORS[spec.category] : undefined }}>
          {spec ? CATEGORY_SHORT[spec.category] : 'unknown'}
        </span>
        <h3>{spec?.label ?? node.type}</h3>
        <code className="insp-id">{node.id}</code>
      </div>
      <p className="insp-desc">{spec?.description ?? 'This node type does not exist in this designer; delete it.'}</p>
      {mine.length > 0 && (
        <ul className="insp-issues" data-testid="inspector-issues">
          {mine.map((i, k) => (
            <li key={k} className={i.severity}>
              <code>{i.code}</code> {i.message}
              <div className="fix">→ {i.fix}</div>
            </li>
          ))}
        </ul>
      )}
      {spec && spec.params.length > 0 && (
        <div className="insp-params">
          {spec.params.map((p) => {
            const port = p.kind === 'number' ? p.replacedBy : undefined;
            return (
              <ParamField
                key={p.name}
                nodeId={node.id}
                spec={p}
                value={node.params[p.name]}
                catalog={catalog}
                graph={graph}
                model={typeof node.params.model === 'string' ? node.params.model : undefined}
                overridden={port && connected.has(port) ? port : undefined}
                onChange={(v) => store.setParam(node.id, p.name, v)}
              />
            );
          })}
        </div>
      )}
      {spec && (
        <div className="insp-ports">
          {spec.inputs.length > 0 && (
            <div>
              <span className="muted">Inputs</span>
              {spec.inputs.map((p) => (
                <span key={p.name} className={`port-chip t-${p.type}${connected.has(p.name) ? ' on' : ''}`}>
                  {p.label}: {p.type}
                  {p.optional ? '?' : ''}
                </span>
              ))}
            </div>
          )}
          {spec.outputs.length > 0 && (
            <div>
              <span className="muted">Outputs</span>
              {spec.outputs.map((p) => (
                <span key={p.name} className={`port-chip t-${p.type}`}>
                  {p.label}: {p.type}
                </span>
              ))}
            </div>
          )}
        </div>
      )}
      <div className="insp-actions">
        <button type="button" onClick={() => (store.copy(), store.paste())}>
          Duplicate
        </button>
        <button type="button" className="danger" onClick={() => store.remove([node.id], [])} data-testid="delete-node">
          Delete
        </button>
      </div>
    </div>
  );
}

function AlgorithmSettings() {
  const store = useStore();
  const graph = useDesigner((s) => s.graph);
  const catalog = useDesigner((s) => s.catalog);
  const catalogSource = useDesigner((s) => s.catalogSource);
  const errorCount = useDesigner((s) => s.errorCount);
  const compiled = useMemo(() => compileGraph(graph, catalog), [graph, catalog]);
  const nameProblem = algorithmNameProblem(graph.name, catalogSource === 'server' ? catalog : []);
  const nameOk = nameProblem === null;
  return (
    <div className="inspector" data-testid="inspector">
      <div className="insp-head">
        <span className="chip">Algorithm</span>
        <h3>Settings</h3>
      </div>
      <div className="pf">
        <label className="pf-label" htmlFor="graph-name">
          Name <span className="pf-range">deploys as</span>
        </label>
        <input
          id="graph-name"
          data-testid="graph-name"
          className={nameOk ? '' : 'invalid'}
          aria-invalid={!nameOk}
          aria-describedby={nameOk ? undefined : 'graph-name-note'}
          value={graph.name}
          onChange={(e) => store.setName(e.target.value)}
        />
        {!nameOk && (
          <div className="pf-note" id="graph-name-note" data-testid="graph-name-note">
            {nameProblem.charAt(0).toUpperCase() + nameProblem.slice(1)}.
          </div>
        )}
      </div>
      <div className="pf">
        <label className="pf-label" htmlFor="graph-desc">
          Description
        </label>
        <textarea id="graph-desc" rows={4} value={graph.description ?? ''} onChange={(e) => store.setDescription(e.target.value)} />
      </div>
      <div className="insp-summary">
        <div>
          <span className="muted">Status</span>
          {errorCount ? (
            <b className="bad">
              {errorCount} error{errorCount > 1 ? 's' : ''}
            </b>
          ) : (
            <b className="ok">compiles</b>
          )}
        </div>
        {compiled.ok && (
          <>
            <div>
              <span className="muted">Models</span>
              {compiled.ir.models.map((m) => (
                <span key={m} className="model-chip">
                  <i style={{ background: modelColor(m, catalog) }} />
                  {m}
                  {m === compiled.ir.entry ? ' (entry)' : ''}
                </span>
              ))}
            </div>
            <div>
              <span className="muted">Runner extras</span>
              {Object.entries(compiled.ir.wants)
                .filter(([, w]) => w.heads.length || w.topK)
                .map(([m, w]) => `${m}: ${[...w.heads.map((h) => `head ${h}`), w.topK ? `top-${w.topK}` : ''].filter(Boolean).join(', ')}`)
                .join(' · ') || 'none'}
            </div>
          </>
        )}
        <div>
          <span className="muted">Models from</span>
          {catalogSource === 'server'
            ? 'server (/admin/models)'
            : catalogSource === 'loading'
              ? 'loading…'
              : catalogSource === 'locked'
                ? 'built-in list (admin token needed)'
                : 'built-in list (server unreachable)'}
        </div>
      </div>
      <p className="insp-desc muted">Select a node to edit it. Drag from an output handle to an input of the same colour to connect.</p>
    </div>
  );
}
