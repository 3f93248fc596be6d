// One colour per model name, the same everywhere in the designer (the timeline's palette, keyed by catalog order).
const PALETTE = ['#2dd4bf', '#f472b6', '#facc15', '#60a5fa', '#fb923c', '#c084fc', '#a3e635'] as const;
const KNOWN: Record<string, number> = { small: 0, medium: 1, large: 2 };

export function modelColor(name: string, catalog: readonly { name: string }[] = []): string {
  const i = Object.hasOwn(KNOWN, name) ? KNOWN[name] : catalog.findIndex((m) => m.name === name);
  if (i >= 0) return PALETTE[i % PALETTE.length];
  let h = 0;
  for (const ch of name) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return PALETTE[h % PALETTE.length];
}
