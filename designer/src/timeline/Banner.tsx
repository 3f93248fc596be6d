// Warnings that must be seen: the admin token the feed needs, events the server dropped for this client, invalid input, a file that could not be read, held events while paused, export notices.
import { AdminTokenForm } from '../AdminTokenForm.tsx';
import type { TimelineController } from './timelineController.ts';
import { useTick } from './useTick.ts';

export function Banner({ c }: { c: TimelineController }) {
  useTick(c);
  const items: { cls: string; text: string; id: string }[] = [];
  if (c.feed.serverDropped > 0)
    items.push({
      id: 'dropped',
      cls: 'bad',
      text: `The server dropped ${c.feed.serverDropped.toLocaleString()} events for this client (too slow to keep up): the picture has gaps.`,
    });
  if (c.feed.invalid > 0)
    items.push({
      id: 'invalid',
      cls: 'warn',
      text: `${c.feed.invalid.toLocaleString()} events failed validation and were skipped${c.feed.invalidMessage ? ` — first: ${c.feed.invalidMessage}` : ''}`,
    });
  if (c.heldDropped > 0)
    items.push({ id: 'held', cls: 'warn', text: `${c.heldDropped.toLocaleString()} events were discarded while paused (hold buffer full).` });
  const ev = Object.values(c.store.evicted).reduce((a, b) => a + b, 0);
  if (ev > 0)
    items.push({
      id: 'evicted',
      cls: 'info',
      text: `Bounded window: the oldest ${ev.toLocaleString()} events were dropped (cap ${c.store.capacity.toLocaleString()}).`,
    });
  if (c.notice) items.push({ id: 'notice', cls: 'info', text: c.notice });
  if (c.source.kind === 'file' && c.source.error) items.push({ id: 'file', cls: 'bad', text: `Could not open ${c.source.name}. ${c.source.error}` });
  if (!items.length && !c.feed.tokenRefused) return null;
  return (
    <div className="tl-banners">
      {c.feed.tokenRefused && (
        <div className="tl-banner bad">
          <AdminTokenForm refused onSaved={() => c.tokenChanged()} />
        </div>
      )}
      {items.map((i) => (
        <div key={i.id} className={`tl-banner ${i.cls}`} data-testid={`banner-${i.id}`}>
          {i.text}
        </div>
      ))}
    </div>
  );
}
