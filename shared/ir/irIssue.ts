// The one error shape of graph and IR validation: which node, which rule, what is wrong, how to fix it.
import { z } from 'zod';

export const ISSUE_CODES = [
  // document shape
  'invalid_document',
  'unsupported_version',
  'too_large',
  'duplicate_node_id',
  'unknown_node_type',
  // parameters
  'invalid_param',
  'param_out_of_range',
  'unknown_model',
  'unknown_head',
  'invalid_weights',
  'unknown_memory',
  'self_handoff',
  // wiring
  'dangling_edge',
  'unknown_port',
  'type_mismatch',
  'duplicate_input',
  'missing_input',
  'cycle',
  'mixed_models',
  'wrong_model_scope',
  // algorithm structure
  'missing_start',
  'duplicate_start',
  'missing_decision',
  'duplicate_receive',
  'needs_vocab',
  'ir_inconsistent',
  // warnings: never block a deploy
  'unreachable_decision',
  'shadowed_decision',
  'unused_node',
] as const;

export type IssueCode = (typeof ISSUE_CODES)[number];

export const irIssueSchema = z.object({
  /** The offending node, or null when the problem belongs to the whole graph. */
  nodeId: z.string().nullable(),
  code: z.enum(ISSUE_CODES),
  message: z.string(),
  /** One line telling the author what to change. */
  fix: z.string(),
  /** Errors block compile and deploy; warnings are shown and nothing more. */
  severity: z.enum(['error', 'warning']),
});
export type IrIssue = z.infer<typeof irIssueSchema>;

export function issue(nodeId: string | null, code: IssueCode, message: string, fix: string, severity: IrIssue['severity'] = 'error'): IrIssue {
  return { nodeId, code, message, fix, severity };
}

export function errorsOf(issues: readonly IrIssue[]): IrIssue[] {
  return issues.filter((i) => i.severity === 'error');
}
