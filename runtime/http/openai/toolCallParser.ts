// Tool calls read back from a model's text as it streams, per family (vLLM's --tool-call-parser): hermes and llama3_json.
import crypto from 'node:crypto';
import type { ToolCallParserName } from '../../config/serverConfig.ts';
import { ArgsScanner, rawArguments, readHeader } from './callScanner.ts';

/** One parsed call: the function's name and its arguments as JSON text. */
export interface ParsedCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A piece of one call, as OpenAI streams it: the first (id and name set) opens call `index`, the
 * next add to its arguments. Read whole, a call is one piece holding everything.
 */
export interface CallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

/** What a piece of text turned into: text for `content`, and call pieces in it. */
export interface ToolPiece {
  content: string;
  calls: CallDelta[];
}

export interface ToolCallParser {
  push(text: string): ToolPiece;
  /** The answer ended: what was held back, as calls when it parses as calls and as content when not. */
  end(): ToolPiece;
}

/** OpenAI's call ids: `call_` and 24 random characters. */
export function callId(): string {
  return `call_${crypto.randomBytes(18).toString('base64url').slice(0, 24)}`;
}

/**
 * `streamed`: a call goes out as it is written (its name once whole, then its arguments as they
 * come); else each call is read whole, at its end.
 */
export function toolCallParser(name: ToolCallParserName, streamed: boolean): ToolCallParser {
  return name === 'hermes' ? new HermesParser(streamed) : new Llama3JsonParser(streamed);
}

/** How many characters at the end of `text` could begin `tag` (they wait for the next piece). */
export function heldPrefix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (text.endsWith(tag.slice(0, n))) return n;
  return 0;
}

/** A call object as a family writes it: a string `name` and an object of arguments under one of `argsKeys`. */
function callOf(text: string, argsKeys: readonly string[]): { name: string; arguments: string } | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const args = argsKeys.map((k) => o[k]).find((a) => a !== undefined) ?? {};
  if (typeof o.name !== 'string' || typeof args !== 'object' || args === null || Array.isArray(args)) return null;
  return { name: o.name, arguments: rawArguments(text, argsKeys, args) };
}

/** Numbers a parser's calls and opens them. */
class Calls {
  private count = 0;

  open(name: string, args: string, out: ToolPiece): number {
    const index = this.count++;
    out.calls.push({ index, id: callId(), name, arguments: args });
    return index;
  }

  get opened(): number {
    return this.count;
  }
}

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const HERMES_KEYS = ['arguments'];

/**
 * Qwen3 / Hermes: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, any number of them,
 * text around them being content. Read whole, a call that does not parse is given back as content,
 * tags included, as vLLM's parser does. Streamed, a call goes out once its name and the opening of
 * its arguments are written, and then its arguments as they come, up to their closing brace; its
 * arguments are then the model's (a call that goes wrong after its name keeps what was sent, as a
 * call cut by max_tokens does). A call written another way (keys in another order) is read whole.
 */
export class HermesParser implements ToolCallParser {
  private buf = '';
  private inCall = false;
  private readonly calls = new Calls();
  /** The call being streamed: its index and its arguments' scanner. */
  private open: { index: number; args: ArgsScanner } | null = null;
  /** The call's opening is not one to stream: it waits for its end. */
  private whole = false;

  constructor(private readonly streamed: boolean) {}

  push(text: string): ToolPiece {
    this.buf += text;
    const out: ToolPiece = { content: '', calls: [] };
    for (;;) {
      if (!this.inCall) {
        const at = this.buf.indexOf(OPEN);
        if (at < 0) {
          const keep = heldPrefix(this.buf, OPEN);
          out.content += this.buf.slice(0, this.buf.length - keep);
          this.buf = this.buf.slice(this.buf.length - keep);
          return out;
        }
        out.content += this.buf.slice(0, at);
        this.buf = this.buf.slice(at + OPEN.length);
        this.inCall = true;
        this.whole = !this.streamed;
        continue;
      }
      const at = this.buf.indexOf(CLOSE);
      if (this.open) {
        const upto = at >= 0 ? at : this.buf.length - heldPrefix(this.buf, CLOSE);
        this.args(this.buf.slice(0, upto), out);
        this.buf = this.buf.slice(upto);
        if (at < 0) return out;
        this.buf = this.buf.slice(CLOSE.length);
        this.inCall = false;
        this.open = null;
        continue;
      }
      if (at >= 0) {
        this.close(this.buf.slice(0, at), true, out);
        this.buf = this.buf.slice(at + CLOSE.length);
        this.inCall = false;
        continue;
      }
      if (this.whole) return out;
      const h = readHeader(this.buf, HERMES_KEYS);
      if (h.status === 'partial') return out;
      if (h.status === 'fail') {
        this.whole = true;
        return out;
      }
      this.open = { index: this.calls.open(h.name, '', out), args: new ArgsScanner() };
      this.buf = this.buf.slice(h.argsAt);
    }
  }

