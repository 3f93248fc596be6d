// Layering rules, checked by `npm run lint:layers` (dependency-cruiser) in .ci/run; a violation fails CI.
//   shared/    imports nothing of the project's own (no runtime/, designer/, examples/, test/) and no Node built-ins
//   designer/  imports only shared/ (plus npm packages), no Node built-ins
//   runtime/   layers, each importing only those below it:
//                cli → http → control → entry → transport → core → (grammar, runner, registry, ir, config, clock, trace, util)
//              core: one model's engine; transport: how the entry reaches an engine; entry: the client request;
//              control: thresholds and the throughput model; http: the serving process and its API
//   runtime/http does not import examples/: bundled algorithms come through runtime/registry/builtins.ts
//   runtime/runner does not import the load generator; runtime/config does not import runtime/transport
//   runtime/grammar (used by engines and the entry) does not import the layers above it
//   product code (runtime/, shared/, examples/) does not import test/ (but `tokenrouter bench`, which loads the suites)
//   no import cycles anywhere (type-only imports count)
//   product code uses no devDependency: `npm install --omit=dev` must serve
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'product-not-test',
      severity: 'error',
      // Two exceptions: runtime/cli/main.ts loads the bench suites lazily for `tokenrouter bench <suite>`
      // (same as npm run bench); examples/training builds the family's graphs with the fixture graph writer.
      comment: 'Product code does not import test/ (bench suites, rigs, the oracle are test code): move what both need into runtime/.',
      from: { path: '^(runtime|shared|examples)/', pathNot: '^(runtime/cli/main[.]ts|examples/training/.*)$' },
      to: { path: '^test/' },
    },
    {
      name: 'product-no-dev-deps',
      severity: 'error',
      comment: 'Product code must run after `npm install --omit=dev`: move the package to dependencies (or keep the import in a bench or test).',
      from: { path: '^(runtime|shared|examples)/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: split the shared part out or invert one dependency.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-below-everything',
      severity: 'error',
      // Exception: the debug invariant checker reads the entry's requests beside the engines' (type only).
      comment: 'runtime/core (one model\'s engine) knows nothing of how it is reached, the entry, control or serving.',
      from: { path: '^runtime/core/', pathNot: '^runtime/core/invariants[.]ts$' },
      to: { path: '^runtime/(entry|transport|control|http|cli|eval|sim|loadgen)/' },
    },
    {
      name: 'transport-below-entry',
      severity: 'error',
      comment: 'runtime/transport carries the engine protocol; it does not import the entry, control or serving above it.',
      from: { path: '^runtime/transport/' },
      to: { path: '^runtime/(entry|control|http|cli|eval|sim|loadgen)/' },
    },
    {
      name: 'entry-below-control',
      severity: 'error',
      comment: 'runtime/entry drives engines; thresholds (runtime/control) and serving (runtime/http) sit above it.',
      from: { path: '^runtime/entry/' },
      to: { path: '^runtime/(control|http|cli|eval|sim|loadgen)/' },
    },
    {
      name: 'control-below-http',
      severity: 'error',
      comment: 'runtime/control (thresholds, estimators, the throughput model) does not import serving or the CLI.',
      from: { path: '^runtime/control/' },
      to: { path: '^runtime/(http|cli|eval|sim)/' },
    },
    {
      name: 'only-cli-above-http',
      severity: 'error',
      // runtime/loadgen is a client of the server (`tokenrouter bench serve`): it shares the bundled task's questions.
      comment: 'Only the CLI, the evaluation the server runs and the load generator (a client) import runtime/http.',
      from: { path: '^runtime/', pathNot: '^runtime/(http|cli|eval|loadgen)/' },
      to: { path: '^runtime/(http|cli)/' },
    },
    {
      name: 'shared-imports-no-project-code',
      severity: 'error',
      comment: 'shared/ is used by the Node runtime and the browser designer alike: it may import only shared/ and npm packages.',
      from: { path: '^shared/' },
      to: { path: '^(runtime|designer|examples|test)/' },
    },
    {
      name: 'shared-no-node-builtins',
      severity: 'error',
      comment: 'shared/ runs in the browser too: no Node built-in modules.',
      from: { path: '^shared/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'designer-imports-only-shared',
      severity: 'error',
      comment: 'The designer (browser code) may import shared/ and npm packages, not runtime/ or test/ (examples/: the two rules below).',
      from: { path: '^designer/' },
      to: { path: '^(runtime|test)/' },
    },
    {
      name: 'designer-only-example-graphs',
      severity: 'error',
      // Exception to "designer imports only shared/": designer/src/designer/examples.ts bundles the example graph
      // documents (examples/graphs/*.json: data, checked against shared/ir/graph.ts on load, no code) into the web app.
      comment: 'Of examples/, the designer may import only examples/graphs/*.json, and only from designer/src/designer/examples.ts.',
      from: { path: '^designer/', pathNot: '^designer/src/designer/examples[.]ts$' },
      to: { path: '^examples/' },
    },
    {
      name: 'designer-examples-json-only',
      severity: 'error',
      comment: 'designer/src/designer/examples.ts may import example graph JSON documents, nothing else from examples/.',
      from: { path: '^designer/src/designer/examples[.]ts$' },
      to: { path: '^examples/', pathNot: '^examples/graphs/[^/]+[.]json$' },
    },
    {
      name: 'designer-no-node-builtins',
      severity: 'error',
      comment: 'The designer runs in the browser: no Node built-in modules.',
      from: { path: '^designer/src/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'runtime-examples-through-registry',
      severity: 'error',
      comment: 'Runtime code reaches examples/algorithms only through runtime/registry/builtins.ts (the bench suites in test/ measure the examples directly).',
      from: { path: '^runtime/', pathNot: '^runtime/registry/builtins[.]ts$' },
      to: { path: '^examples/' },
    },
    {
      name: 'runner-not-loadgen',
      severity: 'error',
      comment: 'Model runners are below the load generator: runtime/runner must not import runtime/loadgen (or runtime/http/loadGenerator.ts).',
      from: { path: '^runtime/runner/' },
      to: { path: ['^runtime/loadgen/', '^runtime/http/loadGenerator[.]ts$'] },
    },
    {
      name: 'config-not-transport',
      severity: 'error',
      comment: 'Config is read before anything connects: runtime/config must not import runtime/transport.',
      from: { path: '^runtime/config/' },
      to: { path: '^runtime/transport/' },
    },
    {
      name: 'grammar-below-engines',
      severity: 'error',
      comment: 'runtime/grammar (xgrammar, vocabularies, constraint states) is a library the engines and the entry use: it imports shared/, runtime/errors and the runner tokenizer, never the layers above it.',
      from: { path: '^runtime/grammar/' },
      to: { path: '^runtime/(core|entry|transport|control|http|cli|config|registry)/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve to a file or an installed package.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^designer/dist/' },
    // Type-only imports count: a cycle or a layer breach through `import type` is still a design dependency.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
