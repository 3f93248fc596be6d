// The fast real-ONNX fixture family (30-character vocabulary, multiplication prompts) that the property and plumbing tests run on.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type GoldenFile, heldoutQuestions, readGolden } from '../runner/helpers.ts';

/** The fixture family's folder (small, medium, large, their splits), from the repository root. */
export const TINY_FAMILY_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..', 'examples/models');

export const TINY_MODEL_NAMES = ['small', 'medium', 'large'] as const;

/** One fixture model's folder. */
export const tinyModelDir = (name: string): string => path.join(TINY_FAMILY_DIR, name);

/** Whether the named fixture models have their ONNX graph on this machine. */
export function tinyFamilyPresent(names: readonly string[] = TINY_MODEL_NAMES): boolean {
  return names.every((n) => fs.existsSync(path.join(tinyModelDir(n), 'onnx', 'model.onnx')));
}

/** The first `n` held-out questions of the fixture family: prompts its tokenizer encodes. */
export const tinyQuestions = (n: number): string[] => heldoutQuestions(n, TINY_FAMILY_DIR);

/** A fixture model's export-time greedy outputs (golden.json), for tests that only need a known-good row. */
export const tinyGolden = (name: string): GoldenFile => readGolden(name, TINY_FAMILY_DIR);
