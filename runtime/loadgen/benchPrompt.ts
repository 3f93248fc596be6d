// The prompts the serving benchmarks send: word problems of the default task, alone or after a shared few-shot preamble.
import { sampleProblem, sampleProblemCount } from '../http/loadGenerator.ts';
import type { TaskProblem } from '../eval/loadTask.ts';
import type { CompletionBody } from './streamCompletion.ts';

/**
 * Problem i of a benchmark: measured requests (i ≥ 0) cycle through the first half of the validation
 * problems, warm-up requests (negative i) through the second half, so a warm-up never primes a measured prompt.
 */
function benchProblem(i: number): TaskProblem {
  const half = Math.floor(sampleProblemCount() / 2);
  return sampleProblem(i >= 0 ? i % half : half + ((-i - 1) % half));
}

/** The user message of request i (negative i: a warm-up's). */
export const benchPrompt = (i: number): string => benchProblem(i).question;

type Messages = CompletionBody['messages'];

/** A worked example in the style the bundled models answer in: the steps, then "The answer is N.". */
function workedExample(question: string, steps: string, final: number): Messages {
  return [
    { role: 'user', content: question },
    { role: 'assistant', content: `${steps}\nThe answer is ${final}.` },
  ];
}

/** Three worked examples every few-shot request starts with (none of them is a validation or held-out problem). */
export const FEW_SHOT: Messages = [
  ...workedExample(
    'Nora has 4 boxes of pencils. Each box holds 36 pencils. She gives 25 pencils to a friend. How many pencils does Nora have left?',
    'Nora has 4 boxes with 36 pencils in each, so she has 4 * 36 = 144 pencils. After giving away 25, she has 144 - 25 = 119 pencils left.',
    119,
  ),
  ...workedExample(
    'Every day Omar reads 17 pages. After 9 days he skips back and rereads 30 of them. How many new pages has Omar read?',
    'Omar reads 17 pages a day for 9 days, so he reads 17 * 9 = 153 pages. Taking away the 30 he reread, he has read 153 - 30 = 123 new pages.',
    123,
  ),
  ...workedExample(
    'A baker makes 7 trays of rolls with 24 rolls on each tray. Then she makes 58 more rolls. How many rolls does she have now?',
    'The baker makes 7 trays with 24 rolls on each, so she has 7 * 24 = 168 rolls. With 58 more, she has 168 + 58 = 226 rolls.',
    226,
  ),
];

/**
 * Request i of the prefix workload: chats of two turns after the few-shot preamble. Even i opens
 * chat i/2 with its first question; odd i resends that chat's history (the question and its final
 * answer) with a second question, as a chat client does. Warm-up requests (negative i) have chats of their own.
 */
export function fewShotChat(i: number): Messages {
  const chat = Math.floor(Math.abs(i) / 2);
  const at = (k: number) => benchProblem(i < 0 ? -1 - k : k);
  const first = at(2 * chat);
  if (Math.abs(i) % 2 === 0) return [...FEW_SHOT, { role: 'user', content: first.question }];
  return [
    ...FEW_SHOT,
    { role: 'user', content: first.question },
    { role: 'assistant', content: `The answer is ${first.answer}.` },
    { role: 'user', content: at(2 * chat + 1).question },
  ];
}
