// Colours of the timeline canvas, shared by the paint layers and the legend.

export const THEME = {
  bg: '#0b0f15',
  laneA: '#10151d',
  laneB: '#0d1219',
  grid: '#1c2430',
  axis: '#141a23',
  text: '#d5dde7',
  muted: '#7d8896',
  phase: { prefill: '#f0a34b', extend: '#a98bfa', decode: '#4c9ff5' } as Record<string, string>,
  kept: '#3fb970',
  discarded: '#f4645d',
  inFlight: '#8b96a5',
  queue: 'rgba(125, 140, 160, 0.45)',
  queueLine: '#8c9bb0',
  config: '#e3b341',
  select: '#ffffff',
  range: 'rgba(88, 166, 255, 0.13)',
  rangeEdge: '#58a6ff',
  now: '#ff7b72',
  /** The strip along the bottom of a batch in which a grammar masked rows. */
  masked: '#e6edf3',
} as const;
