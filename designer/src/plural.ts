// Counts in words for the designer's and the timeline's text: "1 request", "2 requests".
export const plural = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;
