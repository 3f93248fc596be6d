// The clicked batch: model, its figures (phase, size, tokens fed and taken from the prefix cache, timing, lookahead), and its requests (pick one to follow its path).
import { batchFigures } from './batchFigures.ts';
import type { TimelineController } from './timelineController.ts';

export function BatchPanel({ c }: { c: TimelineController }) {
  const b = c.store.batches;
  const p = c.selectedBatch >= 0 ? b.physOfAbs(c.selectedBatch) : -1;
  if (p < 0) return null;
  const col = b.cols;
  const members = c.store.batchMembers(p);
  return (
    <section className="tl-card" data-testid="batch-panel">
      <h3>
        Batch <code>{col.batchId[p]}</code> on {c.store.lanes[col.lane[p]]}
      </h3>
      <div className="tl-figures">
        {batchFigures(c.store, p, c.origin ?? 0).map(([label, value]) => (
          <div key={label}>
            <label>{label}</label>
            <b>{value}</b>
          </div>
        ))}
      </div>
      <div className="tl-chips">
        {members.map((r) => (
          <button type="button" key={r} className={c.selected?.req === r ? 'chip on' : 'chip'} onClick={() => c.selectBatchRequest(r)}>
            {c.store.requestName(r)}
          </button>
        ))}
      </div>
    </section>
  );
}
