// A statechart as Mermaid text, read off the machine itself: the diagrams in docs/runtime.md come from here, never drawn by hand.
import type { AnyStateMachine } from 'xstate';

interface TransitionLike {
  target?: readonly { key: string }[];
  guard?: unknown;
  reenter?: boolean;
}

const guardName = (g: unknown): string | undefined => (typeof g === 'string' ? g : ((g as { type?: string } | undefined)?.type ?? undefined));

/** `stateDiagram-v2` of a flat machine: its states, each transition with its event, guard and delay. */
export function chartText(machine: AnyStateMachine): string {
  // Mermaid ids take no hyphen: pending-return is drawn under its own name, as pending_return
  const id = (key: string) => key.replace(/-/g, '_');
  const lines = ['stateDiagram-v2'];
  for (const key of Object.keys(machine.root.states)) if (id(key) !== key) lines.push(`  state "${key}" as ${id(key)}`);
  lines.push(`  [*] --> ${id(machine.root.initial?.target[0]?.key ?? '')}`);
  for (const [key, node] of Object.entries(machine.root.states)) {
    const edge = (t: TransitionLike, label: string) => {
      const to = t.target?.[0]?.key;
      if (!to) return;
      const guard = guardName(t.guard);
      lines.push(`  ${id(key)} --> ${id(to)}: ${label}${guard ? ` [${guard}]` : ''}`);
    };
    for (const [event, ts] of node.transitions) {
      const delay = event.match(/^xstate\.after\.([^.]+)\./)?.[1];
      for (const t of ts as readonly TransitionLike[]) edge(t, delay ? `after ${delay}` : event);
    }
    for (const t of (node.always ?? []) as readonly TransitionLike[]) edge(t, 'always');
    if (node.type === 'final') lines.push(`  ${id(key)} --> [*]`);
  }
  return lines.join('\n');
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
