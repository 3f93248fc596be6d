// The graders a task names: final number, exact string, regular expression, choice letter; each turns (answer text, reference) into right or wrong.
import { CHOICE_LETTERS, type GraderSpec } from '../../shared/task.ts';

/** Right or wrong: the model's whole answer text against the task's reference. */
export type Grade = (output: string, reference: string) => boolean;

/**
 * Numbers as written in prose: thousands groups ("1,234", only whole groups of three), a decimal part,
 * a leading minus that is not a subtraction ("5-3" holds 5 and 3).
 */
const NUMBER = /(?<![\d.])(?:(?<!\d)-)?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?/g;

/** A number's canonical text: no group commas, no leading zeros, no trailing decimal zeros ("12.50" = "12.5", "12.0" = "12", "-0" = "0"). */
export function normaliseNumber(text: string): string | null {
  const m = /^(-?)(\d[\d,]*)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) return null;
  const whole = m[2].replace(/,/g, '').replace(/^0+(?=\d)/, '');
  const frac = (m[3] ?? '').replace(/0+$/, '');
  const body = frac ? `${whole}.${frac}` : whole;
  return /^0(\.0*)?$/.test(body) ? '0' : `${m[1]}${body}`;
}

/** The last number in `text`, normalised; null when it holds none. */
export function finalNumber(text: string): string | null {
  const all = text.match(NUMBER);
  return all ? normaliseNumber(all[all.length - 1]) : null;
}

/** The first of A–E standing alone ("(B)", "Answer: C.", not the C of "Cat"); null when none does. */
export function firstChoice(text: string): string | null {
  const m = new RegExp(`(?<![A-Za-z0-9])([${CHOICE_LETTERS.join('')}])(?![A-Za-z0-9])`).exec(text);
  return m ? m[1] : null;
}

/** What a regex grader reads of the trimmed answer: group `answer`, else the first capture group, else the whole match; null without a match. */
export function regexAnswer(re: RegExp, text: string): string | null {
  re.lastIndex = 0;
  const m = re.exec(text.trim());
  if (!m) return null;
  if (m.groups && 'answer' in m.groups) return m.groups.answer ?? null;
  return m.length > 1 ? (m[1] ?? null) : m[0];
}

/** The grader a task names. */
export function graderOf(spec: GraderSpec): Grade {
  switch (spec.kind) {
    case 'final-number':
      return (output, reference) => {
        const got = finalNumber(output);
        return got !== null && got === normaliseNumber(reference);
      };
    case 'exact':
      return (output, reference) => output.trim() === reference.trim();
    case 'regex': {
      // without the g and y flags a RegExp keeps no state between answers
      const re = new RegExp(spec.pattern, (spec.flags ?? '').replace(/[gy]/g, ''));
      return (output, reference) => regexAnswer(re, output) === reference;
    }
    case 'choice':
      return (output, reference) => firstChoice(output) === reference.trim();
  }
}

/** Why `reference` can never be graded right under `spec` (a final-number task whose answer is no number, say); null when it can. */
export function referenceProblem(spec: GraderSpec, reference: string): string | null {
  if (spec.kind === 'final-number' && normaliseNumber(reference) === null)
    return `"${reference}" is not a number (the final-number grader compares numbers such as 1234, 1,234, -3.5)`;
  if (spec.kind === 'choice' && !(CHOICE_LETTERS as readonly string[]).includes(reference.trim()))
    return `"${reference}" is not one of the letters ${CHOICE_LETTERS.join(', ')}`;
  return null;
}
