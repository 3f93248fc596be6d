// Layering rules, checked by `npm run lint:layers` (dependency-cruiser) in .ci/run; a violation fails CI.
//   shared/    imports nothing of the project's own (no runtime/, designer/, examples/, test/) and no Node built-ins
//   designer/  imports only shared/ (plus npm packages), no Node built-ins
//   server     (runtime/server, runtime/serve) does not import examples/: bundled algorithms come through runtime/registry/builtins.ts
//   runtime/runner does not import the load generator; runtime/config does not import runtime/distributed
//   runtime/grammar (used by engines and the entry) does not import the engines, server or distribution
//   product code does not import runtime/bench/ (but `tokenrouter bench`, which loads the tool)
//   no import cycles anywhere (type-only imports count)
//   product code (runtime/ but its benches, shared/, examples/) uses no devDependency: `npm install --omit=dev` must serve
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'product-no-bench',
      severity: 'error',
      // The one exception: runtime/cli/main.ts loads the bench tool lazily for `tokenrouter bench` (same as npm run bench).
      comment: 'Product code does not import runtime/bench/ (rigs and suites are tools): move what both need to runtime/util, runner or sim.',
      from: { path: '^(runtime|shared|examples)/', pathNot: '^(runtime/bench/|runtime/cli/main[.]ts$)' },
      to: { path: '^runtime/bench/' },
    },
    {
      name: 'product-no-dev-deps',
      severity: 'error',
      comment: 'Product code must run after `npm install --omit=dev`: move the package to dependencies (or keep the import in a bench or test).',
      from: { path: '^(runtime|shared|examples)/', pathNot: '^runtime/bench/' },
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
      name: 'server-not-examples',
      severity: 'error',
      comment: 'The server loads the bundled algorithms through the registry (runtime/registry/builtins.ts), not from examples/.',
      from: { path: '^runtime/(server|serve)/' },
      to: { path: '^examples/' },
    },
    {
      name: 'runtime-examples-through-registry',
      severity: 'error',
      comment: 'Runtime code reaches examples/algorithms only through runtime/registry/builtins.ts (bench suites, which measure the examples, excepted).',
      from: { path: '^runtime/', pathNot: '^runtime/(registry/builtins[.]ts$|bench/)' },
      to: { path: '^examples/' },
    },
    {
      name: 'runner-not-loadgen',
      severity: 'error',
      comment: 'Model runners are below the load generator: runtime/runner must not import runtime/loadgen (or runtime/serve/loadGenerator.ts).',
      from: { path: '^runtime/runner/' },
      to: { path: ['^runtime/loadgen/', '^runtime/serve/loadGenerator[.]ts$'] },
    },
    {
      name: 'config-not-distributed',
      severity: 'error',
      comment: 'Config is read before anything connects: runtime/config must not import runtime/distributed.',
      from: { path: '^runtime/config/' },
      to: { path: '^runtime/distributed/' },
    },
    {
      name: 'grammar-below-engines',
      severity: 'error',
      comment: 'runtime/grammar (xgrammar, vocabularies, constraint states) is a library the engines and the entry use: it imports shared/, runtime/errors and the runner tokenizer, never the engines, server or distribution above it.',
      from: { path: '^runtime/grammar/' },
      to: { path: '^runtime/(engine|server|serve|distributed|scheduler|actors|cli|config|bench|registry)/' },
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
