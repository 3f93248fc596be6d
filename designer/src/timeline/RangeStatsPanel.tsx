// Counts over the selected time range (or the visible window): tokens/s, handoffs/s, batch sizes, idle time.
import { modelColor } from './modelColors.ts';
import type { TimelineController } from './timelineController.ts';
import { formatMs, formatRel } from './viewport.ts';

export function RangeStatsPanel({ c }: { c: TimelineController }) {
  const s = c.stats();
  const origin = c.origin ?? 0;
  return (
    <section className="tl-card" data-testid="range-stats">
      <h3>
        {c.range ? 'Selected range' : 'Visible window'}
        <span className="muted small">
          {' '}
          {formatRel(s.t0 - origin, 1)} → {formatRel(s.t1 - origin, 1)} ({formatMs(s.durationMs, 1)})
        </span>
        {c.range ? (
          <button type="button" className="link right" onClick={() => c.setRange(null)}>
            clear
          </button>
        ) : null}
      </h3>
      <div className="tl-figures">
        <div title="Rows sampled minus tokens discarded at handoffs, per second">
          <label>committed tok/s</label>
          <b data-testid="tok-s">{s.committedPerSec.toFixed(1)}</b>
        </div>
        <div>
          <label>handoffs/s</label>
          <b data-testid="handoffs-s">{s.handoffsPerSec.toFixed(1)}</b>
        </div>
        <div>
          <label>discarded</label>
          <b>{s.discarded.toLocaleString()}</b>
        </div>
        <div>
          <label>completed</label>
          <b>{s.completedRequests}</b>
        </div>
      </div>
      <table className="tl-table">
        <thead>
          <tr>
            <th>model</th>
            <th>batches</th>
            <th>mean size</th>
            <th>idle</th>
          </tr>
        </thead>
        <tbody>
          {s.models.map((m, i) => (
            <tr key={m.model}>
              <td>
                <i className="dot" style={{ background: modelColor(i) }} />
                {m.model}
              </td>
              <td>{m.batches.toLocaleString()}</td>
              <td>{m.meanBatchSize.toFixed(2)}</td>
              <td title={`${formatMs(m.idleMs, 0.1)} idle`}>
                <span className="idlebar">
                  <span style={{ width: `${(m.idleFrac * 100).toFixed(1)}%` }} />
                </span>
                {(m.idleFrac * 100).toFixed(1)}% <span className="muted">({formatMs(m.idleMs, 1)})</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
