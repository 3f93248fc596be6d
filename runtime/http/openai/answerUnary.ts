// The non-streamed OpenAI answer: one JSON body when every choice has ended (one failed choice fails the request).
import type { Request, Response } from 'express';
import { serverTiming } from '../../eval/entryProfile.ts';
import { sendError } from '../httpErrors.ts';
import { logprobsOf, plainTokens, type StreamToken } from '../streamToken.ts';
import { hasParsers, readWhole } from './answerOutput.ts';
import { attribution, finishReasonOf, usageOf } from './answerUsage.ts';
import { runChoices, type AnswerContext, type GenerateOutcome, type Plan } from './requestPlan.ts';

/** A chat choice's message and finish reason: the text as it is, or read by the model's reasoning and tool-call parsers. */
function chatMessage(plan: Plan, o: GenerateOutcome) {
  if (!hasParsers(plan.output)) return { message: { role: 'assistant', content: o.result.text }, finish_reason: o.finishReason };
  const r = readWhole(plan.output, o.result.text);
  const message: Record<string, unknown> = { role: 'assistant', content: r.calls.length > 0 && r.content === '' ? null : r.content };
  if (plan.output.reasoning) message.reasoning_content = r.reasoning === '' ? null : r.reasoning;
  if (r.calls.length > 0) message.tool_calls = r.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  return { message, finish_reason: finishReasonOf(o.finishReason, r.calls.length) };
}

export function answerUnary(ctx: AnswerContext, plan: Plan, res: Response, req: Request): void {
  const { kind, jobs } = plan;
  // the answer's text is the whole text at the end; only per-token detail is gathered as it comes
  const tokens: StreamToken[][] = jobs.map(() => []);
  const perTokenOf = (ts: StreamToken[]) => (plan.perToken ? { tokens: plainTokens(ts) } : {});
  const done = (outs: GenerateOutcome[]) => {
    const choices = jobs.map((job, i) => {
      const o = outs[i];
      const logprobs = plan.logprobs === undefined ? null : logprobsOf(ctx.service.tokenizer, kind, tokens[i], { offset: job.echo.length });
      const choice =
        kind === 'chat'
          ? { index: i, ...chatMessage(plan, o), logprobs }
          : { index: i, text: job.echo + o.result.text, finish_reason: o.finishReason, logprobs };
      return jobs.length === 1 ? choice : { ...choice, tokenrouter: { ...attribution(o), ...perTokenOf(tokens[i]) } };
    });
    serverTiming(res);
    res.json({
      id: plan.id,
      object: kind === 'chat' ? 'chat.completion' : 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: plan.model,
      choices,
      usage: usageOf(plan, outs),
      tokenrouter: jobs.length === 1 ? { ...attribution(outs[0]), ...perTokenOf(tokens[0]) } : attribution(...outs),
    });
  };
  const token = (k: number, _text: string, _model: string, detail: StreamToken | null) => void (detail && tokens[k].push(detail));
  // a cancelled request has nobody to answer
  runChoices(ctx, plan.jobs, req, res, { unary: true, token, done, stopped: (e) => e !== null && sendError(res, e) });
}
