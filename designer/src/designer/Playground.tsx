// Playground: send a prompt to the draft or a deployed algorithm and watch the answer stream, each token coloured by its model.
import { useMemo, useState } from 'react';
import type { StreamToken } from './api.ts';
import { prettyJson } from './chatExtras.ts';
import { modelColor } from './modelColors.ts';
import { ReasoningBlock, ToolCallCards, UsageLine } from './PlaygroundExtras.tsx';
import { PlaygroundOptionsPanel } from './PlaygroundOptionsPanel.tsx';
import { LAYOUT, prettyChips } from './prettyChips.ts';
import { tokenChips } from './tokenChips.ts';
import { useDesigner, useStore } from './useDesigner.ts';

interface Hover {
  index: number;
  x: number;
  y: number;
}

const fmt = (n: number | undefined) => (typeof n === 'number' && Number.isFinite(n) ? n.toFixed(4) : '—');

function TokenCard({ t, hover, catalog }: { t: StreamToken; hover: Hover; catalog: readonly { name: string }[] }) {
  const heads = Object.entries(t.signals?.heads ?? {});
  return (
    <div className="tok-card" style={{ left: hover.x, top: hover.y }} data-testid="token-card">
      <div className="tok-card-head">
        <i style={{ background: modelColor(t.model, catalog) }} />
        <b>{t.model}</b>
        <span className="muted">token {t.id}</span>
        <code>{JSON.stringify(t.text)}</code>
      </div>
      <table>
        <tbody>
          <tr>
            <td>entropy</td>
            <td>{fmt(t.signals?.entropy)}</td>
          </tr>
          <tr>
            <td>max prob</td>
            <td>{fmt(t.signals?.maxProb)}</td>
          </tr>
          <tr>
            <td>margin</td>
            <td>{fmt(t.signals?.margin)}</td>
          </tr>
          {heads.map(([k, v]) => (
            <tr key={k}>
              <td>head {k}</td>
              <td>{fmt(v)}</td>
            </tr>
          ))}
          <tr>
            <td>decision</td>
            <td>
              <span className={`decision d-${t.decision}`}>{t.decision}</span> {t.kept ? 'kept' : 'discarded'}
            </td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}

export function Playground() {
  const store = useStore();
  const pg = useDesigner((s) => s.playground);
  const registry = useDesigner((s) => s.registry);
  const catalog = useDesigner((s) => s.catalog);
  const errorCount = useDesigner((s) => s.errorCount);
  const [hover, setHover] = useState<Hover | null>(null);
  const deployed = registry.algorithms.filter((a) => a.activeVersion !== null && a.served).map((a) => a.name);
  const running = pg.status === 'running';

  const stats = useMemo(() => {
    const byModel = new Map<string, number>();
    let discarded = 0;
    let handoffs = 0;
    for (const t of pg.tokens) {
      if (t.kept) byModel.set(t.model, (byModel.get(t.model) ?? 0) + 1);
      else discarded++;
      if (t.decision === 'handoff') handoffs++;
    }
    return { byModel: [...byModel], discarded, handoffs };
  }, [pg.tokens]);
  const chips = useMemo(() => tokenChips(pg.tokens, pg.text), [pg.tokens, pg.text]);
  const [pretty, setPretty] = useState(true);
  // JSON is laid out once the answer is whole (while it streams it does not parse yet)
  const reflowed = useMemo(() => (running ? null : prettyChips(chips, pg.tokens, pg.text)), [running, chips, pg.tokens, pg.text]);
  const prettyText = useMemo(() => (running || reflowed || !/^\s*[[{]/.test(pg.text) ? null : prettyJson(pg.text)), [running, reflowed, pg.text]);
  const isJson = reflowed !== null || prettyText !== null;
  const shown = pretty && reflowed ? reflowed : chips;
  const showOutput = pg.tokens.length > 0 || pg.text !== '' || pg.toolCalls.length === 0;

  return (
    <div className="playground" data-testid="playground">
      <div className="pg-controls">
        <label className="pf-label" htmlFor="pg-target">
          Run
        </label>
        <select id="pg-target" value={pg.target} onChange={(e) => store.setPlayground({ target: e.target.value })} data-testid="playground-target">
          <option value="draft">Draft: the graph on the canvas</option>
          {deployed.map((n) => (
            <option key={n} value={n}>
              Deployed: {n}
            </option>
          ))}
        </select>
        <textarea
          rows={3}
          value={pg.prompt}
          onChange={(e) => store.setPlayground({ prompt: e.target.value })}
          placeholder="Prompt"
          data-testid="playground-prompt"
        />
        <PlaygroundOptionsPanel />
        <div className="pg-row">
          <label className="muted small">
            max tokens{' '}
            <input
              type="number"
              min={1}
              max={2048}
              value={pg.maxTokens}
              onChange={(e) => store.setPlayground({ maxTokens: Math.max(1, Math.min(2048, Number(e.target.value) || 1)) })}
              data-testid="playground-max"
            />
          </label>
          <div className="tb-spacer" />
          {running ? (
            <button type="button" onClick={store.stop} data-testid="playground-stop">
              Stop
            </button>
          ) : (
            <button
              type="button"
              className="primary"
              onClick={() => void store.run()}
              disabled={pg.target === 'draft' && errorCount > 0}
              title={pg.target === 'draft' && errorCount > 0 ? 'The draft has errors' : 'Send the prompt'}
              data-testid="playground-run"
            >
              Run ▸
            </button>
          )}
        </div>
      </div>
      <div className="pg-status" data-testid="playground-status" data-status={pg.status}>
        {running && <span className="spinner" />}
        {pg.status === 'running' && 'Streaming…'}
        {pg.status === 'done' && `Done${pg.finish ? ` · ${pg.finish}` : ''} · ${pg.tokens.filter((t) => t.kept).length} tokens`}
        {pg.requestId && pg.status !== 'idle' && (
          <a
            href={`/timeline?request=${encodeURIComponent(pg.requestId)}`}
            target="_blank"
            rel="noreferrer"
            data-testid="playground-timeline-link"
            title={`Request ${pg.requestId} on the live timeline`}
          >
            {' '}
            · on the timeline
          </a>
        )}
        {pg.status === 'error' && <span className="bad">{pg.message}</span>}
        {pg.status === 'idle' && (
          <span className="muted">Tokens appear here as they stream, coloured by the model that wrote them. Hover one for its signals.</span>
        )}
      </div>
      {(stats.byModel.length > 0 || pg.usage || isJson) && (
        <div className="pg-legend">
          {stats.byModel.map(([m, n]) => (
            <span key={m} data-testid={`pg-count-${m}`}>
              <i style={{ background: modelColor(m, catalog) }} />
              {m} <b>{n}</b>
            </span>
          ))}
          {stats.byModel.length > 0 && <span className="muted">handoffs {stats.handoffs}</span>}
          {stats.discarded > 0 && <span className="muted">discarded {stats.discarded}</span>}
          <UsageLine usage={pg.usage} />
          {isJson && (
            <label className="muted pg-pretty" title="Lay the JSON answer out indented; each character stays coloured by the model that wrote it">
              <input type="checkbox" checked={pretty} onChange={(e) => setPretty(e.target.checked)} data-testid="pg-pretty" /> pretty JSON
            </label>
          )}
        </div>
      )}
      <ReasoningBlock text={pg.reasoning} tokens={pg.reasoningTokens} catalog={catalog} streaming={running && pg.tokens.length === 0 && pg.text === ''} />
      <ToolCallCards calls={pg.toolCalls} />
      {showOutput && (
        <div className="pg-output" data-testid="playground-output" data-pretty={pretty && reflowed ? 'true' : undefined} onMouseLeave={() => setHover(null)}>
          {shown.map(({ index: i, text, continuation }, k) => {
            if (i === LAYOUT) return <span key={`l${k}`}>{text}</span>;
            const t = pg.tokens[i];
            const c = modelColor(t.model, catalog);
            return (
              <span
                key={`t${k}`}
                className={`pg-tok${t.kept ? '' : ' discarded'}${continuation ? ' cont' : ''}${hover?.index === i ? ' hot' : ''}`}
                style={{ background: `${c}2e`, borderBottomColor: c }}
                data-testid="pg-token"
                data-model={t.model}
                data-continuation={continuation ? 'true' : undefined}
                title={continuation ? 'Continues the character on the chip before: it spans tokens' : undefined}
                onMouseEnter={(e) => {
                  const r = (e.currentTarget as HTMLElement).getBoundingClientRect();
                  const parent = e.currentTarget.parentElement as HTMLElement;
                  const box = parent.getBoundingClientRect();
                  setHover({ index: i, x: Math.max(0, Math.min(r.left - box.left, box.width - 236)), y: r.bottom - box.top + parent.scrollTop + 6 });
                }}
              >
                {text}
              </span>
            );
          })}
          {pg.tokens.length === 0 && pg.text && <span className="pg-plain">{pretty && prettyText ? prettyText : pg.text}</span>}
          {pretty && prettyText && pg.tokens.length > 0 && (
            <pre className="pg-json" data-testid="pg-json">
              {prettyText}
            </pre>
          )}
          {hover && pg.tokens[hover.index] && <TokenCard t={pg.tokens[hover.index]} hover={hover} catalog={catalog} />}
        </div>
      )}
    </div>
  );
}
