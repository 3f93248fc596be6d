// The playground's chips re-laid as indented JSON when the answer is a JSON object or array, each character still on the chip of the token that wrote it.
import type { StreamToken } from './api.ts';
import type { Chip } from './tokenChips.ts';

/** A piece of layout (newline and indent) between chips: it belongs to no token. */
export const LAYOUT = -1;

const INDENT = '  ';

/**
 * `chips` (from tokenChips) with the whitespace outside strings replaced by JSON.stringify's layout
 * (two-space indent, a space after ":"), the layout as chips of index LAYOUT. Null unless `content`
 * parses as an object or array and the kept chips spell exactly `content` (a stream whose tokens also
 * carry a thought or a tool call does not, and is then shown as it came). Discarded chips keep their
 * text and do not move the layout.
 */
export function prettyChips(chips: readonly Chip[], tokens: readonly StreamToken[], content: string): Chip[] | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const spelled = chips
    .filter((c) => tokens[c.index]?.kept)
    .map((c) => c.text)
    .join('');
  if (spelled !== content) return null;

  const out: Chip[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  /** A newline and indent is owed before the next value or key (after "{", "[" or ","). */
  let owed = false;
  /** The last structural character opened a container, so a closing one makes it empty: "{}". */
  let justOpened = false;
  const layout = (text: string) => out.push({ index: LAYOUT, text, continuation: false });
  for (const chip of chips) {
    if (!tokens[chip.index]?.kept || chip.continuation) {
      out.push(chip);
      continue;
    }
    let text = '';
    let emitted = false;
    const flush = () => {
      if (text) out.push({ index: chip.index, text, continuation: false });
      emitted ||= text !== '';
      text = '';
    };
    for (const ch of chip.text) {
      if (inString) {
        text += ch;
        if (escaped) escaped = false;
        else if (ch === '\\') escaped = true;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t') continue;
      if (ch === '}' || ch === ']') {
        depth = Math.max(0, depth - 1);
        if (!justOpened) {
          flush();
          layout(`\n${INDENT.repeat(depth)}`);
        }
        owed = false;
        justOpened = false;
        text += ch;
        continue;
      }
      if (owed) {
        flush();
        layout(`\n${INDENT.repeat(depth)}`);
        owed = false;
      }
      justOpened = false;
      text += ch === ':' ? ': ' : ch;
      if (ch === '{' || ch === '[') {
        depth++;
        owed = true;
        justOpened = true;
      } else if (ch === ',') owed = true;
      else if (ch === '"') inString = true;
    }
    // a token of whitespace only keeps its place (empty) so its hover still works
    if (text || !emitted) out.push({ index: chip.index, text, continuation: false });
  }
  return out;
}
