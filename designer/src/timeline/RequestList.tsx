// Recent requests, newest first, filterable; picking one highlights its path.
import { useMemo, useState } from 'react';
import { plural } from '../plural.ts';
import type { RequestInfo } from './requestTable.ts';
import type { TimelineController } from './timelineController.ts';

export function RequestList({ c }: { c: TimelineController }) {
  const [filter, setFilter] = useState('');
  const seen = new Set<number>();
  const rows: RequestInfo[] = [];
  for (let i = c.store.recent.length - 1; i >= 0 && rows.length < 150; i--) {
    const idx = c.store.recent[i];
    if (seen.has(idx)) continue;
    seen.add(idx);
    const info = c.store.requests.get(idx);
    if (!info || (filter && !info.id.includes(filter))) continue;
    rows.push(info);
  }
  // Re-render the rows only when what they show changed (the panel ticks several times a second while live).
  const sig = `${filter}|${c.selected?.req ?? -1}|${rows.map((r) => `${r.idx}:${r.status}:${r.end ? 1 : 0}`).join(',')}`;
  // biome-ignore lint/correctness/useExhaustiveDependencies: sig stands for everything the rows show
  const list = useMemo(
    () => (
      <div className="tl-list" data-testid="request-list">
        {rows.map((r) => (
          <button type="button" key={r.idx} data-request={r.id} className={c.selected?.req === r.idx ? 'on' : ''} onClick={() => c.selectRequest(r.id)}>
            <code title={r.id}>{r.id}</code>
            <span className={`badge ${r.status}`}>{r.status}</span>
            {/* The muted grey is too faint on the selected row's blue. */}
            <span className="muted" style={c.selected?.req === r.idx ? { color: 'inherit' } : undefined}>
              {r.end ? `${plural(r.end.tokens.length || r.tokensDropped || 0, 'token')} · ${plural(r.end.handoffs, 'handoff')}` : ''}
            </span>
          </button>
        ))}
        {!rows.length ? <p className="muted small">No requests yet.</p> : null}
      </div>
    ),
    [sig],
  );
  return (
    <section className="tl-card grow">
      <h3>
        Requests <span className="muted small">{c.store.requests.size.toLocaleString()} known</span>
      </h3>
      <input className="tl-filter" placeholder="filter by id…" value={filter} onChange={(e) => setFilter(e.target.value)} />
      {list}
    </section>
  );
}
