// Draw adjustments a plain request does not ask for: logit_bias and the frequency and presence penalties (OpenAI), stop_token_ids (vLLM).
import type { ChatRequest } from '../../../shared/api/openai.ts';
import { TokenRouterError } from '../../errors.ts';
import type { SamplingParams } from '../../runner/modelRunner.ts';

type Body = Pick<ChatRequest, 'logit_bias' | 'frequency_penalty' | 'presence_penalty' | 'stop_token_ids'>;

/** Checks the body's token ids against the vocabulary (refused by name); gives what a choice whose output starts at `outputFrom` adds to its sampling. */
export function drawAdjustments(body: Body, vocab: number): (outputFrom: number) => Pick<SamplingParams, 'penalties' | 'stopTokenIds'> {
  const logitBias: [number, number][] = Object.entries(body.logit_bias ?? {}).map(([k, v]) => [Number(k), v]);
  const outside = logitBias.find(([t]) => t >= vocab);
  if (outside) throw refuse('logit_bias', `logit_bias token id ${outside[0]} is outside the vocabulary (size ${vocab})`);
  const stopIds = body.stop_token_ids ?? [];
  const badStop = stopIds.find((t) => t >= vocab);
  if (badStop !== undefined) throw refuse('stop_token_ids', `stop_token_ids holds ${badStop}, outside the vocabulary (size ${vocab})`);
  const frequency = body.frequency_penalty ?? 0;
  const presence = body.presence_penalty ?? 0;
  const penalised = frequency !== 0 || presence !== 0 || logitBias.length > 0;
  return (outputFrom) => ({
    ...(stopIds.length > 0 ? { stopTokenIds: [...new Set(stopIds)] } : {}),
    ...(penalised ? { penalties: { frequency, presence, logitBias, outputFrom } } : {}),
  });
}

const refuse = (param: string, message: string) => new TokenRouterError('invalid_request', message, param);
