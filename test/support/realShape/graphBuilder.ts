// Collects an ONNX graph's nodes, constants and weights with generated names, into a ModelSpec for onnxWriter.
import type { AttrValue, ModelSpec, NodeSpec, OnnxArrays, OnnxType, TensorSpec, ValueSpec } from './onnxWriter.ts';

export class GraphBuilder {
  readonly nodes: NodeSpec[] = [];
  readonly initializers: TensorSpec[] = [];
  readonly inputs: ValueSpec[] = [];
  readonly outputs: ValueSpec[] = [];
  private readonly constants = new Map<string, string>();
  private counter = 0;

  constructor(private readonly graphName: string) {}

  /**
   * Adds a node; returns its outputs' names. `outputs`: how many (generated names) or the names
   * themselves (a graph output's name, e.g. `present.0.key`).
   */
  ops(
    op: string,
    inputs: readonly string[],
    attrs: Record<string, AttrValue> = {},
    opts: { outputs?: number | readonly string[]; domain?: string; prefix?: string } = {},
  ): string[] {
    const id = this.counter++;
    const base = `${opts.prefix ?? ''}/${op}_${id}`;
    const outs = typeof opts.outputs === 'object' ? [...opts.outputs] : Array.from({ length: opts.outputs ?? 1 }, (_, i) => `${base}_out${i}`);
    this.nodes.push({ op, inputs, outputs: outs, name: base, domain: opts.domain, attrs });
    return outs;
  }

  /** A one-output node; returns its output's name. */
  op(op: string, inputs: readonly string[], attrs: Record<string, AttrValue> = {}, opts: { output?: string; domain?: string; prefix?: string } = {}): string {
    return this.ops(op, inputs, attrs, { outputs: opts.output ? [opts.output] : 1, domain: opts.domain, prefix: opts.prefix })[0];
  }

  /** A weight or other initializer, its data made when the model is written. */
  init<T extends OnnxType>(name: string, type: T, dims: readonly number[], data: () => OnnxArrays[T]): string {
    this.initializers.push({ name, type, dims, data } as TensorSpec);
    return name;
  }

  /** An int64 constant (shared by every node that uses the same values); `scalar`: rank 0. */
  i64(values: readonly number[], scalar = false): string {
    return this.constant('int64', values, scalar, () => BigInt64Array.from(values, (v) => BigInt(v)));
  }

  /** A float32 constant, shared likewise. */
  f32(values: readonly number[], scalar = false): string {
    return this.constant('float32', values, scalar, () => Float32Array.from(values));
  }

  private constant<T extends OnnxType>(type: T, values: readonly number[], scalar: boolean, data: () => OnnxArrays[T]): string {
    if (scalar && values.length !== 1) throw new Error(`a scalar constant takes one value, got ${values.length}`);
    const key = `${type}:${scalar ? 's' : 'v'}:${values.join(',')}`;
    let name = this.constants.get(key);
    if (!name) {
      name = `const_${type}_${this.constants.size}`;
      this.constants.set(key, name);
      this.init(name, type, scalar ? [] : [values.length], data);
    }
    return name;
  }

  input(name: string, type: OnnxType, shape: readonly (number | string)[]): string {
    this.inputs.push({ name, type, shape });
    return name;
  }

  output(name: string, type: OnnxType, shape: readonly (number | string)[]): void {
    this.outputs.push({ name, type, shape });
  }

  spec(opsets: ModelSpec['opsets']): ModelSpec {
    return { graphName: this.graphName, inputs: this.inputs, outputs: this.outputs, nodes: this.nodes, initializers: this.initializers, opsets };
  }
}
