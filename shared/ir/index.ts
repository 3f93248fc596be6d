// The algorithm graph and its IR: node types and their registry, documents, validation and the graph → IR compiler.
export * from './analyzeGraph.ts';
export * from './checkParams.ts';
export * from './compileGraph.ts';
export * from './graph.ts';
export * from './irIssue.ts';
export * from './irSchema.ts';
export * from './irToGraph.ts';
export * from './nodeRegistry.ts';
export * from './nodeTypeDef.ts';
export * from './nodeTypes.ts';
export * from './validateIr.ts';
