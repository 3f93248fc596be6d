// The error of a step the runner cannot execute as asked.

/** Thrown for a step the runner cannot execute as asked (bad position, unknown head, context overflow). */
export class StepError extends Error {
  override readonly name = 'StepError';
}
