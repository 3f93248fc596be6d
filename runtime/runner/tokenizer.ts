// Text <-> token ids for a model folder, and its chat template rendered.
//
// Tokens by @huggingface/tokenizers; chat templates by @huggingface/jinja
// (the Jinja that transformers.js uses, with transformers' trim_blocks/lstrip_blocks), so real models' templates render.
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { TokenRouterError } from '../errors.ts';
import type { ModelFolder } from './modelFolder.ts';
import { decodeIds } from './tokenDecoder.ts';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | string;
  content: string;
}

export class TextTokenizer {
  private readonly tok: Tokenizer;
  /** The parsed chat_template, or why it could not be parsed (reported when a chat request needs it). */
  private readonly template: Template | Error | undefined;
  /** Special tokens a template may name (bos_token, eos_token, pad_token, ...), as transformers passes them. */
  private readonly specialTokens: Record<string, string>;
  readonly bosToken: string;
  readonly eosToken: string;
  readonly eosTokenId: number;
  readonly bosTokenId: number;

  constructor(
    /** As read from tokenizer.json (grammars read the vocabulary from it: runtime/grammar/modelVocabulary.ts). */
    readonly tokenizerJson: Record<string, unknown>,
    tokenizerConfig: Record<string, unknown>,
    ids: { bos: number; eos: number },
    /** The model this tokenizer belongs to, named in chat-template errors. */
    readonly modelName = 'model',
  ) {
    this.tok = new Tokenizer(tokenizerJson, tokenizerConfig);
    this.bosTokenId = ids.bos;
    this.eosTokenId = ids.eos;
    this.bosToken = tokenText(tokenizerConfig.bos_token) ?? this.tok.id_to_token(ids.bos) ?? '';
    this.eosToken = tokenText(tokenizerConfig.eos_token) ?? this.tok.id_to_token(ids.eos) ?? '';
    this.specialTokens = {};
    for (const [k, v] of Object.entries(tokenizerConfig)) {
      const text = k.endsWith('_token') ? tokenText(v) : undefined;
      if (text !== undefined) this.specialTokens[k] = text;
    }
    this.specialTokens.bos_token = this.bosToken;
    this.specialTokens.eos_token = this.eosToken;
    const source = chatTemplateSource(tokenizerConfig.chat_template);
    this.template = parseChatTemplate(source);
    this.templateIsPure = !/strftime_now/.test(source ?? '');
    this.templateReadsTools = /\b(tools|custom_tools)\b/.test(source ?? '');
  }

  /** The chat template reads a `tools` variable (Llama 3.1's `custom_tools` too); one that does not would drop a request's tools. */
  readonly templateReadsTools: boolean;

  /** The chat template renders the same text for the same messages (it reads no clock), so its output may be kept. */
  readonly templateIsPure: boolean;

  static fromFolder(folder: ModelFolder): TextTokenizer {
    return new TextTokenizer(folder.tokenizerJson, folder.tokenizerConfig, { bos: folder.config.bosTokenId, eos: folder.config.eosTokenIds[0] }, folder.name);
  }

  /** Encodes text; special tokens written in the text (e.g. "<s>") map to their ids. */
  encode(text: string, addSpecialTokens = true): number[] {
    return this.tok.encode(text, { add_special_tokens: addSpecialTokens }).ids;
  }

  decode(ids: readonly number[], skipSpecialTokens = true): string {
    return decodeIds(this.tok, ids, skipSpecialTokens);
  }

  get hasChatTemplate(): boolean {
    return this.template !== undefined;
  }

  /**
   * Renders the folder's chat_template as transformers' apply_chat_template does (messages, add_generation_prompt,
   * the special tokens; raise_exception and strftime_now are built in). A template that does not parse, or fails or
   * raises while rendering, is the request's fault as far as the client can tell: an invalid_request (400) naming the model.
   * `variables` are further template variables (tools, documents, enable_thinking, ...: vLLM's chat_template_kwargs).
   */
  applyChatTemplate(messages: readonly ChatMessage[], addGenerationPrompt = true, variables: Readonly<Record<string, unknown>> = {}): string {
    const t = this.template;
    if (t === undefined) return messages.map((m) => m.content).join('\n');
    if (t instanceof Error) throw this.templateError('does not parse', t);
    try {
      return t.render({ ...this.specialTokens, ...variables, messages, add_generation_prompt: addGenerationPrompt });
    } catch (e) {
      throw this.templateError('failed to render these messages', e);
    }
  }

  private templateError(what: string, cause: unknown): TokenRouterError {
    const why = cause instanceof Error ? cause.message : String(cause);
    return new TokenRouterError('invalid_request', `model "${this.modelName}": its chat template ${what}: ${why}`, 'messages');
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

function chatTemplateSource(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  // transformers also allows a list of named templates; the one named "default" is used for chat.
  if (Array.isArray(v)) {
    const d = v.find((x) => x && typeof x === 'object' && (x as { name?: unknown }).name === 'default') as { template?: unknown } | undefined;
    return typeof d?.template === 'string' ? d.template : undefined;
  }
  return undefined;
}

function parseChatTemplate(src: string | undefined): Template | Error | undefined {
  if (src === undefined) return undefined;
  try {
    return new Template(src);
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}
