// Drill-down of the selected request: latency figures, tokens coloured by the model that wrote them (grammar-masked ones marked), states over time.
import { wholePercents } from './wholePercents.ts';
import { useMemo } from 'react';
import { modelColor, STATE_COLORS } from './modelColors.ts';
import type { TimelineController } from './timelineController.ts';
import { formatMs } from './viewport.ts';

const MAX_TOKENS_SHOWN = 600;

export function RequestPanel({ c }: { c: TimelineController }) {
  const sel = c.selected;
  const info = sel ? c.store.requests.get(sel.req) : undefined;
  // The drill-down (hundreds of token chips) is rebuilt only when the request's data changed.
  const sig = sel
    ? `${sel.req}|${sel.path.batches.length}|${sel.path.handoffs.length}|${sel.path.states.length}|${info?.status}|${info?.end ? 1 : 0}|${info?.tokensDropped ?? 0}`
    : '';
  // biome-ignore lint/correctness/useExhaustiveDependencies: sig stands for the request's data the detail shows
  return useMemo(() => <RequestDetail c={c} />, [sig, c]);
}

function RequestDetail({ c }: { c: TimelineController }) {
  const sel = c.selected;
  if (!sel)
    return (
      <section className="tl-card">
        <h3>Request</h3>
        <p className="muted">Click a batch or pick a request below: its path lights up across the lanes.</p>
      </section>
    );
  const info = c.store.requests.get(sel.req);
  const path = sel.path;
  const end = info?.end;
  const admitted = end?.admittedAt ?? path.states.find((s) => s.model === null && s.state === 'admitted')?.t ?? info?.firstT ?? 0;
  const firstTok = end ? end.firstTokenAt : (path.states.find((s) => s.model === null && s.state === 'streaming')?.t ?? null);
  const ttft = firstTok === null || firstTok === undefined ? null : firstTok - admitted;
  const e2e = end ? end.t - admitted : null;
  const n = end ? end.tokens.length || info?.tokensDropped || 0 : 0;
  const tpot = end && ttft !== null && n > 1 ? (e2e! - ttft) / (n - 1) : null;
  // Expand the run-length coding into a model per token.
  const owners: string[] = [];
  for (const r of end?.runs ?? []) for (let k = 0; k < r.count; k++) owners.push(r.model);
  const perModel = new Map<string, number>();
  for (const r of end?.runs ?? []) perModel.set(r.model, (perModel.get(r.model) ?? 0) + r.count);
  const shares = wholePercents([...perModel.values()]);
  const laneOf = (m: string): number => c.store.laneOf(m);
  // A grammar masked every token from this output index on (structured outputs, a forced tool call).
  const maskedFrom = end?.maskedFrom;
  const masked = (i: number): boolean => maskedFrom !== undefined && i >= maskedFrom;
  return (
    <section className="tl-card" data-testid="request-panel">
      <h3>
        Request <code>{path.requestId}</code> <span className={`badge ${info?.status ?? ''}`}>{info?.status ?? 'unknown'}</span>
        <button type="button" className="link right" onClick={() => c.selectRequest(null)}>
          clear
        </button>
      </h3>
      <div className="tl-figures">
        <div>
          <label>TTFT</label>
          <b data-testid="ttft">{ttft === null ? '—' : formatMs(ttft, 0.1)}</b>
        </div>
        <div>
          <label>E2E</label>
          <b data-testid="e2e">{e2e === null ? 'running' : formatMs(e2e, 0.1)}</b>
        </div>
        <div>
          <label>TPOT</label>
          <b>{tpot === null ? '—' : formatMs(tpot, 0.01)}</b>
        </div>
        <div>
          <label>tokens</label>
          <b>{end ? n : '—'}</b>
        </div>
        <div>
          <label>handoffs</label>
          <b>{end ? end.handoffs : path.handoffs.length}</b>
        </div>
        <div>
          <label>batches</label>
          <b>{path.batches.length}</b>
        </div>
      </div>
      {end ? (
        <>
          <div className="tl-share">
            {[...perModel].map(([m, k], i) => (
              <span key={m} style={{ flex: k, background: modelColor(laneOf(m)) }} title={`${m}: ${k} tokens (${shares[i]}%)`} />
            ))}
          </div>
          <div className="tl-sharelegend">
            {[...perModel].map(([m, k], i) => (
              <span key={m}>
                <i style={{ background: modelColor(laneOf(m)) }} />
                {m} {k} ({shares[i]}%)
              </span>
            ))}
          </div>
          <h4>
            Output tokens <span className="muted">{end.text ? '(text; hover for the id)' : '(ids: this trace was recorded without the text)'}</span>
          </h4>
          {maskedFrom !== undefined && (
            <p className="tl-masklegend small" data-testid="masked-legend">
              <span className="tl-masked-sw" /> grammar-masked: a grammar chose among the allowed tokens
              {maskedFrom > 0 ? ` from token #${maskedFrom} on` : ' for every token'} ({Math.max(0, end.tokens.length - maskedFrom)} of {end.tokens.length})
            </p>
          )}
          {info?.tokensDropped ? <p className="muted small">Tokens of this older request were dropped to keep memory bounded.</p> : null}
          <div className={`tl-tokens${end.text ? ' tl-text' : ''}`} data-testid="tokens">
            {end.tokens.slice(0, MAX_TOKENS_SHOWN).map((t, i) => (
              <span
                key={i}
                className={masked(i) ? 'masked' : undefined}
                data-masked={masked(i) ? 'true' : undefined}
                style={{ borderColor: modelColor(laneOf(owners[i] ?? '')), color: modelColor(laneOf(owners[i] ?? '')) }}
                title={`#${i} id ${t} by ${owners[i] ?? '?'}${masked(i) ? ' · grammar-masked' : ''}`}
              >
                {end.text ? visible(end.text[i] ?? '') : t}
              </span>
            ))}
            {n > MAX_TOKENS_SHOWN ? <span className="muted">… {n - MAX_TOKENS_SHOWN} more</span> : null}
          </div>
        </>
      ) : (
        <p className="muted small">
          No <code>request-end</code> yet: tokens appear when the request finishes.
        </p>
      )}
      <h4>States over time</h4>
      <StateGantt c={c} admitted={admitted} />
    </section>
  );
}

