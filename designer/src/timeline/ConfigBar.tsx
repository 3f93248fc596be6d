// The scheduling configuration in force at the right edge of the view, and how often it changed.
import { formatRel } from './viewport.ts';
import type { TimelineController } from './timelineController.ts';
import { useTick } from './useTick.ts';

export function ConfigBar({ c }: { c: TimelineController }) {
  useTick(c);
  const cf = c.store.configAt(c.view.t1);
  const origin = c.origin ?? 0;
  const changes = c.store.configs.length;
  if (!cf)
    return (
      <div className="tl-config muted">
        No <code>config</code> event received yet: mode and thresholds unknown.
      </div>
    );
  return (
    <div className="tl-config" data-testid="config-bar">
      <span className="k">mode</span>
      <span className="v">{cf.mode}</span>
      <span className="k">state</span>
      <span className="v">{cf.retainState ? 'retained (pending-return)' : 'not retained (standard serving)'}</span>
      <span className="k">max-wait</span>
      <span className="v">{cf.maxWaitMs} ms</span>
      <span className="k">thresholds</span>
      {Object.entries(cf.thresholds).map(([m, n]) => (
        <span key={m} className="v chip">
          {m} <b>{n}</b>
        </span>
      ))}
      <span className="spacer" />
      {changes > 1 ? (
        <span className="tl-changes">
          config changed {changes - 1}×:
          {c.store.configs
            .slice(1)
            .slice(-4)
            .map((x, i) => (
              <button
                type="button"
                key={i}
                className="link"
                onClick={() => {
                  const span = c.view.t1 - c.view.t0;
                  c.setView(x.t - span / 2, x.t + span / 2);
                }}
              >
                {formatRel(x.t - origin, 1)}
              </button>
            ))}
        </span>
      ) : (
        <span className="muted">unchanged since {formatRel(cf.t - origin, 1)}</span>
      )}
    </div>
  );
}
