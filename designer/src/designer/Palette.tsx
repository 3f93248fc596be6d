// Node palette: every node type by category, searchable; drag onto the canvas, or click (Enter, Space) to add at a free spot near the view's centre.
import { useReactFlow } from '@xyflow/react';
import { useMemo, useState, type KeyboardEvent } from 'react';
import type { NodeType } from '../../../shared/ir/nodeTypes.ts';
import { DRAG_MIME } from './canvasHooks.ts';
import { paletteGroups } from './paletteGroups.ts';
import { freeSpot, nodeBoxes, type Point } from './placement.ts';
import { CATEGORY_COLORS, CATEGORY_TITLES, PORT_COLORS } from './theme.ts';
import { useStore } from './useDesigner.ts';

/** Points along every drawn edge, in flow coordinates (the edges' SVG sits inside the viewport's transform): where no node should land. */
function edgePoints(): Point[] {
  const points: Point[] = [];
  for (const path of document.querySelectorAll<SVGPathElement>('.react-flow__edge-path')) {
    const length = path.getTotalLength();
    for (let at = 0; at <= length; at += 10) {
      const p = path.getPointAtLength(at);
      points.push({ x: p.x, y: p.y });
    }
  }
  return points;
}

export function Palette() {
  const store = useStore();
  const rf = useReactFlow();
  const [query, setQuery] = useState('');
  const groups = useMemo(() => paletteGroups(query), [query]);

  const addAtCentre = (type: NodeType) => {
    const el = document.querySelector('.canvas')?.getBoundingClientRect();
    const centre = rf.screenToFlowPosition(el ? { x: el.left + el.width / 2, y: el.top + el.height / 2 } : { x: 400, y: 300 });
    const { graph, measured } = store.getState();
    store.addNode(type, freeSpot(centre, nodeBoxes(graph, measured), undefined, edgePoints()));
  };

  return (
    <aside className="palette" data-testid="palette">
      <div className="panel-title">Nodes</div>
      <input
        className="palette-search"
        aria-label="Search nodes"
        placeholder="Search nodes…"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        data-testid="palette-search"
      />
      <div className="palette-groups" onKeyDown={moveFocus}>
        {groups.map((g) => (
          <section key={g.category}>
            <h4 style={{ color: CATEGORY_COLORS[g.category] }}>{CATEGORY_TITLES[g.category]}</h4>
            {g.defs.map((s) => (
              <button
                type="button"
                key={s.type}
                className="palette-item"
                draggable
                data-testid={`palette-${s.type}`}
                title={`${s.description}\nDrag onto the canvas, or click (Enter) to add.`}
                onDragStart={(e) => {
                  e.dataTransfer.setData(DRAG_MIME, s.type);
                  e.dataTransfer.effectAllowed = 'copy';
                }}
                onClick={() => addAtCentre(s.type)}
              >
                <span className="palette-dot" style={{ background: CATEGORY_COLORS[s.category] }} />
                <span className="palette-label">{s.label}</span>
                <span className="palette-ports">
                  {[...s.inputs, ...s.outputs].map((p, i) => (
                    <i key={i} style={{ background: PORT_COLORS[p.type] }} title={`${p.label}: ${p.type}`} />
                  ))}
                </span>
              </button>
            ))}
          </section>
        ))}
        {groups.length === 0 && <div className="muted small pad">No node matches “{query}”.</div>}
      </div>
      <div className="palette-legend">
        {(Object.keys(PORT_COLORS) as (keyof typeof PORT_COLORS)[]).map((t) => (
          <span key={t}>
            <i style={{ background: PORT_COLORS[t] }} />
            {t}
          </span>
        ))}
      </div>
    </aside>
  );
}

/** Up and down arrows step through the palette items, so a keyboard user need not Tab past every one. */
function moveFocus(e: KeyboardEvent<HTMLDivElement>) {
  if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
  const items = [...e.currentTarget.querySelectorAll<HTMLButtonElement>('.palette-item')];
  const at = items.indexOf(document.activeElement as HTMLButtonElement);
  if (at < 0) return;
  e.preventDefault();
  items[Math.min(items.length - 1, Math.max(0, at + (e.key === 'ArrowDown' ? 1 : -1)))].focus();
}
