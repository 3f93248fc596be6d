// One streamed choice's pending output and its SSE chunks, with the constant part of every chunk serialised once per request.
import type { StreamToken, TokenRouterService } from '../../serve/tokenRouterService.ts';
import type { Kind } from './requestPlan.ts';
import { chatLogprob, completionLogprobs, plainTokens } from './responseShapes.ts';

/** The request-wide head of every chunk, up to the choice: `data: {"id":…,"object":…,"created":…,"model":…,"choices":[`. */
export function chunkHead(kind: Kind, id: string, model: string, createdAt: number): string {
  const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  return `data: {"id":${JSON.stringify(id)},"object":"${object}","created":${createdAt},"model":${JSON.stringify(model)},"choices":[`;
}

/**
 * What one choice committed since its last chunk: text, a count per writing model, and (with
 * `tokenrouter_tokens` or logprobs) the tokens themselves. A chunk goes out when there is text to
 * show, so tokens whose text is held back (a stop string forming, half a UTF-8 character) ride on
 * the next one and every chunk's `tokenrouter.models` counts the tokens it carries.
 */
export class ChoiceChunks {
  private text = '';
  private readonly models = new Map<string, number>();
  private tokens: StreamToken[] = [];
  /** Tokens committed since the last chunk. */
  count = 0;
  private first = true;
  private readonly head: string;
  private readonly offset: { offset: number };

  constructor(
    private readonly service: TokenRouterService,
    private readonly kind: Kind,
    requestHead: string,
    index: number,
    /** Completions with echo: the prompt's text leads the choice's first chunk. */
    private echo: string,
    /** Top logprobs per token the client asked for; undefined: none. */
    private readonly logprobs: number | undefined,
  ) {
    this.head = `${requestHead}{"index":${index},`;
    this.offset = { offset: echo.length };
  }

  add(text: string, model: string | null, token: StreamToken | null): void {
    this.text += text;
    if (model !== null) {
      this.count++;
      this.models.set(model, (this.models.get(model) ?? 0) + 1);
    }
    if (token) this.tokens.push(token);
  }

  /** Something the client has not seen: text, or tokens to attribute. */
  get pending(): boolean {
    return this.text.length > 0 || this.count > 0 || this.echo.length > 0;
  }

  get hasText(): boolean {
    return this.text.length > 0 || this.echo.length > 0;
  }

  /** The pending output as one SSE event, and the choice emptied. */
  take(): string {
    const text = this.echo + this.text;
    this.echo = '';
    let body: string;
    if (this.kind === 'chat') {
      const delta = this.first ? `{"role":"assistant","content":${JSON.stringify(text)}}` : text ? `{"content":${JSON.stringify(text)}}` : '{}';
      body = `"delta":${delta},"finish_reason":null,"logprobs":${this.logprobsJson()}}]`;
    } else body = `"text":${JSON.stringify(text)},"finish_reason":null,"logprobs":${this.logprobsJson()}}]`;
    this.first = false;
    const ext = this.count === 0 ? '' : `,"tokenrouter":{"models":${this.modelsJson()}${this.tokens.length > 0 ? `,"tokens":${JSON.stringify(plainTokens(this.tokens))}` : ''}}`;
    this.text = '';
    this.count = 0;
    this.models.clear();
    this.tokens = [];
    return `${this.head}${body}${ext}}\n\n`;
  }

  private logprobsJson(): string {
    if (this.logprobs === undefined || this.tokens.length === 0) return 'null';
    const lp = this.kind === 'chat' ? { content: this.tokens.map((t) => chatLogprob(this.service, t)) } : completionLogprobs(this.service, this.tokens, this.offset);
    return JSON.stringify(lp);
  }

  /** One model (the common case) needs no object built. */
  private modelsJson(): string {
    if (this.models.size === 1) for (const [m, n] of this.models) return `{${JSON.stringify(m)}:${n}}`;
    return JSON.stringify(Object.fromEntries(this.models));
  }
}
