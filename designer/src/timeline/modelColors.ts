// Colour per model (lane order), distinct from the phase colours used for batch boxes.
export const MODEL_COLORS = ['#2dd4bf', '#f472b6', '#facc15', '#60a5fa', '#fb923c', '#c084fc', '#a3e635'] as const;

export const modelColor = (lane: number): string => MODEL_COLORS[((lane % MODEL_COLORS.length) + MODEL_COLORS.length) % MODEL_COLORS.length];

/** Colours of local and entry states in the request panel. */
export const STATE_COLORS: Record<string, string> = {
  admitted: '#6b7686', queued: '#7d8da3', running: '#3fb970', 'pending-return': '#e3b341', streaming: '#4c9ff5',
  done: '#39424f', failed: '#f4645d', cancelled: '#9a6b6b',
};
