// The clicked batch: model, phase, size, duration, lookahead passes, and its requests (pick one to follow its path).
import { PHASE_NAMES } from './eventStore.ts';
import type { TimelineController } from './timelineController.ts';
import { formatMs, formatRel } from './viewport.ts';

export function BatchPanel({ c }: { c: TimelineController }) {
  const b = c.store.batches;
  const p = c.selectedBatch >= 0 ? b.physOfAbs(c.selectedBatch) : -1;
  if (p < 0) return null;
  const col = b.cols;
  const members = c.store.batchMembers(p);
  const origin = c.origin ?? 0;
  return (
    <section className="tl-card" data-testid="batch-panel">
      <h3>Batch <code>{col.batchId[p]}</code> on {c.store.lanes[col.lane[p]]}</h3>
      <div className="tl-figures">
        <div><label>phase</label><b>{PHASE_NAMES[col.phase[p]]}</b></div>
        <div><label>size</label><b>{col.size[p]}</b></div>
        <div><label>tokens fed</label><b>{col.tokens[p]}</b></div>
        <div><label>start</label><b>{formatRel(col.start[p] - origin, 0.01)}</b></div>
        <div><label>duration</label><b>{formatMs(col.end[p] - col.start[p], 0.01)}</b></div>
        {col.steps[p] > 1 && <div><label>passes (lookahead)</label><b>{col.steps[p]} ({col.aheadRows[p]} rows ahead)</b></div>}
      </div>
      <div className="tl-chips">
        {members.map((r) => (
          <button key={r} className={c.selected?.req === r ? 'chip on' : 'chip'} onClick={() => c.selectBatchRequest(r)}>{c.store.requestName(r)}</button>
        ))}
      </div>
    </section>
  );
}
