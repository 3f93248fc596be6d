// One colour per model name in the designer: its place in the server's model list (the catalog), as the timeline's lanes.
import { MODEL_COLORS, modelColorAt } from '../../../shared/modelColors.ts';

export function modelColor(name: string, catalog: readonly { name: string }[]): string {
  const i = catalog.findIndex((m) => m.name === name);
  if (i >= 0) return modelColorAt(i);
  // not served (a draft naming an unknown model): a stable colour of its own
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return MODEL_COLORS[h % MODEL_COLORS.length];
}
