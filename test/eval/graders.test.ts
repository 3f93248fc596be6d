// Each grader a task may name, on answers written the ways models write them; the bundled task's grader against the one the quality report used.
import { describe, expect, it } from 'vitest';
import { finalNumber, firstChoice, graderOf, normaliseNumber, referenceProblem } from '../../runtime/eval/graders.ts';
import { loadTask } from '../../runtime/eval/loadTask.ts';
import { finalAnswer } from '../../runtime/runner/onnxAccuracy.ts';
import { TINY_FAMILY_DIR } from '../support/tinyFamily.ts';

describe('final-number', () => {
  const grade = graderOf({ kind: 'final-number' });
  it('reads the last number, with group commas and decimal zeros normalised', () => {
    expect(finalNumber('She had 3 apples, then 1,234 more: 1,237 in all.')).toBe('1237');
    expect(finalNumber('12.0')).toBe('12');
    expect(finalNumber('the price is $12.50.')).toBe('12.5');
    expect(finalNumber('0.0')).toBe('0');
    expect(finalNumber('007 agents')).toBe('7');
    expect(finalNumber('it fell to -4 degrees')).toBe('-4');
    // a minus between digits is a subtraction, not a sign
    expect(finalNumber('9-4')).toBe('4');
    // a comma between numbers that are not thousands groups separates them
    expect(finalNumber('347*6=2082,347*20=6940')).toBe('6940');
    expect(finalNumber('1,2345')).toBe('2345');
    expect(finalNumber('no digits here')).toBeNull();
  });
  it('grades "1,234" as 1234 and "12.0" as 12, and nothing else as right', () => {
    expect(grade('So the answer is 1,234.', '1234')).toBe(true);
    expect(grade('The answer is 1234', '1,234')).toBe(true);
    expect(grade('That makes 12.0 kg.', '12')).toBe(true);
    expect(grade('That makes 12.5 kg.', '12')).toBe(false);
    expect(grade('12 then 13', '12')).toBe(false);
    expect(grade('', '0')).toBe(false);
  });
  it('normalises references the same way and refuses one that is no number', () => {
    expect(normaliseNumber(' 1,000.00 ')).toBe('1000');
    expect(normaliseNumber('-0')).toBe('0');
    expect(normaliseNumber('twelve')).toBeNull();
    expect(referenceProblem({ kind: 'final-number' }, 'twelve')).toMatch(/"twelve" is not a number/);
    expect(referenceProblem({ kind: 'final-number' }, '12')).toBeNull();
  });
});

describe('exact', () => {
  const grade = graderOf({ kind: 'exact' });
  it('compares the trimmed answer with the trimmed reference, case and all', () => {
    expect(grade('  Paris\n', 'Paris')).toBe(true);
    expect(grade('paris', 'Paris')).toBe(false);
    expect(grade('Paris.', 'Paris')).toBe(false);
  });
});

describe('regex', () => {
  it('reads the group named answer, else the first group, else the whole match', () => {
    expect(graderOf({ kind: 'regex', pattern: 'x=(\\d+), (?<answer>\\w+)' })('x=1, ok', 'ok')).toBe(true);
    expect(graderOf({ kind: 'regex', pattern: 'x=(\\d+), (?<answer>\\w+)' })('x=1, ok', '1')).toBe(false);
    expect(graderOf({ kind: 'regex', pattern: 'answer: (\\w+)' })('the answer: yes!', 'yes')).toBe(true);
    expect(graderOf({ kind: 'regex', pattern: '\\d{3}' })('code 4567', '456')).toBe(true);
    expect(graderOf({ kind: 'regex', pattern: 'answer: (\\w+)' })('no match', 'no')).toBe(false);
  });
  it('honours flags and keeps no state between answers, even with g', () => {
    const grade = graderOf({ kind: 'regex', pattern: 'ANSWER (\\w)', flags: 'gi' });
    expect(grade('answer a', 'a')).toBe(true);
    expect(grade('answer a', 'a')).toBe(true);
    expect(grade('answer b', 'a')).toBe(false);
  });
  it('as the bundled multiplication task, grades exactly as the number after the last "="', () => {
    const task = loadTask('multiplication', TINY_FAMILY_DIR);
    const outputs = ['347*6=2082,347*20=6940,2082+6940=9022', '347*6=2082,347*20=6940,2082+6940=9022,', ' =9022 ', '= 9022', '9022', '', '=', 'a=1=9022'];
    for (const o of outputs) expect(task.grade(o, '9022'), o).toBe(finalAnswer(o) === '9022');
    expect(outputs.filter((o) => task.grade(o, '9022'))).toEqual(['347*6=2082,347*20=6940,2082+6940=9022', ' =9022 ', 'a=1=9022']);
  });
});

describe('choice', () => {
  const grade = graderOf({ kind: 'choice' });
  it('reads the first standalone letter A to E', () => {
    expect(firstChoice('(B) because')).toBe('B');
    expect(firstChoice('Answer: C.')).toBe('C');
    expect(firstChoice('Clearly, D')).toBe('D');
    expect(firstChoice('Fine, F and G')).toBeNull();
    expect(grade('The answer is (E).', 'E')).toBe(true);
    expect(grade('B or C? C.', 'C')).toBe(false);
  });
  it('refuses a reference that is no letter A to E', () => {
    expect(referenceProblem({ kind: 'choice' }, 'F')).toMatch(/"F" is not one of the letters A, B, C, D, E/);
    expect(referenceProblem({ kind: 'choice' }, 'B')).toBeNull();
  });
});
