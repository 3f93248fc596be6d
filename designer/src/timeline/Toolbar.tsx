// Top bar: source and connection, follow / pause, zoom, open trace, export, generate load, rates.
import { useRef, useState } from 'react';
import { ForgetTokenButton } from '../AdminTokenForm.tsx';
import { generateLoad } from './feed.ts';
import type { TimelineController } from './timelineController.ts';
import { useTick } from './useTick.ts';

export function Toolbar({ c }: { c: TimelineController }) {
  useTick(c);
  const file = useRef<HTMLInputElement>(null);
  const [load, setLoad] = useState<string>('');
  const live = c.source.kind === 'live' || c.source.kind === 'demo';
  const deltas = c.frames
    .recent()
    .deltas.slice(-60)
    .sort((a, b) => a - b);
  const med = deltas.length ? deltas[deltas.length >> 1] : 0;
  const fps = med > 0 ? Math.min(999, Math.round(1000 / med)) : 0;
  const status =
    c.source.kind === 'file'
      ? c.source.error
        ? { cls: 'bad', text: `file · ${c.source.name} · not opened` }
        : { cls: 'file', text: `file · ${c.source.name}${c.source.format === 'chrome' ? ' (Chrome trace)' : ''}` }
      : c.source.kind === 'demo'
        ? { cls: 'ok', text: `demo feed · ${c.source.rate.toLocaleString()} ev/s` }
        : c.source.kind === 'live'
          ? {
              cls: c.feed.connection === 'open' ? 'ok' : c.feed.connection === 'connecting' ? 'warn' : 'bad',
              text: `live · ${c.feed.connection}${c.feed.connectionDetail && c.feed.connection !== 'open' ? ` (${c.feed.connectionDetail})` : ''}`,
            }
          : { cls: 'warn', text: 'no source' };
  return (
    <header className="tl-toolbar">
      <div className="tl-brand">
        <span className="tl-logo" />
        TokenRouter <span>Timeline</span>
      </div>
      <div className={`tl-status ${status.cls}`} data-testid="source-status">
        <i />
        {status.text}
      </div>
      <div className="tl-group">
        <button type="button" className={c.follow ? 'on' : ''} disabled={!live} onClick={() => c.setFollow(!c.follow)} title="Keep the newest events in view">
          {c.follow ? '● Following live' : '○ Follow live'}
        </button>
        <button
          type="button"
          className={c.paused ? 'on warn' : ''}
          disabled={!live}
          onClick={() => c.setPaused(!c.paused)}
          title="Freeze the picture; events are held and applied on resume"
        >
          {c.paused ? `▶ Resume (${c.heldCount.toLocaleString()} held)` : '❚❚ Pause'}
        </button>
      </div>
      <div className="tl-group">
        <button type="button" onClick={() => c.zoom(0.5)} title="Zoom in (wheel up)">
          +
        </button>
        <button type="button" onClick={() => c.zoom(2)} title="Zoom out (wheel down)">
          −
        </button>
        <button type="button" onClick={() => c.fitAll()} title="Show everything retained">
          Fit
        </button>
      </div>
      <div className="tl-group">
        <button
          type="button"
          onClick={() => file.current?.click()}
          title="Open a recorded trace: JSON lines of trace events, or a file saved with Export view / Export all"
        >
          Open trace…
        </button>
        <input
          ref={file}
          type="file"
          accept=".json,.jsonl,.ndjson,.txt,application/json"
          hidden
          data-testid="trace-file"
          onChange={async (e) => {
            const f = e.target.files?.[0];
            if (f) c.loadText(await f.text(), f.name);
            e.target.value = '';
          }}
        />
        <button
          type="button"
          onClick={() => c.download('view')}
          title="Chrome Trace Event JSON of the visible window (opens in Perfetto, and here with Open trace…)"
          data-testid="export-view"
        >
          Export view
        </button>
        <button type="button" onClick={() => c.download('all')} title="Chrome Trace Event JSON of everything retained" data-testid="export-all">
          Export all
        </button>
        {c.source.kind !== 'live' ? (
          <button type="button" onClick={() => c.startLive()} title="Connect to the server's /live feed">
            Connect live
          </button>
        ) : null}
        <button
          type="button"
          disabled={c.source.kind !== 'live'}
          data-testid="generate-load"
          onClick={async () => {
            setLoad('starting…');
            const r = await generateLoad();
            setLoad(r.ok ? 'load started' : `load failed: ${r.status} ${r.message}`);
            setTimeout(() => setLoad(''), 6000);
          }}
          title="POST /admin/load: 8 concurrent, 32 requests, 64 tokens"
        >
          Generate load
        </button>
        {load ? (
          <span className="tl-note" data-testid="load-status">
            {load}
          </span>
        ) : null}
      </div>
      <ForgetTokenButton onForgot={() => c.tokenChanged()} />
      <div className="tl-metrics">
        {live ? <span title="Events applied per second (last 2 s)">{Math.round(c.feed.ingestRate).toLocaleString()} ev/s</span> : null}
        <span title="Events held in the bounded window; the oldest go first beyond it">
          {c.store.size.toLocaleString()} of {c.store.capacity.toLocaleString()} events kept
        </span>
        <span title="Median frame interval over the last 60 frames">{fps} fps</span>
      </div>
    </header>
  );
}