  end(): ToolPiece {
    const out: ToolPiece = { content: '', calls: [] };
    if (this.open) this.args(this.buf, out);
    else if (this.inCall) this.close(this.buf, false, out);
    else out.content = this.buf;
    this.buf = '';
    this.inCall = false;
    this.open = null;
    return out;
  }

  private args(text: string, out: ToolPiece): void {
    const part = this.open!.args.feed(text);
    if (part) out.calls.push({ index: this.open!.index, arguments: part });
  }

  private close(body: string, closed: boolean, out: ToolPiece): void {
    const call = callOf(body.trim(), HERMES_KEYS);
    if (call) this.calls.open(call.name, call.arguments, out);
    else out.content += OPEN + body + (closed ? CLOSE : '');
  }
}

const LLAMA3_KEYS = ['parameters', 'arguments'];

/**
 * Llama 3: the answer is a call, a JSON object `{"name": …, "parameters": {…}}` (several separated
 * by `;`), or it is text. Read whole, an answer that opens with `{` is parsed at its end; if it is
 * not calls, it is content after all. Streamed, each call goes out as HermesParser's do; an answer
 * whose first object does not open as a call is read whole, and what follows the calls that is not
 * one is content.
 */
export class Llama3JsonParser implements ToolCallParser {
  private buf = '';
  private mode: 'undecided' | 'calls' | 'whole' | 'text' = 'undecided';
  /** Where a streamed answer is: a call's opening, its arguments, its closing brace, or between calls. */
  private at: 'header' | 'args' | 'tail' | 'between' = 'header';
  private readonly calls = new Calls();
  private open: { index: number; args: ArgsScanner } | null = null;

  constructor(private readonly streamed: boolean) {}

  push(text: string): ToolPiece {
    if (this.mode === 'text') return { content: text, calls: [] };
    this.buf += text;
    const out: ToolPiece = { content: '', calls: [] };
    if (this.mode === 'undecided') {
      const lead = this.buf.trimStart();
      if (lead === '') return out;
      this.mode = !lead.startsWith('{') ? 'text' : this.streamed ? 'calls' : 'whole';
      if (this.mode === 'text') return this.rest(out);
    }
    if (this.mode === 'calls') this.stream(out);
    return out;
  }

  private stream(out: ToolPiece): void {
    for (;;) {
      if (this.at === 'header') {
        const h = readHeader(this.buf, LLAMA3_KEYS);
        if (h.status === 'partial') return;
        if (h.status === 'fail') {
          if (this.calls.opened === 0) this.mode = 'whole';
          else this.rest(out);
          return;
        }
        this.open = { index: this.calls.open(h.name, '', out), args: new ArgsScanner() };
        this.buf = this.buf.slice(h.argsAt);
        this.at = 'args';
      } else if (this.at === 'args') {
        const part = this.open!.args.feed(this.buf);
        if (part) out.calls.push({ index: this.open!.index, arguments: part });
        this.buf = this.buf.slice(part.length);
        if (!this.open!.args.closed) return;
        this.open = null;
        this.at = 'tail';
      } else {
        this.buf = this.buf.replace(this.at === 'tail' ? /^\s+/ : /^[\s;]+/, '');
        if (this.buf === '') return;
        const want = this.at === 'tail' ? '}' : '{';
        if (this.buf[0] !== want) return void this.rest(out);
        if (this.at === 'tail') this.buf = this.buf.slice(1);
        this.at = this.at === 'tail' ? 'between' : 'header';
      }
    }
  }

  /** What is left is text: it and all that follows go out as content. */
  private rest(out: ToolPiece): ToolPiece {
    this.mode = 'text';
    out.content += this.buf;
    this.buf = '';
    return out;
  }

  end(): ToolPiece {
    const text = this.buf;
    this.buf = '';
    if (this.mode === 'calls') {
      // nothing went out yet: the answer is read whole after all
      if (this.calls.opened === 0) this.mode = 'whole';
      else return { content: this.at === 'header' ? text : '', calls: [] };
    }
    if (this.mode !== 'whole') return { content: text, calls: [] };
    const objects = splitJsonObjects(text);
    const calls = objects?.map((o) => callOf(o, LLAMA3_KEYS));
    if (!calls || calls.length === 0 || calls.some((c) => c === null)) return { content: text, calls: [] };
    const out: ToolPiece = { content: '', calls: [] };
    for (const c of calls) this.calls.open(c!.name, c!.arguments, out);
    return out;
  }
}

/** Top-level JSON objects in `text`, separated by whitespace or `;`; null when anything else is between them. */
export function splitJsonObjects(text: string): string[] | null {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === ';' || /\s/.test(c)) {
      i++;
      continue;
    }
    if (c !== '{') return null;
    let depth = 0;
    let inString = false;
    let j = i;
    for (; j < text.length; j++) {
      const d = text[j];
      if (inString) {
        if (d === '\\') j++;
        else if (d === '"') inString = false;
      } else if (d === '"') inString = true;
      else if (d === '{') depth++;
      else if (d === '}' && --depth === 0) break;
    }
    if (j >= text.length) return null;
    out.push(text.slice(i, j + 1));
    i = j + 1;
  }
  return out;
}
