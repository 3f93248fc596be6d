// The fast real-ONNX fixture family (30-character vocabulary, multiplication prompts) that the property and plumbing tests run on.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The fixture family's folder (small, medium, large, their split files and ensemble choice). */
export const TINY_FAMILY_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/tiny-family');

export const TINY_MODEL_NAMES = ['small', 'medium', 'large'] as const;

/** One fixture model's folder. */
export const tinyModelDir = (name: string): string => path.join(TINY_FAMILY_DIR, name);

/** Whether the named fixture models have their ONNX graph on this machine. */
export function tinyFamilyPresent(names: readonly string[] = TINY_MODEL_NAMES): boolean {
  return names.every((n) => fs.existsSync(path.join(tinyModelDir(n), 'onnx', 'model.onnx')));
}

/** A model's export-time greedy outputs (golden.json). */
export interface GoldenFile {
  eos_token_id: number;
  max_new_tokens: number;
  rows: { prompt: string; input_ids: number[]; output_ids: number[] }[];
}

/** `dir` is the family folder holding `<name>/golden.json`. */
export function readGolden(name: string, dir: string = TINY_FAMILY_DIR): GoldenFile {
  return JSON.parse(fs.readFileSync(path.join(dir, name, 'golden.json'), 'utf8')) as GoldenFile;
}

/** The first `n` questions of `<dir>/heldout.json` (the fixture family's split file format). */
export function heldoutQuestions(n: number, dir: string = TINY_FAMILY_DIR): string[] {
  const h = JSON.parse(fs.readFileSync(path.join(dir, 'heldout.json'), 'utf8')) as { rows: { question: string }[] };
  return h.rows.slice(0, n).map((r) => r.question);
}

/** The first `n` held-out questions of the fixture family: prompts its tokenizer encodes. */
export const tinyQuestions = (n: number): string[] => heldoutQuestions(n);

/** A fixture model's export-time greedy outputs, for tests that only need a known-good row. */
export const tinyGolden = (name: string): GoldenFile => readGolden(name);
