// One colour per model, by its place in the server's model list: the designer and the timeline derive theirs from it.
export const MODEL_COLORS = ['#2dd4bf', '#f472b6', '#facc15', '#60a5fa', '#fb923c', '#c084fc', '#a3e635'] as const;

/** The colour of the model at `index` in the server's model list (the timeline's lane order). */
export function modelColorAt(index: number): string {
  const n = MODEL_COLORS.length;
  return MODEL_COLORS[((index % n) + n) % n];
}
