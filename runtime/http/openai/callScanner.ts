// Reads a tool call's JSON `{"name": …, "arguments": {…}}` as its text arrives: the name once whole, then the arguments object's text up to its closing brace.

/** A call object's opening read so far: the name and where the arguments object starts, or why not yet. */
export type CallHeader = { status: 'ok'; name: string; argsAt: number } | { status: 'partial' } | { status: 'fail' };

/**
 * `{"name": "<string>", "<argsKey>": {` at the start of `t` (whitespace anywhere JSON allows it):
 * `partial` while `t` could still become one, `fail` once it cannot (other key order included: such
 * a call is read whole when it ends).
 */
export function readHeader(t: string, argsKeys: readonly string[]): CallHeader {
  let i = 0;
  const ws = () => {
    while (i < t.length && /\s/.test(t[i])) i++;
  };
  /** The literal `s` at i: consumed, cut off by the end of `t`, or not there. */
  const lit = (s: string): 'ok' | 'partial' | 'fail' => {
    const part = t.slice(i, i + s.length);
    if (part === s) {
      i += s.length;
      return 'ok';
    }
    return i + part.length === t.length && s.startsWith(part) ? 'partial' : 'fail';
  };
  const partial = { status: 'partial' } as const;
  const fail = { status: 'fail' } as const;
  const seq = (...parts: string[]): 'ok' | 'partial' | 'fail' => {
    for (const p of parts) {
      ws();
      const r = lit(p);
      if (r !== 'ok') return r;
    }
    ws();
    return 'ok';
  };
  let r = seq('{', '"name"', ':');
  if (r !== 'ok') return r === 'partial' ? partial : fail;
  if (i === t.length) return partial;
  if (t[i] !== '"') return fail;
  const start = i;
  for (i++; i < t.length && t[i] !== '"'; i++) if (t[i] === '\\') i++;
  if (i >= t.length) return partial;
  let name: unknown;
  try {
    name = JSON.parse(t.slice(start, ++i));
  } catch {
    return fail;
  }
  r = seq(',');
  if (r !== 'ok') return r === 'partial' ? partial : fail;
  const at = i;
  const keys = argsKeys.map((k) => {
    i = at;
    return seq(JSON.stringify(k), ':');
  });
  const hit = keys.indexOf('ok');
  if (hit < 0) return keys.includes('partial') ? partial : fail;
  i = at;
  seq(JSON.stringify(argsKeys[hit]), ':');
  if (i === t.length) return partial;
  return t[i] === '{' ? { status: 'ok', name: name as string, argsAt: i } : fail;
}

/** The arguments object's text, fed from its `{` on: what each piece adds up to its closing brace, nothing after. */
export class ArgsScanner {
  private depth = 0;
  private inString = false;
  private escape = false;
  closed = false;

  /** The part of `s` inside the arguments object (all of it until the closing brace comes). */
  feed(s: string): string {
    if (this.closed) return '';
    for (let i = 0; i < s.length; i++) {
      const c = s[i];
      if (this.inString) {
        if (this.escape) this.escape = false;
        else if (c === '\\') this.escape = true;
        else if (c === '"') this.inString = false;
      } else if (c === '"') this.inString = true;
      else if (c === '{' || c === '[') this.depth++;
      else if ((c === '}' || c === ']') && --this.depth === 0) {
        this.closed = true;
        return s.slice(0, i + 1);
      }
    }
    return s;
  }
}

/**
 * The arguments as the model wrote them in a call object that parsed as `args`, or compact JSON
 * when its text cannot be cut out (keys in another order, a key given twice).
 */
export function rawArguments(body: string, argsKeys: readonly string[], args: object): string {
  const h = readHeader(body, argsKeys);
  if (h.status === 'ok') {
    const s = new ArgsScanner();
    const raw = s.feed(body.slice(h.argsAt));
    if (s.closed && JSON.stringify(JSON.parse(raw)) === JSON.stringify(args)) return raw;
  }
  return JSON.stringify(args);
}
