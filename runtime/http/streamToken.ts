// A committed token as the service hands it to the HTTP layer when the request asked for per-token detail (signals, logprobs), and its OpenAI logprobs.
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { ChatTokenLogprob, CompletionLogprobs, TokenAttribution } from '../../shared/api/openaiAnswer.ts';

/** A committed token as the service streams it: the wire's attribution, plus logprobs for the HTTP layer to shape. */
export interface StreamToken extends TokenAttribution {
  /** Only when the request asked for logprobs (sampling.topLogprobs): the writing model's distribution here. */
  logprobs?: TokenLogprobs;
}

/** The probability the writing model gave the committed token, and its most likely tokens, best first. */
export interface TokenLogprobs {
  prob: number;
  topIds: readonly number[];
  topProbs: readonly number[];
}

/** Built only for requests that read it (tokenrouter_tokens or logprobs): a lean stream pays for none of it. */
export function streamToken(id: number, text: string, model: string, sig: TokenSignals, atHandoff: boolean, topLogprobs: number | undefined): StreamToken {
  const st: StreamToken = {
    id,
    text,
    model,
    signals: { entropy: sig.entropy, maxProb: sig.maxProb, margin: sig.margin, heads: sig.heads },
    decision: atHandoff ? 'handoff' : 'stay',
    kept: true,
  };
  if (topLogprobs !== undefined) st.logprobs = { prob: sig.tokenProb, topIds: sig.topIds.slice(0, topLogprobs), topProbs: sig.topProbs.slice(0, topLogprobs) };
  return st;
}

/** OpenAI reports log(0) as -9999 (JSON has no -Infinity). */
const logOf = (p: number) => (p > 0 ? Math.max(Math.log(p), -9999) : -9999);
const bytesOf = (s: string) => Array.from(Buffer.from(s, 'utf8'));

/**
 * The tokens' logprobs in the answer's shape: chat's per-token entries, or the legacy parallel
 * arrays (`at.offset` carries the text offset across a stream's chunks; the sampled token is always
 * in its top_logprobs, as OpenAI documents).
 */
export function logprobsOf(
  tokenizer: { decode(ids: number[]): string },
  kind: 'chat' | 'completion',
  ts: readonly StreamToken[],
  at: { offset: number },
): { content: ChatTokenLogprob[] } | CompletionLogprobs {
  const decode = (id: number) => tokenizer.decode([id]);
  if (kind === 'chat') {
    const content = ts.map(({ text, model, logprobs: lp }) => ({
      token: text,
      logprob: logOf(lp!.prob),
      bytes: bytesOf(text),
      top_logprobs: lp!.topIds.map((id, i) => {
        const s = decode(id);
        return { token: s, logprob: logOf(lp!.topProbs[i]), bytes: bytesOf(s) };
      }),
      tokenrouter_model: model,
    }));
    return { content };
  }
  return {
    tokens: ts.map((t) => t.text),
    token_logprobs: ts.map((t) => logOf(t.logprobs!.prob)),
    top_logprobs: ts.map(({ id, text, logprobs: lp }) => {
      const entries: [string, number][] = lp!.topIds.map((tid, i) => [decode(tid), logOf(lp!.topProbs[i])]);
      if (!lp!.topIds.includes(id)) entries.push([text, logOf(lp!.prob)]);
      return Object.fromEntries(entries);
    }),
    text_offset: ts.map((t) => {
      at.offset += t.text.length;
      return at.offset - t.text.length;
    }),
    tokenrouter_models: ts.map((t) => t.model),
  };
}

/** The tokenrouter extension's token list, without the logprobs OpenAI's own fields already carry. */
export const plainTokens = (ts: readonly StreamToken[]) => ts.map(({ logprobs: _lp, ...t }) => t);
