// Compiles a request's grammar for a vocabulary with xgrammar, cached per (vocabulary, grammar) and bounded.
import type { GrammarSpec } from '../../shared/protocol/constraint.ts';
import { schemaEbnf } from './schemaEbnf.ts';
import type { GrammarVocabulary } from './vocabulary.ts';
import { loadXGrammar, xgrammarNow, type WasmHandle, type XgCompilerHandle, type XGrammar } from './xgrammar.ts';

/** Compiled grammars kept (least recently used goes first): each holds its token-mask cache, a few MB at 150 k tokens. */
export const COMPILED_CAPACITY = 128;
/** Vocabularies kept compiled (their tokenizer info is the costly part: ~100 ms and tens of MB at 150 k tokens). */
const VOCAB_CAPACITY = 8;

/** A grammar compiled for one vocabulary: shared by every matcher made from it, so never disposed while cached. */
export interface CompiledGrammar {
  readonly handle: WasmHandle;
  readonly vocab: GrammarVocabulary;
}

const compilers = new Map<string, { info: WasmHandle; compiler: XgCompilerHandle }>();
const compiled = new Map<string, CompiledGrammar | Error>();

export function vocabKey(v: GrammarVocabulary): string {
  return `${v.key}/${v.vocabSize}/${v.stopTokenIds.join(',')}`;
}

/** A stable key for a grammar spec (the kind, then its one field). */
export function specKey(spec: GrammarSpec): string {
  switch (spec.kind) {
    case 'json_object':
      return 'json_object';
    case 'json_schema':
      return `json_schema\u0000${spec.schema}`;
    case 'regex':
      return `regex\u0000${spec.pattern}`;
    case 'choice':
      return `choice\u0000${JSON.stringify(spec.choices)}`;
    case 'ebnf':
      return `ebnf\u0000${spec.grammar}`;
    case 'structural_tag':
      return `structural_tag\u0000${spec.tag}`;
  }
}

function compilerFor(xg: XGrammar, v: GrammarVocabulary): XgCompilerHandle {
  const key = vocabKey(v);
  let c = compilers.get(key);
  if (c) {
    compilers.delete(key);
    compilers.set(key, c);
    return c.compiler;
  }
  const { binding } = xg;
  const info = xg.call(
    () =>
      new binding.TokenizerInfo(
        binding.vecStringFromJSArray(v.encoded),
        v.type.toUpperCase(),
        v.vocabSize,
        binding.vecIntFromJSArray(v.stopTokenIds),
        v.prependSpace,
      ),
  );
  c = { info, compiler: xg.call(() => new binding.GrammarCompiler(info, 1, true)) };
  compilers.set(key, c);
  if (compilers.size > VOCAB_CAPACITY) {
    const [oldKey, old] = compilers.entries().next().value!;
    compilers.delete(oldKey);
    old.compiler.delete();
    old.info.delete();
  }
  return c.compiler;
}

/**
 * A string as an EBNF sequence: ASCII runs as double-quoted literals (xgrammar reads JSON-style
 * escapes), each other character as a one-character class, since this xgrammar build does not match
 * a literal holding non-ASCII text against byte-level tokens (a class of that character it does).
 */
function ebnfLiteral(s: string): string {
  const parts: string[] = [];
  let ascii = '';
  for (const ch of s) {
    if (ch.codePointAt(0)! < 0x80) {
      ascii += ch;
      continue;
    }
    if (ascii) parts.push(JSON.stringify(ascii));
    ascii = '';
    parts.push(`[${ch}]`);
  }
  if (ascii || parts.length === 0) parts.push(JSON.stringify(ascii));
  return `(${parts.join(' ')})`;
}

/** What the spec is, for messages: "JSON schema", "regex", ... */
const WHAT: Record<GrammarSpec['kind'], string> = {
  json_object: 'JSON object grammar',
  json_schema: 'JSON schema',
  regex: 'regex',
  choice: 'choice list',
  ebnf: 'EBNF grammar',
  structural_tag: 'structural tag',
};

function jsonText(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`the ${what} is not JSON: ${(e as Error).message}`);
  }
}

/** Compiles now, on this thread (tens of ms for a schema at 150 k tokens, cold). Throws an Error with xgrammar's message. */
function compileNow(xg: XGrammar, spec: GrammarSpec, v: GrammarVocabulary): WasmHandle {
  const c = compilerFor(xg, v);
  switch (spec.kind) {
    case 'json_object':
      // compact separators, no free whitespace: a weak model cannot spend its whole answer on spaces
      return xg.call(() => c.CompileJSONSchema('{"type":"object"}', false, undefined, { first: ',', second: ':' }, true, undefined));
    case 'json_schema':
      return ebnf(xg, c, schemaEbnf(xg, jsonText(spec.schema, 'JSON schema')));
    case 'regex':
      return xg.call(() => c.CompileStructuralTag(JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: spec.pattern } })));
    case 'choice':
      return ebnf(xg, c, `root ::= ${spec.choices.map(ebnfLiteral).join(' | ')}`);
    case 'ebnf':
      return ebnf(xg, c, spec.grammar);
    case 'structural_tag':
      jsonText(spec.tag, 'structural tag');
      return xg.call(() => c.CompileStructuralTag(spec.tag));
  }
}

function ebnf(xg: XGrammar, c: XgCompilerHandle, text: string): WasmHandle {
  const g = xg.call(() => new xg.binding.Grammar.FromEBNF(text, 'root'));
  try {
    return xg.call(() => c.CompileGrammar(g));
  } finally {
    g.delete();
  }
}

/**
 * The grammar compiled for `v`, from the cache or compiled now (xgrammar must be loaded: see
 * `compileGrammar`). A spec xgrammar refuses throws an Error saying why (also cached: the same bad
 * spec is not compiled again).
 */
export function compiledGrammarNow(xg: XGrammar, spec: GrammarSpec, v: GrammarVocabulary): CompiledGrammar {
  const key = `${vocabKey(v)}\u0001${specKey(spec)}`;
  let hit = compiled.get(key);
  if (hit) {
    compiled.delete(key);
    compiled.set(key, hit);
  } else {
    try {
      hit = { handle: compileNow(xg, spec, v), vocab: v };
    } catch (e) {
      hit = new Error(`the ${WHAT[spec.kind]} does not compile: ${(e as Error).message}`);
    }
    compiled.set(key, hit);
    if (compiled.size > COMPILED_CAPACITY) {
      const [oldKey, old] = compiled.entries().next().value!;
      compiled.delete(oldKey);
      // matchers made from it hold their own reference (the wasm side counts them)
      if (!(old instanceof Error)) old.handle.delete();
    }
  }
  if (hit instanceof Error) throw hit;
  return hit;
}

/** True when compiledGrammarNow would answer from the cache (no compile on this thread). */
export function isCompiled(spec: GrammarSpec, v: GrammarVocabulary): boolean {
  return xgrammarNow() !== undefined && compiled.has(`${vocabKey(v)}\u0001${specKey(spec)}`);
}

/** Loads xgrammar if need be, then the compiled grammar (cached or compiled now). */
export async function compileGrammar(spec: GrammarSpec, v: GrammarVocabulary): Promise<CompiledGrammar> {
  return compiledGrammarNow(await loadXGrammar(), spec, v);
}
