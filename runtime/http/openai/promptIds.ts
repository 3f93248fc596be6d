// A request's prompt text bounded before it is encoded, and a completions request's prompts (text or token ids, one or several) as ids.
import type { CompletionRequest } from '../../../shared/api/openaiCompletions.ts';
import { TokenRouterError } from '../../errors.ts';
import type { TokenRouterService } from '../tokenRouterService.ts';

const refuse = (param: string, message: string) => new TokenRouterError('invalid_request', message, param);

/**
 * Encoding runs on the event loop every client shares and costs time linear in the text (about 5 µs
 * a character with the bundled tokenizer: a 1 MB prompt stalled all streams for seconds). No
 * tokenizer averages anywhere near 32 characters a token, so longer text cannot fit the context
 * window and is refused before it is encoded.
 */
export function refuseTextBeyondWindow(chars: number, maxContext: number, param: string): void {
  if (chars > maxContext * 32) throw refuse(param, `the prompt is ${chars} characters, far more than the context window of ${maxContext} tokens can hold`);
}

/** Every prompt of a completions request as ids (and its text, for echo); each is checked as a single prompt was. Echo refuses logprobs. */
export function completionPrompts(service: TokenRouterService, body: CompletionRequest, maxContext: number, vocab: number): { ids: number[]; text: string }[] {
  if (body.echo && body.logprobs != null) throw refuse('echo', "echo with logprobs would need the prompt tokens' logprobs, which this server does not compute");
  const p = body.prompt;
  const list: (string | number[])[] = typeof p === 'string' ? [p] : p.length > 0 && typeof p[0] === 'number' ? [p as number[]] : (p as (string | number[])[]);
  return list.map((x, i) => {
    const param = list.length > 1 ? `prompt.${i}` : 'prompt';
    if (typeof x === 'string') {
      if (x.length === 0) throw refuse(param, 'prompt is empty');
      refuseTextBeyondWindow(x.length, maxContext, param);
      return { ids: service.tokenizer.encode(x, true), text: x };
    }
    const bad = x.find((t) => t >= vocab);
    if (bad !== undefined) throw refuse(param, `prompt token id ${bad} is outside the vocabulary (size ${vocab})`);
    return { ids: x, text: body.echo ? service.tokenizer.decode(x) : '' };
  });
}
