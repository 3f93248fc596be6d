// Change notices for the React panels, throttled: panels need not redraw at event rate, and wait for a pan or zoom to settle so they never cost gesture frames.
export class PanelNotifier {
  private readonly listeners = new Set<() => void>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private tick = 0;
  /** Last pan/zoom from input (performance.now()). */
  private lastGesture = 0;

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  };

  /** Bumped on each notice: what useSyncExternalStore compares. */
  getTick = (): number => this.tick;

  /** A pan, zoom or drag: notices wait until input has been quiet for 250 ms. */
  gesture(): void {
    this.lastGesture = performance.now();
  }

  /** Something changed: the panels hear of it within 400 ms, once however many changes came. */
  notify(): void {
    if (this.timer) return;
    const fire = (): void => {
      if (performance.now() - this.lastGesture < 250) {
        this.timer = setTimeout(fire, 120);
        return;
      }
      this.timer = null;
      this.tick++;
      for (const fn of this.listeners) fn();
    };
    this.timer = setTimeout(fire, 400);
  }
}
