// Recent requests, newest first, filterable; picking one highlights its path.
import { useState } from 'react';
import type { TimelineController } from './timelineController.ts';

export function RequestList({ c }: { c: TimelineController }) {
  const [filter, setFilter] = useState('');
  const seen = new Set<number>();
  const rows = [];
  for (let i = c.store.recent.length - 1; i >= 0 && rows.length < 150; i--) {
    const idx = c.store.recent[i];
    if (seen.has(idx)) continue;
    seen.add(idx);
    const info = c.store.requests.get(idx);
    if (!info || (filter && !info.id.includes(filter))) continue;
    rows.push(info);
  }
  return (
    <section className="tl-card grow">
      <h3>Requests <span className="muted small">{c.store.requests.size.toLocaleString()} known</span></h3>
      <input className="tl-filter" placeholder="filter by id…" value={filter} onChange={(e) => setFilter(e.target.value)} />
      <div className="tl-list" data-testid="request-list">
        {rows.map((r) => (
          <button key={r.idx} data-request={r.id} className={c.selected?.req === r.idx ? 'on' : ''} onClick={() => c.selectRequest(r.id)}>
            <code>{r.id}</code>
            <span className={`badge ${r.status}`}>{r.status}</span>
            <span className="muted">{r.end ? `${r.end.tokens.length} tokens · ${r.end.handoffs} handoffs` : ''}</span>
          </button>
        ))}
        {!rows.length ? <p className="muted small">No requests yet.</p> : null}
      </div>
    </section>
  );
}
