// Editor of one node parameter, by kind: numbers, switches, options, models, heads, ids, weights, memory references.
import { useEffect, useState, type ReactElement } from 'react';
import type { ModelCatalogEntry } from '../../../shared/ir/checkParams.ts';
import type { GraphDocument } from '../../../shared/ir/graph.ts';
import { nodeSpec } from '../../../shared/ir/nodeRegistry.ts';
import type { ParamSpec, ParamValue } from '../../../shared/ir/nodeTypes.ts';
import { modelColor } from './modelColors.ts';

interface Props {
  nodeId: string;
  spec: ParamSpec;
  value: ParamValue | undefined;
  catalog: readonly ModelCatalogEntry[];
  graph: GraphDocument;
  /** The node's own model, for head choices. */
  model: string | undefined;
  /** The connected input that overrides this parameter (its spec's `replacedBy`), if any. */
  overridden?: string;
  onChange(value: ParamValue): void;
}

/** A text box that commits parsed values and keeps what the user typed while it does not parse. */
function NumberBox({ value, onCommit, testId, step }: { value: number; onCommit(v: number): void; testId: string; step: string }) {
  const [text, setText] = useState(String(value));
  // biome-ignore lint/correctness/useExhaustiveDependencies: only outside changes (undo, another node) reset the text
  useEffect(() => {
    if (Number(text) !== value) setText(String(value));
  }, [value]);
  const parsed = text.trim() === '' ? Number.NaN : Number(text);
  return (
    <input
      id={testId}
      className={Number.isFinite(parsed) ? '' : 'invalid'}
      type="number"
      step={step}
      value={text}
      data-testid={testId}
      onChange={(e) => {
        setText(e.target.value);
        const v = Number(e.target.value);
        if (e.target.value.trim() !== '' && Number.isFinite(v)) onCommit(v);
      }}
    />
  );
}

export function ParamField({ nodeId, spec, value, catalog, graph, model, overridden, onChange }: Props) {
  const testId = `param-${nodeId}-${spec.name}`;
  const labelId = `${testId}-label`;
  const range = (spec.kind === 'number' || spec.kind === 'int') && (
    <span className="pf-range">
      {spec.kind === 'number' && spec.minExclusive ? '(' : '['}
      {compact(spec.min)}, {compact(spec.max)}]
    </span>
  );
  // Weights and memory references are several controls: their caption names the group, each control has its own label.
  const label =
    spec.kind === 'weights' || spec.kind === 'memoryRefs' ? (
      <div className="pf-label" id={labelId} title={spec.help}>
        {spec.label}
      </div>
    ) : (
      <label className="pf-label" htmlFor={testId} title={spec.help}>
        {spec.label}
        {range}
      </label>
    );
  return (
    <div className={`pf${overridden ? ' pf-overridden' : ''}`}>
      {label}
      <Editor spec={spec} value={value} catalog={catalog} graph={graph} model={model} onChange={onChange} testId={testId} labelId={labelId} />
      {overridden && <div className="pf-note">Input “{overridden}” is connected and overrides this value.</div>}
      {spec.help && !overridden && <div className="pf-help">{spec.help}</div>}
    </div>
  );
}

/** The control of one parameter kind; `labelId` captions the kinds made of several controls. */
function Editor({
  spec,
  value,
  catalog,
  graph,
  model,
  onChange,
  testId,
  labelId,
}: Omit<Props, 'nodeId' | 'overridden'> & { testId: string; labelId: string }): ReactElement {
  switch (spec.kind) {
    case 'number':
    case 'int':
      return <NumberBox value={typeof value === 'number' ? value : Number.NaN} onCommit={onChange} testId={testId} step={spec.kind === 'int' ? '1' : 'any'} />;
    case 'boolean':
      return (
        <label className="switch">
          <input id={testId} data-testid={testId} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />
          <span>{value ? 'on' : 'off'}</span>
        </label>
      );
    case 'enum':
      return (
        <select id={testId} data-testid={testId} value={String(value)} onChange={(e) => onChange(e.target.value)}>
          {spec.options.map((o) => (
            <option key={o}>{o}</option>
          ))}
        </select>
      );
    case 'model': {
      const names = catalog.map((m) => m.name);
      const v = String(value ?? '');
      return (
        <div className="pf-model">
          <i style={{ background: modelColor(v, catalog) }} />
          <select id={testId} data-testid={testId} value={v} onChange={(e) => onChange(e.target.value)}>
            {!names.includes(v) && <option value={v}>{v} (not deployed)</option>}
            {names.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </div>
      );
    }
    case 'head': {
      const heads = catalog.find((m) => m.name === model)?.heads ?? [];
      const v = String(value ?? '');
      return (
        <select id={testId} data-testid={testId} value={v} onChange={(e) => onChange(e.target.value)}>
          {!heads.includes(v) && (
            <option value={v}>
              {v} (not on {model})
            </option>
          )}
          {heads.map((h) => (
            <option key={h}>{h}</option>
          ))}
        </select>
      );
    }
    case 'text':
      return <input id={testId} data-testid={testId} value={String(value ?? '')} maxLength={spec.maxLength} onChange={(e) => onChange(e.target.value)} />;
    case 'ids':
      return <IdsBox value={Array.isArray(value) ? (value as number[]) : []} onCommit={onChange} testId={testId} />;
    case 'weights': {
      const w = (value && typeof value === 'object' && !Array.isArray(value) ? value : {}) as Record<string, number>;
      return (
        <div className="pf-weights" role="group" aria-labelledby={labelId}>
          {catalog.map((m) => (
            <div key={m.name} className="pf-weight">
              <i style={{ background: modelColor(m.name, catalog) }} />
              <label htmlFor={`${testId}-${m.name}`}>{m.name}</label>
              <NumberBox value={w[m.name] ?? 0} step="0.05" testId={`${testId}-${m.name}`} onCommit={(x) => onChange({ ...w, [m.name]: x })} />
            </div>
          ))}
        </div>
      );
    }
    case 'memoryRefs': {
      const chosen = new Set(Array.isArray(value) ? (value as string[]) : []);
      const memories = graph.nodes.filter((n) => nodeSpec(n.type)?.category === 'memory');
      return memories.length ? (
        <div className="pf-refs" role="group" aria-labelledby={labelId}>
          {memories.map((m) => (
            <label key={m.id}>
              <input
                type="checkbox"
                checked={chosen.has(m.id)}
                onChange={(e) => {
                  const next = new Set(chosen);
                  if (e.target.checked) next.add(m.id);
                  else next.delete(m.id);
                  onChange([...next]);
                }}
              />
              {m.id}
            </label>
          ))}
        </div>
      ) : (
        <div className="muted small">No memory nodes in this graph.</div>
      );
    }
  }
}

function IdsBox({ value, onCommit, testId }: { value: number[]; onCommit(v: number[]): void; testId: string }) {
  const [text, setText] = useState(value.join(', '));
  // biome-ignore lint/correctness/useExhaustiveDependencies: the ids' text, not the array's identity, resets the box
  useEffect(() => setText(value.join(', ')), [value.join(',')]);
  return (
    <input
      id={testId}
      data-testid={testId}
      placeholder="e.g. 12, 40"
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        const parts = e.target.value
          .split(/[\s,]+/)
          .filter(Boolean)
          .map(Number);
        if (parts.every((n) => Number.isFinite(n))) onCommit(parts);
      }}
    />
  );
}

function compact(n: number): string {
  return Math.abs(n) >= 1e5 ? n.toExponential(0) : String(n);
}
