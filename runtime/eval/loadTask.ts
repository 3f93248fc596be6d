// Loads an evaluation task by bundled name or by path (a folder with task.json and validation.jsonl / heldout.jsonl), checking every line; errors name the file, line and key.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { TASK_SPLITS, taskHeaderSchema, taskLineSchema, type TaskHeader, type TaskSplitName } from '../../shared/task.ts';
import { TokenRouterError } from '../errors.ts';
import type { ChatMessage } from '../runner/tokenizer.ts';
import { graderOf, referenceProblem, type Grade } from './graders.ts';
import { loadSplit } from './splits.ts';

/** One problem as the evaluators send it: the chat (or, without one, `question` as one user message) and the reference. */
export interface TaskProblem {
  /** The question's text: the prompt, or the last user message of a chat (what a query-level router reads). */
  question: string;
  answer: string;
  messages?: readonly ChatMessage[];
}

/** The chat a problem sends. */
export const chatOf = (p: TaskProblem): readonly ChatMessage[] => p.messages ?? [{ role: 'user', content: p.question }];

export interface TaskSplit {
  split: TaskSplitName;
  /** Where the problems come from (a JSONL file, or the bundled split file they derive from). */
  file: string;
  problems: TaskProblem[];
  /** A bundled split's seed and intended use (its file says them). */
  seed?: number;
  use?: string;
}

export interface Task {
  header: TaskHeader;
  grade: Grade;
  /** "bundled", or the folder the task was read from. */
  source: string;
  /** The task's splits (a path task holds those whose files exist). */
  split(name: TaskSplitName): TaskSplit;
  splits(): TaskSplitName[];
}

/** The task an evaluation runs when none is named: the word problems the bundled models were trained on. */
export const DEFAULT_TASK = 'word-problems';

const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The bundled task folders, by name: read as a task given by path, found from the package, not the working directory. */
const BUNDLED_FOLDERS: Record<string, string> = {
  'word-problems': path.join(PACKAGE_ROOT, 'examples/tasks/word-problems'),
};

/**
 * The bundled tasks whose problems come from a model family's split files (`<modelsDir>/validation.json`
 * and `heldout.json`, examples/training/splits.py's format): the tiny fixture family's multiplication.
 */
const FROM_SPLIT_FILES: Record<string, TaskHeader> = {
  // the number after the last "=" of a worked answer, exactly (runner/onnxAccuracy.ts's finalAnswer)
  multiplication: {
    name: 'multiplication',
    description: 'worked multiplication a*b; graded by the number after the last "="; its problems are the split files in the models folder',
    grader: { kind: 'regex', pattern: '=([^=]*)$' },
  },
};

const BUNDLED_NAMES: readonly string[] = [...Object.keys(BUNDLED_FOLDERS), ...Object.keys(FROM_SPLIT_FILES)];

/** The bundled tasks' headers, the default first (a bundled folder's task.json read on each call; its problems are not). */
export function bundledTasks(): TaskHeader[] {
  return [...Object.values(BUNDLED_FOLDERS).map((dir) => readHeader(path.join(dir, 'task.json'))), ...Object.values(FROM_SPLIT_FILES)];
}

const bad = (message: string) => new TokenRouterError('invalid_request', message, 'task');

function issuesText(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((i) => {
      const key = i.path.join('.');
      if (i.code === 'unrecognized_keys') return `unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.map((k) => `"${[...i.path, k].join('.')}"`).join(', ')}`;
      return `${key ? `"${key}"` : 'line'}: ${i.message}`;
    })
    .join('; ');
}

/** One JSONL file of a task, every line checked; blank lines are skipped, a file with no problem is refused. */
export function readTaskLines(file: string, header: TaskHeader): TaskProblem[] {
  const problems: TaskProblem[] = [];
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const text = raw.trim();
      if (!text) return;
      const at = `${file}:${i + 1}`;
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        // the parser's message quotes the line: the file's text is not echoed back to the caller
        throw bad(`${at}: not a JSON object (one problem per line: {"prompt": ..., "answer": ...} or {"messages": [...], "answer": ...})`);
      }
      if (json === null || typeof json !== 'object' || Array.isArray(json)) throw bad(`${at}: not a JSON object (one problem per line)`);
      const r = taskLineSchema.safeParse(json);
      if (!r.success) throw bad(`${at}: ${issuesText(r.error.issues)}`);
      const why = referenceProblem(header.grader, r.data.answer);
      if (why) throw bad(`${at}: "answer": ${why}`);
      const messages = r.data.messages;
      const question = messages ? [...messages].reverse().find((m) => m.role === 'user')!.content : r.data.prompt!;
      problems.push(messages ? { question, answer: r.data.answer, messages } : { question, answer: r.data.answer });
    });
  if (problems.length === 0) throw bad(`${file}: holds no problem (one JSON object per line)`);
  return problems;
}

