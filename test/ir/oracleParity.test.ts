// Parity of committed outputs: the sequential oracle runs each example graph (graph → IR → Algorithm) and its TypeScript twin on 100 prompts.
import { describe, expect, it } from 'vitest';
import type { Algorithm } from '../../shared/algorithm.ts';
import { compileGraph } from '../../shared/ir/compileGraph.ts';
import { compileIr } from '../../runtime/ir/compileIr.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { SimRunner, type SimContext } from '../../runtime/runner/simRunner.ts';
import { mix } from '../../runtime/util/hash.ts';
import { builtinFactory } from '../../examples/algorithms/index.ts';
import { CATALOG, EXAMPLES, loadExample } from './fixtures.ts';

const PROMPTS = 100;

/** Context-determined signals spread around every algorithm's threshold, so all of them switch often. */
function signals(ctx: SimContext, salt: number) {
  const u = (k: number) => mix(mix(ctx.contextHash, salt), k) / 4294967296;
  const maxProb = 0.4 + 0.6 * u(2);
  return {
    token: 4 + (mix(ctx.contextHash, salt) % 60),
    entropy: 0.08 * u(1) ** 2,
    maxProb,
    heads: { citer: 0.75 + 0.25 * u(3), r2r: u(4), colm: 0.3 * u(5) },
  };
}

function runners() {
  return Object.fromEntries(
    ['small', 'medium', 'large'].map((name, i) => [name, new SimRunner({ name, vocabSize: 64, eosTokenIds: [3], next: (ctx) => signals(ctx, 17 + i) })]),
  );
}

describe.each(EXAMPLES)('%s under the sequential oracle', (name) => {
  it(`commits the same tokens, from the same models, on ${PROMPTS} prompts`, async () => {
    const compiled = compileGraph(loadExample(name), CATALOG);
    if (!compiled.ok) throw new Error(`${name} does not compile`);
    const fromGraph = compileIr(JSON.parse(JSON.stringify(compiled.ir)), { models: CATALOG }) as Algorithm<unknown>;
    const typed = builtinFactory(name)();
    let handoffs = 0;
    for (let p = 0; p < PROMPTS; p++) {
      const prompt = Array.from({ length: 3 + (p % 17) }, (_, j) => 4 + (mix(p, j) % 60));
      const request = { id: `p${p}`, prompt, maxTokens: 24 + (p % 40), sampling: { seed: p * 31 + 7 } };
      const a = await runOracle(typed, runners(), request);
      const b = await runOracle(fromGraph, runners(), request);
      expect(b, `prompt ${p}`).toEqual(a);
      handoffs += a.handoffs;
    }
    expect(handoffs).toBeGreaterThan(PROMPTS);
  });
});
