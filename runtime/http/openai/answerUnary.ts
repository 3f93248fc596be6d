// The non-streamed OpenAI answer.
import type { Request, Response } from 'express';
import { wantsDetail, type GenerateHandle, type GenerateOutcome } from '../generateParams.ts';
import type { StreamToken } from '../streamToken.ts';
import { serverTiming, spentInCluster } from '../../eval/entryProfile.ts';
import { sendError } from '../httpErrors.ts';
import { onClientGone, startAll, type AnswerContext } from './choices.ts';
import type { Plan } from './requestPlan.ts';
import { attribution, chatLogprob, completionLogprobs, finishReasonOf, plainTokens, sumAttribution, toolCallOf, usageOf } from './responseShapes.ts';
import { hasParsers, readWhole } from './answerOutput.ts';

/** A chat choice's message and finish reason: the text as it is, or read by the model's reasoning and tool-call parsers. */
function chatMessage(plan: Plan, o: GenerateOutcome) {
  if (!hasParsers(plan.output)) return { message: { role: 'assistant', content: o.text }, finish_reason: o.finishReason };
  const r = readWhole(plan.output, o.text);
  const message: Record<string, unknown> = { role: 'assistant', content: r.calls.length > 0 && r.content === '' ? null : r.content };
  if (plan.output.reasoning) message.reasoning_content = r.reasoning === '' ? null : r.reasoning;
  if (r.calls.length > 0) message.tool_calls = r.calls.map(toolCallOf);
  return { message, finish_reason: finishReasonOf(o.finishReason, r.calls.length) };
}

/** A non-streamed answer: one JSON body when every choice has ended (one failed choice fails the request). */
export function answerUnary({ service, metrics, drain, onCompletionTokens }: AnswerContext, plan: Plan, res: Response, req: Request): void {
  const { kind, jobs } = plan;
  const tokens: StreamToken[][] = jobs.map(() => []);
  const outs: GenerateOutcome[] = new Array(jobs.length);
  const started = performance.now();
  let done = 0;
  let over = false;
  let handles: GenerateHandle[] = [];
  const cancelAll = () => handles.forEach((h) => h.cancel());
  const perTokenOf = (ts: StreamToken[]) => (plan.perToken ? { tokens: plainTokens(ts) } : {});
  handles = startAll(service, plan, (k) => ({
    // the answer's text is the whole text at the end; only per-token detail is gathered as it comes
    onToken: wantsDetail(jobs[k].params)
      ? (token, model, _i, signals, atHandoff) =>
          void tokens[k].push(service.streamToken(token, model, signals!, atHandoff, jobs[k].params.sampling.topLogprobs))
      : () => {},
    onEnd: (o) => {
      metrics.observeRequest(o, started);
      spentInCluster(res, o.result);
      onCompletionTokens?.(o.result.tokens.length);
      if (over) return;
      if (o.finishReason === 'cancelled' || o.finishReason === 'error') {
        // One choice lost fails the request: the others are cancelled, not left running unanswered.
        over = true;
        cancelAll();
        if (o.finishReason === 'error') sendError(res, o.result.error ?? new Error('failed'));
        return;
      }
      outs[k] = o;
      if (++done < jobs.length) return;
      const choices = jobs.map((job, i) => {
        const o = outs[i];
        const lp =
          plan.logprobs === undefined
            ? null
            : kind === 'chat'
              ? { content: tokens[i].map((t) => chatLogprob(service, t)) }
              : completionLogprobs(service, tokens[i], { offset: job.echo.length });
        const choice =
          kind === 'chat'
            ? { index: job.index, ...chatMessage(plan, o), logprobs: lp }
            : { index: job.index, text: job.echo + o.text, finish_reason: o.finishReason, logprobs: lp };
        return jobs.length === 1 ? choice : { ...choice, tokenrouter: { ...attribution(o), ...perTokenOf(tokens[i]) } };
      });
      serverTiming(res);
      res.json({
        id: plan.id,
        object: kind === 'chat' ? 'chat.completion' : 'text_completion',
        created: Math.floor(Date.now() / 1000),
        model: plan.model,
        choices,
        usage: usageOf(plan.promptTokens, outs, plan.jobs.length / plan.promptCount),
        tokenrouter: jobs.length === 1 ? { ...attribution(outs[0]), ...perTokenOf(tokens[0]) } : sumAttribution(outs),
      });
    },
  }));
  onClientGone(req, res, cancelAll);
  drain?.track(res, (e) => {
    if (over) return;
    over = true;
    cancelAll();
    sendError(res, e);
  });
}
