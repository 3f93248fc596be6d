// React binding to the controller: re-render panels on its throttled change notifications.
import { useSyncExternalStore } from 'react';
import type { TimelineController } from './timelineController.ts';

export function useTick(c: TimelineController): number {
  return useSyncExternalStore(c.subscribe, c.getTick);
}
