// Legend of the canvas encodings: phases, grammar-masked batches, handoff arrows, queue strip, marks; and the mouse controls.
import { THEME } from './paint/theme.ts';

export function Legend() {
  return (
    <div className="tl-legend">
      {(['prefill', 'extend', 'decode'] as const).map((p) => (
        <span key={p}>
          <i className="sw" style={{ background: THEME.phase[p] }} />
          {p}
        </span>
      ))}
      <span>
        <svg aria-hidden="true" width="28" height="8">
          <line x1="0" y1="4" x2="22" y2="4" stroke={THEME.kept} strokeWidth="2" />
          <path d="M28 4 L21 0.5 L21 7.5Z" fill={THEME.kept} />
        </svg>
        handoff, token kept
      </span>
      <span>
        <svg aria-hidden="true" width="28" height="8">
          <line x1="0" y1="4" x2="22" y2="4" stroke={THEME.discarded} strokeWidth="2" strokeDasharray="4 3" />
          <path d="M28 4 L21 0.5 L21 7.5Z" fill={THEME.discarded} />
        </svg>
        handoff, token discarded
      </span>
      <span>
        <svg aria-hidden="true" width="20" height="8">
          <line x1="0" y1="4" x2="20" y2="4" stroke={THEME.inFlight} strokeWidth="2" strokeDasharray="2 3" />
        </svg>
        in flight
      </span>
      <span title="When thousands of handoffs are in view they are binned: kept stacked over discarded, between the lanes">
        <svg aria-hidden="true" width="14" height="12">
          <rect x="1" y="7" width="3" height="5" fill={THEME.discarded} />
          <rect x="1" y="3" width="3" height="4" fill={THEME.kept} />
          <rect x="6" y="9" width="3" height="3" fill={THEME.discarded} />
          <rect x="6" y="5" width="3" height="4" fill={THEME.kept} />
          <rect x="11" y="8" width="3" height="4" fill={THEME.discarded} />
        </svg>
        handoffs per bin (zoomed out)
      </span>
      <span
        title="Batches in which a grammar masked some rows' draw (structured outputs, tool calls); the batch's tooltip says how many"
        data-testid="legend-masked"
      >
        <svg aria-hidden="true" width="14" height="10">
          <rect x="0" y="0" width="14" height="10" rx="2" fill={THEME.phase.decode} />
          <rect x="0" y="7" width="14" height="3" fill={THEME.masked} />
        </svg>
        grammar-masked rows
      </span>
      <span>
        <i className="sw" style={{ background: THEME.queue }} />
        waiting queue
      </span>
      <span>
        <i className="sw line" style={{ background: THEME.config }} />
        config change
      </span>
      <span className="help">label = batch size · wheel: zoom · drag: pan · shift-drag or drag the axis: select range · click a batch: its requests</span>
    </div>
  );
}
