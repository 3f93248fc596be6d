// The algorithm graph and its IR: node palette, documents, validation and the graph → IR compiler.
export * from './analyzeGraph.ts';
export * from './checkParams.ts';
export * from './compileGraph.ts';
export * from './graph.ts';
export * from './irIssue.ts';
export * from './irSchema.ts';
export * from './irToGraph.ts';
export * from './nodeTypes.ts';
export * from './validateIr.ts';
