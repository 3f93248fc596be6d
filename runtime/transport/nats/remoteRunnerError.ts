// The one error type of the NATS transport: what went wrong with a remote sub-server, as a code the entry can act on.

export type RemoteErrorCode =
  /** A replica holding caches vanished (missed heartbeats, no responders, request timeout). */
  | 'replica_lost'
  /** No sub-server for the model answers at all. */
  | 'no_replicas'
  /** A step took longer than the configured timeout. */
  | 'timeout'
  /** The remote runner threw while stepping; the sub-server itself is fine. */
  | 'remote_error'
  /** Malformed or incompatible message (version mismatch, truncated payload). */
  | 'protocol'
  /** The runner was closed. */
  | 'closed';

export class RemoteRunnerError extends Error {
  override readonly name = 'RemoteRunnerError';
  constructor(
    readonly code: RemoteErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
