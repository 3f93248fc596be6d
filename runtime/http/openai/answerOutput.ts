// One choice's text read as OpenAI's output fields: thought (reasoning_content), answer (content) and tool calls.
import type { ReasoningParserName, ToolCallParserName } from '../../config/serverConfig.ts';
import { ReasoningParser, type ThoughtAtStart } from './reasoningParser.ts';
import { toolCallParser, type CallDelta, type ParsedCall, type ToolCallParser } from './toolCallParser.ts';

/** Which parsers read a request's output (none: the text is the content, untouched). */
export interface OutputSpec {
  reasoning?: { parser: ReasoningParserName; at: ThoughtAtStart };
  /** Set when the request offers tools and tool_choice is not "none". */
  tools?: ToolCallParserName;
}

export interface OutputDelta {
  reasoning: string;
  content: string;
  calls: CallDelta[];
}

/** A whole answer's fields: each call in one piece. */
export interface WholeOutput {
  reasoning: string;
  content: string;
  calls: ParsedCall[];
}

export function hasParsers(spec: OutputSpec): boolean {
  return spec.reasoning !== undefined || spec.tools !== undefined;
}

/**
 * Text in, the three fields out, piece by piece (unary answers push their whole text once). With a
 * parser, the answer's whitespace at its start, at its end and around calls is dropped, so a call
 * alone gives no content, as OpenAI answers.
 */
export class AnswerOutput {
  private readonly reasoning: ReasoningParser | null;
  private readonly tools: ToolCallParser | null;
  /** Whitespace of the answer not shown yet: it goes out before the next text, or nowhere. */
  private space = '';
  private started = false;
  private readonly plain: boolean;

  /** `streamed`: calls go out as they are written (see toolCallParser); else each whole at its end. */
  constructor(spec: OutputSpec, streamed: boolean) {
    this.reasoning = spec.reasoning ? new ReasoningParser(spec.reasoning.parser, spec.reasoning.at) : null;
    this.tools = spec.tools ? toolCallParser(spec.tools, streamed) : null;
    this.plain = !hasParsers(spec);
  }

  push(text: string): OutputDelta {
    if (this.plain) return { reasoning: '', content: text, calls: [] };
    const r = this.reasoning ? this.reasoning.push(text) : { reasoning: '', content: text };
    return this.answer(r.reasoning, r.content, false);
  }

  end(): OutputDelta {
    if (this.plain) return { reasoning: '', content: '', calls: [] };
    const r = this.reasoning ? this.reasoning.end() : { reasoning: '', content: '' };
    return this.answer(r.reasoning, r.content, true);
  }

  private answer(reasoning: string, text: string, last: boolean): OutputDelta {
    const t = this.tools ? (last ? merge(this.tools.push(text), this.tools.end()) : this.tools.push(text)) : { content: text, calls: [] };
    let content = '';
    if (t.calls.length > 0) this.space = '';
    if (t.content.trim() === '') this.space += t.content;
    else {
      content = this.started ? this.space + t.content : t.content.trimStart();
      this.space = '';
      this.started = true;
      // trailing whitespace waits: it is shown only if more text follows
      const body = content.trimEnd();
      this.space = content.slice(body.length);
      content = body;
    }
    return { reasoning, content, calls: t.calls };
  }
}

function merge(a: { content: string; calls: CallDelta[] }, b: { content: string; calls: CallDelta[] }): { content: string; calls: CallDelta[] } {
  return { content: a.content + b.content, calls: [...a.calls, ...b.calls] };
}

/** A whole text read at once: the unary answer's fields. */
export function readWhole(spec: OutputSpec, text: string): WholeOutput {
  const o = new AnswerOutput(spec, false);
  const a = o.push(text);
  const b = o.end();
  return { reasoning: a.reasoning + b.reasoning, content: a.content + b.content, calls: joinCalls([...a.calls, ...b.calls]) };
}

/** Call pieces joined into calls, by index. */
export function joinCalls(pieces: readonly CallDelta[]): ParsedCall[] {
  const calls: ParsedCall[] = [];
  for (const p of pieces) {
    if (p.id !== undefined) calls[p.index] = { id: p.id, name: p.name ?? '', arguments: '' };
    calls[p.index].arguments += p.arguments;
  }
  return calls.filter((c) => c !== undefined);
}

/**
 * Call pieces as OpenAI streams them: a call's id, type and name with empty arguments first, then
 * its pieces since the last chunk as one arguments delta.
 */
export function streamedCalls(pieces: readonly CallDelta[]): object[] {
  const out: object[] = [];
  for (let i = 0; i < pieces.length; ) {
    const c = pieces[i];
    if (c.id !== undefined) out.push({ index: c.index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } });
    let text = c.arguments;
    for (i++; i < pieces.length && pieces[i].index === c.index && pieces[i].id === undefined; i++) text += pieces[i].arguments;
    if (text) out.push({ index: c.index, function: { arguments: text } });
  }
  return out;
}
