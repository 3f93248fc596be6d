// Text <-> token ids for a model folder: @huggingface/tokenizers plus a small chat-template renderer.
import { Tokenizer } from '@huggingface/tokenizers';
import type { ModelFolder } from './modelFolder.ts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | string;
  content: string;
}

export class TextTokenizer {
  private readonly tok: Tokenizer;
  private readonly template: TemplateNode[] | undefined;
  readonly bosToken: string;
  readonly eosToken: string;
  readonly eosTokenId: number;
  readonly bosTokenId: number;

  constructor(tokenizerJson: Record<string, unknown>, tokenizerConfig: Record<string, unknown>, ids: { bos: number; eos: number }) {
    this.tok = new Tokenizer(tokenizerJson, tokenizerConfig);
    this.bosTokenId = ids.bos;
    this.eosTokenId = ids.eos;
    this.bosToken = tokenText(tokenizerConfig.bos_token) ?? this.tok.id_to_token(ids.bos) ?? '';
    this.eosToken = tokenText(tokenizerConfig.eos_token) ?? this.tok.id_to_token(ids.eos) ?? '';
    const t = tokenizerConfig.chat_template;
    this.template = typeof t === 'string' ? parseTemplate(t) : undefined;
  }

  static fromFolder(folder: ModelFolder): TextTokenizer {
    return new TextTokenizer(folder.tokenizerJson, folder.tokenizerConfig, { bos: folder.config.bosTokenId, eos: folder.config.eosTokenId });
  }

  /** Encodes text; special tokens written in the text (e.g. "<s>") map to their ids. */
  encode(text: string, addSpecialTokens = true): number[] {
    return this.tok.encode(text, { add_special_tokens: addSpecialTokens }).ids;
  }

  decode(ids: readonly number[], skipSpecialTokens = true): string {
    return this.tok.decode([...ids], { skip_special_tokens: skipSpecialTokens, clean_up_tokenization_spaces: false });
  }

  get hasChatTemplate(): boolean {
    return this.template !== undefined;
  }

  /** Renders the folder's chat_template (a Jinja subset: for/if/elif/else, ==, !=, in, not/and/or, trim, str methods). */
  applyChatTemplate(messages: readonly ChatMessage[], addGenerationPrompt = true): string {
    if (!this.template) return messages.map((m) => m.content).join('\n');
    return renderTemplate(this.template, {
      messages,
      bos_token: this.bosToken,
      eos_token: this.eosToken,
      add_generation_prompt: addGenerationPrompt,
    });
  }

  /** Chat messages to prompt ids (the template supplies BOS, so no extra special tokens). */
  encodeChat(messages: readonly ChatMessage[], addGenerationPrompt = true): number[] {
    return this.encode(this.applyChatTemplate(messages, addGenerationPrompt), false);
  }
}

function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return undefined;
}

// ---------------------------------------------------------------- a small Jinja subset
/** Thrown for template syntax this renderer does not support; callers can fall back to raw prompts. */
export class ChatTemplateError extends Error {
  override readonly name = 'ChatTemplateError';
}

type Expr =
  | { k: 'lit'; v: unknown }
  | { k: 'name'; n: string }
  | { k: 'get'; o: Expr; key: Expr }
  | { k: 'call'; o: Expr; method: string; args: Expr[] }
  | { k: 'filter'; o: Expr; f: string }
  | { k: 'not'; e: Expr }
  | { k: 'bin'; op: string; a: Expr; b: Expr };

type TemplateNode =
  | { t: 'text'; s: string }
  | { t: 'out'; e: Expr }
  | { t: 'for'; v: string; it: Expr; body: TemplateNode[] }
  | { t: 'if'; branches: { c: Expr | null; body: TemplateNode[] }[] };

