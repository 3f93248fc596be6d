// Accuracy × predicted throughput: one marker per evaluated algorithm or model, the draft's highlighted, with the same points as a table for keyboards and screen readers.
import type { PlotPoint } from './evaluateFlow.ts';

const W = 300;
const H = 190;
const M = { l: 38, r: 10, t: 10, b: 30 };
const COLOUR: Record<PlotPoint['kind'], string> = { draft: '#f0b43c', model: '#8b98a9', algorithm: '#58a6ff' };

export function FrontierPlot({ points, concurrency }: { points: PlotPoint[]; concurrency: number }) {
  const priced = points.filter((p): p is PlotPoint & { tokS: number } => p.tokS !== null);
  const xMax = Math.max(1, ...priced.map((p) => p.tokS)) * 1.1;
  const yMin = Math.max(0, Math.min(1, ...priced.map((p) => p.accuracy)) - 0.05);
  const x = (v: number) => M.l + (v / xMax) * (W - M.l - M.r);
  const y = (v: number) => H - M.b - ((v - yMin) / Math.max(1e-9, 1 - yMin)) * (H - M.t - M.b);
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  // the draft is drawn last, on top
  const order = [...priced].sort((a, b) => (a.kind === 'draft' ? 1 : 0) - (b.kind === 'draft' ? 1 : 0));
  return (
    <figure className="ev-plot" data-testid="ev-plot">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`Accuracy against predicted throughput at concurrency ${concurrency}, ${priced.length} points`}>
        {ticks.map((f) => (
          <g key={f}>
            <line x1={M.l} x2={W - M.r} y1={y(yMin + (1 - yMin) * f)} y2={y(yMin + (1 - yMin) * f)} className="ev-grid" />
            <text x={M.l - 4} y={y(yMin + (1 - yMin) * f) + 3} textAnchor="end" className="ev-tick">
              {Math.round((yMin + (1 - yMin) * f) * 100)}%
            </text>
            {/* the outer ticks' labels start and end at the axis's ends: centred, they would run past the plot's edge */}
            <text x={x(xMax * f)} y={H - M.b + 12} textAnchor={f === 1 ? 'end' : f === 0 ? 'start' : 'middle'} className="ev-tick">
              {Math.round(xMax * f)}
            </text>
          </g>
        ))}
        <text x={(M.l + W - M.r) / 2} y={H - 4} textAnchor="middle" className="ev-axis">
          predicted tok/s at concurrency {concurrency}
        </text>
        {order.map((p) => (
          <g key={p.runId} data-testid={`ev-point-${p.kind}`} data-label={p.label}>
            <circle
              cx={x(p.tokS)}
              cy={y(p.accuracy)}
              r={p.kind === 'draft' ? 6.5 : 4.5}
              fill={COLOUR[p.kind]}
              stroke={p.kind === 'draft' ? '#fff' : 'none'}
              strokeWidth={1.5}
            >
              <title>{`${p.label}: ${(p.accuracy * 100).toFixed(1)}%, ${p.tokS.toFixed(0)} tok/s`}</title>
            </circle>
            {/* only the draft is named on the plot: close points' names would collide; the table below names them all */}
            {p.kind === 'draft' && (
              <text x={x(p.tokS)} y={y(p.accuracy) - 10} textAnchor="middle" className="ev-label draft">
                draft
              </text>
            )}
          </g>
        ))}
      </svg>
      <table className="ev-points">
        <caption className="sr-only">Evaluated points</caption>
        <thead>
          <tr>
            <th scope="col">what</th>
            <th scope="col">accuracy</th>
            <th scope="col">tok/s</th>
          </tr>
        </thead>
        <tbody>
          {points.map((p) => (
            <tr key={p.runId} className={p.kind === 'draft' ? 'draft' : ''}>
              <td>
                <i style={{ background: COLOUR[p.kind] }} /> {p.label}
              </td>
              <td>{(p.accuracy * 100).toFixed(1)}%</td>
              <td>{p.tokS === null ? '…' : p.tokS.toFixed(0)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
