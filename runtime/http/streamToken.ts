// A committed token as the service hands it to the HTTP layer when the request asked for per-token detail (signals, logprobs).
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { TokenAttribution } from '../../shared/api/openai.ts';

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
