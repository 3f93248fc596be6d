// The prompts the serving benchmarks send: questions of the bundled multiplication task, alone or after a shared few-shot preamble.
import { sampleQuestion } from '../http/loadGenerator.ts';
import type { CompletionBody } from './streamCompletion.ts';

const WARMUP_OFFSET = 100_000;

/** The user message of request i; warm-up requests (negative i) get questions the measured ones never ask. */
export function benchPrompt(i: number): string {
  return sampleQuestion(i >= 0 ? i : WARMUP_OFFSET - i);
}

type Messages = CompletionBody['messages'];

/** A worked example in the task's alphabet: a*b split over b's tens and units. */
function workedExample(a: number, b: number): Messages {
  const tens = b - (b % 10);
  return [
    { role: 'user', content: `${a}*${b}=` },
    { role: 'assistant', content: `${a}*${b}=${a}*${tens}+${a}*${b % 10}=${a * tens}+${a * (b % 10)}=${a * b}` },
  ];
}

/**
 * Three worked examples every few-shot request starts with: about 150 tokens with the bundled models'
 * character tokenizer and chat template, so preamble, two turns and a short answer fit their 256.
 */
export const FEW_SHOT: Messages = [...workedExample(436, 47), ...workedExample(128, 93), ...workedExample(705, 64)];

function answer(question: string): string {
  const [a, b] = question.slice(0, -1).split('*').map(Number);
  return `${question}${a * b}`;
}

/**
 * Request i of the prefix workload: chats of two turns after the few-shot preamble. Even i opens
 * chat i/2 with its first question; odd i resends that chat's history (question and its answer)
 * with a second question, as a chat client does. Warm-up requests (negative i) have chats of their own.
 */
export function fewShotChat(i: number): Messages {
  const chat = Math.floor(Math.abs(i) / 2) + (i < 0 ? WARMUP_OFFSET : 0);
  const first = sampleQuestion(2 * chat);
  if (Math.abs(i) % 2 === 0) return [...FEW_SHOT, { role: 'user', content: first }];
  return [
    ...FEW_SHOT,
    { role: 'user', content: first },
    { role: 'assistant', content: answer(first) },
    { role: 'user', content: sampleQuestion(2 * chat + 1) },
  ];
}