function StateGantt({ c, admitted }: { c: TimelineController; admitted: number }) {
  const states = c.selected!.path.states;
  if (!states.length) return <p className="muted small">No state changes retained.</p>;
  const rows = new Map<string, { t: number; state: string }[]>();
  for (const s of states) {
    const k = s.model ?? 'request';
    if (!rows.has(k)) rows.set(k, []);
    rows.get(k)!.push(s);
  }
  const tEnd = Math.max(states[states.length - 1].t, admitted + 1e-3);
  const span = Math.max(1e-3, tEnd - admitted);
  const pct = (t: number): number => ((t - admitted) / span) * 100;
  return (
    <div className="tl-gantt" data-testid="states">
      {[...rows].map(([row, list]) => (
        <div key={row} className="row">
          <label title={row}>{row}</label>
          <div className="bar">
            {list.map((s, i) => {
              const next = list[i + 1]?.t ?? tEnd;
              return (
                <span
                  key={i}
                  style={{ left: `${pct(s.t)}%`, width: `${Math.max(0.6, pct(next) - pct(s.t))}%`, background: STATE_COLORS[s.state] ?? '#555' }}
                  title={`${s.state} at +${formatMs(s.t - admitted, 0.01)}`}
                />
              );
            })}
          </div>
        </div>
      ))}
      <div className="axis">
        <span>+0</span>
        <span>+{formatMs(span, 0.1)}</span>
      </div>
      <div className="tl-statelegend">
        {Object.entries(STATE_COLORS).map(([k, col]) => (
          <span key={k}>
            <i style={{ background: col }} />
            {k}
          </span>
        ))}
      </div>
      <details>
        <summary>{states.length} state changes</summary>
        <table className="tl-table small">
          <tbody>
            {states.slice(0, 400).map((s, i) => (
              <tr key={i}>
                <td>+{formatMs(s.t - admitted, 0.01)}</td>
                <td>{s.model ?? 'request'}</td>
                <td>{s.state}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}

/** Whitespace and control characters drawn as visible marks, so a space or a newline token still shows. */
function visible(piece: string): string {
  if (piece === '') return '·';
  return piece.replace(/\n/g, '↵').replace(/\t/g, '→').replace(/ /g, '␣');
}
