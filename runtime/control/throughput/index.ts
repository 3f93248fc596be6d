// Public surface of the throughput model: predict, optimise, and fit its inputs from traces.
export { checkFeasible, isFeasible, type FeasibilityReport } from './checkFeasible.ts';
export { chooseTimeStep, roundLatencies, timeStepOf, type Rounding, type TimeStep } from './chooseTimeStep.ts';
export { estimateRouting, type ModelRef, type RoutingEstimate, type RoutingOptions, type RoutingStep } from './estimateRouting.ts';
export { countFeasible, feasibleThresholds, type FixedThresholds } from './feasibleThresholds.ts';
export {
  fitContendedLatency,
  fitLatencyProfile,
  markContended,
  quantileOf,
  type FitOptions,
  markCycles,
  type ContendedProfiles,
  type LatencyProfile,
  type LatencySample,
  type TimedBatch,
} from './fitLatencyProfile.ts';
export {
  evaluateThresholds,
  optimiseThresholds,
  rowFor,
  type OptimiseInput,
  type OptimiseOptions,
  type OptimiseResult,
  type ThresholdRow,
} from './optimiseThresholds.ts';
export {
  estimateChainStates,
  predictThroughput,
  simulateWithConfidence,
  type Prediction,
  type PredictOptions,
  type SimulatedEstimate,
} from './predictThroughput.ts';
export { predictLatency, type LatencyOptions, type LatencyPrediction } from './latencyModel.ts';
export {
  chooseForSlo,
  DEFAULT_MAX_WAIT_CHOICES,
  meetsP99Slo,
  optimiseForSlo,
  type SloCandidate,
  type SloChoice,
  type SloOptimiseOptions,
} from './optimiseForSlo.ts';
export { simulateLatency, type LatencyInput, type LatencyLoad, type LatencyRun, type LatencySlo } from './simulateLatency.ts';
export { simulateThroughput, type SimulationOptions, type SimulationResult } from './simulateThroughput.ts';
export { solveThroughput } from './solveThroughput.ts';
export { ThroughputError, type ThroughputErrorCode } from './ThroughputError.ts';
export type { LatencyFn, LatencySpec, Matrix, ThroughputInput, ThroughputResult } from './types.ts';
