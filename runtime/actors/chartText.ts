// A statechart as Mermaid text, read off the machine itself: the diagrams in docs/runtime.md come from here, never drawn by hand.
import type { AnyStateMachine } from 'xstate';

interface TransitionLike {
  target?: readonly { key: string }[];
  guard?: unknown;
  reenter?: boolean;
}

const guardName = (g: unknown): string | undefined => (typeof g === 'string' ? g : ((g as { type?: string } | undefined)?.type ?? undefined));

/**
 * `stateDiagram-v2` of a machine: its states, each transition with its event, guard and delay. A
 * parallel machine is drawn as one state holding its regions side by side (Mermaid's `--`).
 */
export function chartText(machine: AnyStateMachine): string {
  const lines = ['stateDiagram-v2'];
  const root = machine.root;
  if (root.type !== 'parallel') lines.push(...region(root, '  '));
  else {
    lines.push(`  state ${machine.id} {`);
    Object.values(root.states).forEach((r, i) => lines.push(...(i > 0 ? ['    --'] : []), ...region(r, '    ')));
    lines.push('  }');
  }
  return lines.join('\n');
}

interface NodeLike {
  readonly states: Record<string, NodeLike>;
  readonly initial?: { target: readonly { key: string }[] };
  readonly transitions: Map<string, readonly unknown[]>;
  readonly always?: readonly unknown[];
  readonly type: string;
}

/** One flat level of states, each line indented by `ind`. */
function region(node: NodeLike, ind: string): string[] {
  // Mermaid ids take no hyphen: pending-return is drawn under its own name, as pending_return
  const id = (key: string) => key.replace(/-/g, '_');
  const lines: string[] = [];
  for (const key of Object.keys(node.states)) if (id(key) !== key) lines.push(`${ind}state "${key}" as ${id(key)}`);
  lines.push(`${ind}[*] --> ${id(node.initial?.target[0]?.key ?? '')}`);
  for (const [key, child] of Object.entries(node.states)) {
    const edge = (t: TransitionLike, label: string) => {
      const to = t.target?.[0]?.key;
      if (!to) return;
      const guard = guardName(t.guard);
      lines.push(`${ind}${id(key)} --> ${id(to)}: ${label}${guard ? ` [${guard}]` : ''}`);
    };
    for (const [event, ts] of child.transitions) {
      const delay = event.match(/^xstate\.after\.([^.]+)\./)?.[1];
      for (const t of ts as readonly TransitionLike[]) edge(t, delay ? `after ${delay}` : event);
    }
    for (const t of (child.always ?? []) as readonly TransitionLike[]) edge(t, 'always');
    if (child.type === 'final') lines.push(`${ind}${id(key)} --> [*]`);
  }
  return lines;
}

/** The machines docs/runtime.md draws, by the name its markers use. */
export async function documentedCharts(): Promise<Record<string, string>> {
  const [{ subServerMachine }, { localRequestMachine }, { requestMachine }] = await Promise.all([import('./subServerMachine.ts'), import('./localRequestMachine.ts'), import('./requestMachine.ts')]);
  return { engine: chartText(subServerMachine), 'local-request': chartText(localRequestMachine), request: chartText(requestMachine) };
}

/** `text` with each `<!-- chart:NAME -->` … `<!-- /chart -->` block holding NAME's chart as a mermaid code block. */
export function withCharts(text: string, charts: Record<string, string>): string {
  return text.replace(/<!-- chart:([\w-]+) -->[\s\S]*?<!-- \/chart -->/g, (whole, name: string) => (charts[name] === undefined ? whole : `<!-- chart:${name} -->\n\`\`\`mermaid\n${charts[name]}\n\`\`\`\n<!-- /chart -->`));
}