function parseTemplate(src: string): TemplateNode[] {
  // split into text / {{ }} / {% %} with whitespace control markers
  const parts: { kind: 'text' | 'out' | 'stmt'; s: string }[] = [];
  const re = /\{\{(-?)([\s\S]*?)(-?)\}\}|\{%(-?)([\s\S]*?)(-?)%\}|\{#[\s\S]*?#\}/g;
  let last = 0;
  let trimNext = false;
  let m: RegExpExecArray | null;
  while ((m = re.exec(src))) {
    let text = src.slice(last, m.index);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (m[1] === '-' || m[4] === '-') text = text.replace(/\s+$/, '');
    if (text) parts.push({ kind: 'text', s: text });
    if (m[2] !== undefined) parts.push({ kind: 'out', s: m[2] });
    else if (m[5] !== undefined) parts.push({ kind: 'stmt', s: m[5].trim() });
    trimNext = m[3] === '-' || m[6] === '-';
    last = re.lastIndex;
  }
  let tail = src.slice(last);
  if (trimNext) tail = tail.replace(/^\s+/, '');
  if (tail) parts.push({ kind: 'text', s: tail });

  let i = 0;
  const block = (ends: string[]): { nodes: TemplateNode[]; end: string } => {
    const nodes: TemplateNode[] = [];
    while (i < parts.length) {
      const p = parts[i++];
      if (p.kind === 'text') nodes.push({ t: 'text', s: p.s });
      else if (p.kind === 'out') nodes.push({ t: 'out', e: parseExpr(p.s) });
      else {
        const word = p.s.split(/\s+/)[0];
        if (ends.includes(word)) return { nodes, end: p.s };
        if (word === 'for') {
          const fm = /^for\s+(\w+)\s+in\s+([\s\S]+)$/.exec(p.s);
          if (!fm) throw new ChatTemplateError(`bad for: ${p.s}`);
          const body = block(['endfor']);
          nodes.push({ t: 'for', v: fm[1], it: parseExpr(fm[2]), body: body.nodes });
        } else if (word === 'if') {
          const branches: { c: Expr | null; body: TemplateNode[] }[] = [];
          let cond: Expr | null = parseExpr(p.s.slice(2));
          for (;;) {
            const b = block(['elif', 'else', 'endif']);
            branches.push({ c: cond, body: b.nodes });
            const w = b.end.split(/\s+/)[0];
            if (w === 'endif') break;
            cond = w === 'elif' ? parseExpr(b.end.slice(4)) : null;
          }
          nodes.push({ t: 'if', branches });
        } else throw new ChatTemplateError(`unsupported statement: {% ${p.s} %}`);
      }
    }
    if (ends.length) throw new ChatTemplateError(`missing {% ${ends[ends.length - 1]} %}`);
    return { nodes, end: '' };
  };
  return block([]).nodes;
}

function parseExpr(src: string): Expr {
  const toks = src.match(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|==|!=|\d+|\w+|[()[\].,|~+]/g) ?? [];
  let i = 0;
  const peek = (): string | undefined => toks[i];
  const eat = (t?: string): string => {
    const x = toks[i++];
    if (x === undefined || (t !== undefined && x !== t)) throw new ChatTemplateError(`template expression "${src}": expected ${t ?? 'more'}, got ${x ?? 'end'}`);
    return x;
  };
  const primary = (): Expr => {
    const t = eat();
    let e: Expr;
    if (t === '(') {
      e = or();
      eat(')');
    } else if (t[0] === "'" || t[0] === '"') e = { k: 'lit', v: t.slice(1, -1).replace(/\\n/g, '\n').replace(/\\(.)/g, '$1') };
    else if (/^\d+$/.test(t)) e = { k: 'lit', v: Number(t) };
    else if (t === 'true' || t === 'True') e = { k: 'lit', v: true };
    else if (t === 'false' || t === 'False') e = { k: 'lit', v: false };
    else if (t === 'none' || t === 'None') e = { k: 'lit', v: null };
    else if (/^\w+$/.test(t)) e = { k: 'name', n: t };
    else throw new ChatTemplateError(`template expression "${src}": unexpected ${t}`);
    for (;;) {
      if (peek() === '[') {
        eat('[');
        e = { k: 'get', o: e, key: or() };
        eat(']');
      } else if (peek() === '.') {
        eat('.');
        const n = eat();
        if (peek() === '(') {
          eat('(');
          const args: Expr[] = [];
          while (peek() !== ')') {
            args.push(or());
            if (peek() === ',') eat(',');
          }
          eat(')');
          e = { k: 'call', o: e, method: n, args };
        } else e = { k: 'get', o: e, key: { k: 'lit', v: n } };
      } else if (peek() === '|') {
        eat('|');
        e = { k: 'filter', o: e, f: eat() };
      } else return e;
    }
  };
  const concat = (): Expr => {
    let a = primary();
    while (peek() === '~' || peek() === '+') a = { k: 'bin', op: eat(), a, b: primary() };
    return a;
  };
  const cmp = (): Expr => {
    const a = concat();
    const t = peek();
    if (t === '==' || t === '!=' || t === 'in') return { k: 'bin', op: eat(), a, b: concat() };
    if (t === 'not' && toks[i + 1] === 'in') {
      i += 2;
      return { k: 'not', e: { k: 'bin', op: 'in', a, b: concat() } };
    }
    return a;
  };
  const not = (): Expr => (peek() === 'not' ? (eat(), { k: 'not', e: not() }) : cmp());
  const and = (): Expr => {
    let a = not();
    while (peek() === 'and') a = (eat(), { k: 'bin', op: 'and', a, b: not() });
    return a;
  };
  const or = (): Expr => {
    let a = and();
    while (peek() === 'or') a = (eat(), { k: 'bin', op: 'or', a, b: and() });
    return a;
  };
  const e = or();
  if (i !== toks.length) throw new ChatTemplateError(`template expression "${src}": trailing ${toks[i]}`);
  return e;
}

type Scope = Record<string, unknown>;

function evalExpr(e: Expr, s: Scope): unknown {
  switch (e.k) {
    case 'lit':
      return e.v;
    case 'name':
      return s[e.n];
    case 'get': {
      const o = evalExpr(e.o, s) as Record<string | number, unknown> | undefined;
      return o == null ? undefined : o[evalExpr(e.key, s) as string];
    }
    case 'call': {
      const o = evalExpr(e.o, s);
      const args = e.args.map((a) => evalExpr(a, s));
      if (typeof o !== 'string') throw new ChatTemplateError(`.${e.method}() on a non-string`);
      switch (e.method) {
        case 'strip':
          return o.trim();
        case 'lstrip':
          return o.trimStart();
        case 'rstrip':
          return o.trimEnd();
        case 'endswith':
          return o.endsWith(String(args[0]));
        case 'startswith':
          return o.startsWith(String(args[0]));
        case 'upper':
          return o.toUpperCase();
        case 'lower':
          return o.toLowerCase();
        default:
          throw new ChatTemplateError(`unsupported method .${e.method}()`);
      }
    }
    case 'filter': {
      const v = evalExpr(e.o, s);
      if (e.f === 'trim') return String(v ?? '').trim();
      if (e.f === 'length') return (v as { length?: number })?.length ?? 0;
      if (e.f === 'string') return String(v ?? '');
      throw new ChatTemplateError(`unsupported filter |${e.f}`);
    }
    case 'not':
      return !truthy(evalExpr(e.e, s));
    case 'bin': {
      if (e.op === 'and') return truthy(evalExpr(e.a, s)) && truthy(evalExpr(e.b, s));
      if (e.op === 'or') return truthy(evalExpr(e.a, s)) || truthy(evalExpr(e.b, s));
      const a = evalExpr(e.a, s);
      const b = evalExpr(e.b, s);
      if (e.op === '==') return a === b;
      if (e.op === '!=') return a !== b;
      if (e.op === 'in') return typeof b === 'string' ? b.includes(String(a)) : Array.isArray(b) ? b.includes(a) : b != null && typeof b === 'object' && String(a) in b;
      if (e.op === '+' && typeof a === 'number' && typeof b === 'number') return a + b;
      return String(a ?? '') + String(b ?? '');
    }
  }
}

function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  return Boolean(v);
}

function renderTemplate(nodes: readonly TemplateNode[], scope: Scope): string {
  let out = '';
  for (const n of nodes) {
    if (n.t === 'text') out += n.s;
    else if (n.t === 'out') {
      const v = evalExpr(n.e, scope);
      out += v == null ? '' : String(v);
    } else if (n.t === 'for') {
      const items = evalExpr(n.it, scope);
      if (!Array.isArray(items)) continue;
      items.forEach((item, index) => {
        const loop = { index0: index, index: index + 1, first: index === 0, last: index === items.length - 1, length: items.length };
        out += renderTemplate(n.body, { ...scope, [n.v]: item, loop });
      });
    } else {
      for (const b of n.branches) {
        if (b.c === null || truthy(evalExpr(b.c, scope))) {
          out += renderTemplate(b.body, scope);
          break;
        }
      }
    }
  }
  return out;
}
