// Loads xgrammar's WebAssembly build (@mlc-ai/web-xgrammar) in Node, and runs its calls synchronously once it is ready.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type * as XG from '@mlc-ai/web-xgrammar';

/** The embind objects the wasm build hands out (each `delete()`d by its owner). */
export interface WasmHandle {
  delete(): void;
}

/** The wasm module's bindings: the library's classes call these after an await; we call them directly, so masks are synchronous. */
export interface XgBinding {
  TokenizerInfo: new (
    vocab: unknown,
    type: string,
    vocabSize: number | undefined,
    stops: unknown,
    prependSpace: boolean,
  ) => WasmHandle & { GetVocabSize(): number };
  GrammarCompiler: new (info: WasmHandle, threads: number, cache: boolean) => XgCompilerHandle;
  Grammar: { FromEBNF: new (ebnf: string, rootRule: string) => WasmHandle };
  GrammarMatcher: new (compiled: WasmHandle, stops: unknown, terminateWithoutStop: boolean, maxRollback: number) => XgMatcherHandle;
  vecStringFromJSArray(a: readonly string[]): unknown;
  vecIntFromJSArray(a: readonly number[]): unknown;
  vecIntToView(v: unknown): Int32Array;
}

export interface XgCompilerHandle extends WasmHandle {
  CompileJSONSchema(
    schema: string,
    anyWhitespace: boolean,
    indent: number | undefined,
    separators: unknown,
    strict: boolean,
    maxWhitespace: number | undefined,
  ): WasmHandle;
  CompileBuiltinJSONGrammar(): WasmHandle;
  CompileGrammar(grammar: WasmHandle): WasmHandle;
  CompileStructuralTag(json: string): WasmHandle;
}

export interface XgMatcherHandle extends WasmHandle {
  AcceptToken(id: number, verbose: boolean): boolean;
  GetNextTokenBitmask(vocabSize: number): WasmHandle;
  IsTerminated(): boolean;
  Reset(): void;
  Rollback(n: number): void;
  GetMaxRollbackTokens(): number;
}

export interface XGrammar {
  lib: typeof XG;
  binding: XgBinding;
  /** Runs `fn`; a wasm abort inside it becomes an Error carrying the library's own message (it prints it, then aborts). */
  call<T>(fn: () => T): T;
}

let loading: Promise<XGrammar> | undefined;
let loaded: XGrammar | undefined;
/** Lines the wasm module printed to stderr during the current `call` (its FATAL message precedes an abort). */
let printed: string[] | null = null;

/** xgrammar, loaded once per thread (about a second: the wasm module compiles). */
export function loadXGrammar(): Promise<XGrammar> {
  loading ??= load().then((x) => (loaded = x));
  return loading;
}

/** xgrammar when it is loaded already, else undefined (start it with loadXGrammar). */
export function xgrammarNow(): XGrammar | undefined {
  return loaded;
}

/**
 * The package's lib/index.js is a UMD bundle while its package.json says "type": "module", so Node
 * would read it as an ES module and fail: it is evaluated here as the CommonJS it is. Three small
 * changes to its text: the wasm bindings are exported (so a mask is one synchronous call, not a
 * promise per row), and the module takes our stderr hook (so a compile error's message is kept,
 * not printed).
 */
async function load(): Promise<XGrammar> {
  const require = createRequire(import.meta.url);
  const file = require.resolve('@mlc-ai/web-xgrammar/lib/index.js');
  let src = fs.readFileSync(file, 'utf8');
  // its one dynamic import would need an ES module context (vitest's vm has none): require is the same here
  src = patch(src, "await import('module')", "require('module')");
  src = patch(src, 'binding = await Module();', 'binding = await Module(exports.__moduleArg);');
  src = patch(src, 'exports.CompiledGrammar = CompiledGrammar;', 'exports.__binding = () => binding;\n  exports.CompiledGrammar = CompiledGrammar;');
  const mod: { exports: Record<string, unknown> } = { exports: {} };
  mod.exports.__moduleArg = {
    print: () => {},
    printErr: (line: string) => {
      if (printed) printed.push(line);
      else process.stderr.write(`xgrammar: ${line}\n`);
    },
  };
  new Function('module', 'exports', 'require', '__filename', '__dirname', src)(mod, mod.exports, require, file, path.dirname(file));
  const lib = mod.exports as unknown as typeof XG & { __binding(): XgBinding | null };
  // the bindings initialise on the library's first async call
  (await lib.Grammar.builtinJSONGrammar()).dispose();
  const binding = lib.__binding();
  if (!binding) throw new Error('@mlc-ai/web-xgrammar: its wasm module did not initialise');
  return { lib, binding, call };
}

function patch(src: string, find: string, replace: string): string {
  if (!src.includes(find))
    throw new Error(`@mlc-ai/web-xgrammar: this version's lib/index.js has no "${find}" (the loader in runtime/grammar/xgrammar.ts needs updating)`);
  return src.replace(find, replace);
}

function call<T>(fn: () => T): T {
  const outer = printed;
  printed = [];
  try {
    return fn();
  } catch (e) {
    const fatal = printed
      .map(fatalMessage)
      .filter((m) => m !== '')
      .join('; ');
    throw new Error(fatal || (e instanceof Error ? e.message : String(e)));
  } finally {
    printed = outer;
  }
}

/** "[FATAL] /path/json_schema_converter.cc:3460: Check failed: (err.empty()) is false: Failed to parse JSON: …" → "Failed to parse JSON: …". */
function fatalMessage(line: string): string {
  if (/^Aborted\(/.test(line)) return '';
  const m = /^\[FATAL\][^:]*:\d+: (.*)$/s.exec(line);
  const text = m ? m[1] : line;
  return text.replace(/^Check failed: \([^)]*\) is false: /, '').trim();
}
