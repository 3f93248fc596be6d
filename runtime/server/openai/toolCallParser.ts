// Tool calls read back from a model's text as it streams, per family (vLLM's --tool-call-parser): hermes and llama3_json.
import crypto from 'node:crypto';
import type { ToolCallParserName } from '../../config/serverConfig.ts';

/** One parsed call: the function's name and its arguments as JSON text. */
export interface ParsedCall {
  id: string;
  name: string;
  arguments: string;
}

/** What a piece of text turned into: text for `content`, and calls completed in it. */
export interface ToolPiece {
  content: string;
  calls: ParsedCall[];
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

export function toolCallParser(name: ToolCallParserName): ToolCallParser {
  return name === 'hermes' ? new HermesParser() : new Llama3JsonParser();
}

/** How many characters at the end of `text` could begin `tag` (they wait for the next piece). */
export function heldPrefix(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) if (text.endsWith(tag.slice(0, n))) return n;
  return 0;
}

/** A call object as a family writes it: a string `name` and an object of arguments under `argsKey` (or `arguments`). */
function callOf(v: unknown, argsKey: 'arguments' | 'parameters'): ParsedCall | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  const args = o[argsKey] ?? o.arguments ?? {};
  if (typeof o.name !== 'string' || typeof args !== 'object' || args === null || Array.isArray(args)) return null;
  return { id: callId(), name: o.name, arguments: JSON.stringify(args) };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

/**
 * Qwen3 / Hermes: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, any number of them,
 * text around them being content. A call goes out when its closing tag arrives; one that does not
 * parse is given back as content, tags included, as vLLM's parser does.
 */
export class HermesParser implements ToolCallParser {
  private buf = '';
  private inCall = false;

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
      } else {
        const at = this.buf.indexOf(CLOSE);
        if (at < 0) return out;
        this.close(this.buf.slice(0, at), true, out);
        this.buf = this.buf.slice(at + CLOSE.length);
        this.inCall = false;
      }
    }
  }

  end(): ToolPiece {
    const out: ToolPiece = { content: '', calls: [] };
    if (this.inCall) this.close(this.buf, false, out);
    else out.content = this.buf;
    this.buf = '';
    this.inCall = false;
    return out;
  }

  private close(body: string, closed: boolean, out: ToolPiece): void {
    const call = callOf(parseJson(body.trim()), 'arguments');
    if (call) out.calls.push(call);
    else out.content += OPEN + body + (closed ? CLOSE : '');
  }
}

/**
 * Llama 3: the answer is a call, a JSON object `{"name": …, "parameters": {…}}` (several separated
 * by `;`), or it is text. An answer that opens with `{` is held to its end and parsed whole; if it
 * is not calls, it is content after all.
 */
export class Llama3JsonParser implements ToolCallParser {
  private buf = '';
  private mode: 'undecided' | 'json' | 'text' = 'undecided';

  push(text: string): ToolPiece {
    if (this.mode === 'text') return { content: text, calls: [] };
    this.buf += text;
    if (this.mode === 'undecided') {
      const lead = this.buf.trimStart();
      if (lead === '') return { content: '', calls: [] };
      this.mode = lead.startsWith('{') ? 'json' : 'text';
      if (this.mode === 'text') {
        const content = this.buf;
        this.buf = '';
        return { content, calls: [] };
      }
    }
    return { content: '', calls: [] };
  }

  end(): ToolPiece {
    const text = this.buf;
    this.buf = '';
    if (this.mode !== 'json') return { content: text, calls: [] };
    const objects = splitJsonObjects(text);
    const calls = objects?.map((o) => callOf(parseJson(o), 'parameters'));
    if (!calls || calls.length === 0 || calls.some((c) => c === null)) return { content: text, calls: [] };
    return { content: '', calls: calls as ParsedCall[] };
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
