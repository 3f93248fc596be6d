// Timeline page layout: toolbar, banners, config bar, the prediction check, the canvas with its legend, and the side panels.
import { useEffect, useRef } from 'react';
import { Banner } from './Banner.tsx';
import { BatchPanel } from './BatchPanel.tsx';
import { ConfigBar } from './ConfigBar.tsx';
import { Legend } from './Legend.tsx';
import { PredictionBar } from './PredictionBar.tsx';
import { RangeStatsPanel } from './RangeStatsPanel.tsx';
import { RequestList } from './RequestList.tsx';
import { RequestPanel } from './RequestPanel.tsx';
import type { TimelineController } from './timelineController.ts';
import { Toolbar } from './Toolbar.tsx';
import { useTick } from './useTick.ts';

export function App({ c }: { c: TimelineController }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    c.attach(canvas.current!);
    return () => c.detach();
  }, [c]);
  return (
    <div
      className="tl-app"
      onDragOver={(e) => {
        if (e.dataTransfer.types.includes('Files')) e.preventDefault();
      }}
      onDrop={async (e) => {
        const f = e.dataTransfer.files[0];
        if (!f) return;
        e.preventDefault();
        c.loadText(await f.text(), f.name);
      }}
    >
      <Toolbar c={c} />
      <Banner c={c} />
      <ConfigBar c={c} />
      <PredictionBar c={c} />
      <main className="tl-main">
        <div className="tl-plot">
          <div className="tl-canvas-wrap">
            <canvas ref={canvas} data-testid="timeline-canvas" tabIndex={0} />
          </div>
          <Legend />
        </div>
        <SidePanel c={c} />
      </main>
    </div>
  );
}

function SidePanel({ c }: { c: TimelineController }) {
  useTick(c);
  return (
    <aside className="tl-side">
      <RequestPanel c={c} />
      <BatchPanel c={c} />
      <RangeStatsPanel c={c} />
      <RequestList c={c} />
    </aside>
  );
}