/** A task.json, checked. */
function readHeader(headerFile: string): TaskHeader {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(headerFile, 'utf8'));
  } catch {
    throw bad(`${headerFile}: not valid JSON (a task header: {"name": ..., "grader": {"kind": ...}})`);
  }
  const parsed = taskHeaderSchema.safeParse(json);
  if (!parsed.success) throw bad(`${headerFile}: ${issuesText(parsed.error.issues)}`);
  return parsed.data;
}

/** A task folder (or its task.json): the header checked, then every split file present. */
function loadTaskFolder(ref: string, bundled = false): Task {
  const abs = path.resolve(ref);
  if (!fs.existsSync(abs)) throw bad(`task: no bundled task "${ref}" (bundled: ${BUNDLED_NAMES.join(', ')}) and no file or folder at ${abs}`);
  const dir = fs.statSync(abs).isDirectory() ? abs : path.dirname(abs);
  const headerFile = fs.statSync(abs).isDirectory() ? path.join(abs, 'task.json') : abs;
  if (!fs.existsSync(headerFile)) throw bad(`task: ${dir} has no task.json (a task folder holds task.json and validation.jsonl / heldout.jsonl)`);
  const header = readHeader(headerFile);
  const splits = new Map<TaskSplitName, TaskSplit>();
  for (const split of TASK_SPLITS) {
    const file = path.join(dir, `${split}.jsonl`);
    if (fs.existsSync(file)) splits.set(split, { split, file, problems: readTaskLines(file, header) });
  }
  if (splits.size === 0) throw bad(`task: ${dir} has neither ${TASK_SPLITS.map((s) => `${s}.jsonl`).join(' nor ')}`);
  return {
    header,
    grade: graderOf(header.grader),
    source: bundled ? 'bundled' : dir,
    splits: () => [...splits.keys()],
    split: (name) => {
      const s = splits.get(name);
      if (!s) throw bad(`task "${header.name}" (${dir}) has no ${name} split: no ${name}.jsonl beside task.json`);
      return s;
    },
  };
}

/** A task of split files, its splits read from `modelsDir` when first asked for. */
function splitFileTask(header: TaskHeader, modelsDir: string): Task {
  const cache = new Map<TaskSplitName, TaskSplit>();
  return {
    header,
    grade: graderOf(header.grader),
    source: 'bundled',
    splits: () => [...TASK_SPLITS],
    split: (name) => {
      let s = cache.get(name);
      if (!s) {
        if (!fs.existsSync(path.join(modelsDir, `${name}.json`)))
          throw bad(
            `task "${header.name}" reads its problems from the models folder's split files, and ${path.resolve(modelsDir)} has no ${name}.json (test/fixtures/tiny-family has them)`,
          );
        const f = loadSplit(modelsDir, name);
        s = { split: name, file: f.file, problems: f.rows.map((r) => ({ question: r.question, answer: r.answer })), seed: f.seed, use: f.use };
        cache.set(name, s);
      }
      return s;
    },
  };
}

/**
 * The task named `ref`: a bundled name, else a path to a task folder or its task.json (relative to the
 * working directory). `modelsDir` is where a split-file task (multiplication) reads its problems.
 */
export function loadTask(ref: string, modelsDir: string): Task {
  if (Object.hasOwn(BUNDLED_FOLDERS, ref)) return loadTaskFolder(BUNDLED_FOLDERS[ref], true);
  if (Object.hasOwn(FROM_SPLIT_FILES, ref)) return splitFileTask(FROM_SPLIT_FILES[ref], modelsDir);
  if (!ref.trim()) throw bad('task: empty; name a bundled task or give a path');
  return loadTaskFolder(ref);
}
