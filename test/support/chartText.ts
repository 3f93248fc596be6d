// A statechart as Mermaid text, read off the machine itself: the diagrams in docs/runtime.md come from here, never drawn by hand.
import type { AnyStateMachine, AnyStateNode } from 'xstate';

/** The name a guard or an action goes by: its string, its `type`, else none (an inline function). */
function nameOf(x: unknown): string | undefined {
  if (typeof x === 'string') return x;
  if ((typeof x === 'object' || typeof x === 'function') && x !== null && 'type' in x && typeof x.type === 'string') return x.type;
  return undefined;
}

/**
 * `stateDiagram-v2` of a machine: its states, each transition with its event (or delay), guard and
 * effects (its actions other than context assignments). A parallel machine is drawn as one state
 * holding its regions side by side (Mermaid's `--`). Read through XState's public StateNode fields.
 */
export function chartText(machine: AnyStateMachine): string {
  const lines = ['stateDiagram-v2'];
  const root = machine.root;
  const implemented: Record<string, unknown> = machine.implementations.actions;
  // assign actions only change the context: the chart draws what the machine does
  const effect = (a: unknown) => {
    const name = nameOf(a);
    if (name === undefined || name.startsWith('xstate.')) return undefined;
    return nameOf(implemented[name]) === 'xstate.assign' ? undefined : name;
  };
  const draw = (node: AnyStateNode, ind: string) => region(node, ind, effect);
  if (root.type !== 'parallel') lines.push(...draw(root, '  '));
  else {
    lines.push(`  state ${machine.id} {`);
    Object.values(root.states).forEach((r, i) => lines.push(...(i > 0 ? ['    --'] : []), ...draw(r, '    ')));
    lines.push('  }');
  }
  return lines.join('\n');
}

type Transition = AnyStateNode['transitions'] extends Map<string, (infer T)[]> ? T : never;

/** One flat level of states, each line indented by `ind`. */
function region(node: AnyStateNode, ind: string, effect: (a: unknown) => string | undefined): string[] {
  // Mermaid ids take no hyphen: pending-return is drawn under its own name, as pending_return
  const id = (key: string) => key.replace(/-/g, '_');
  const lines: string[] = [];
  for (const key of Object.keys(node.states)) if (id(key) !== key) lines.push(`${ind}state "${key}" as ${id(key)}`);
  lines.push(`${ind}[*] --> ${id(node.initial.target[0]?.key ?? '')}`);
  for (const [key, child] of Object.entries(node.states)) {
    const edge = (t: Transition, label: string) => {
      const to = t.target?.[0]?.key;
      if (!to) return;
      const guard = nameOf(t.guard);
      const effects = t.actions.map(effect).filter((a) => a !== undefined);
      lines.push(`${ind}${id(key)} --> ${id(to)}: ${label}${guard ? ` [${guard}]` : ''}${effects.length > 0 ? ` / ${effects.join(', ')}` : ''}`);
    };
    const delayed = new Set<string>();
    for (const t of child.after) {
      delayed.add(t.eventType);
      edge(t, `after ${typeof t.delay === 'function' ? 'delay' : t.delay}`);
    }
    for (const [event, ts] of child.transitions) if (!delayed.has(event)) for (const t of ts) edge(t, event);
    for (const t of child.always ?? []) edge(t, 'always');
    if (child.type === 'final') lines.push(`${ind}${id(key)} --> [*]`);
  }
  return lines;
}

/** The machines docs/runtime.md draws, by the name its markers use. */
export async function documentedCharts(): Promise<Record<string, string>> {
  const [{ subServerMachine }, { localRequestMachine }, { requestMachine }] = await Promise.all([
    import('../../runtime/core/engineLoop.ts'),
    import('../../runtime/core/localRequest.ts'),
    import('../../runtime/entry/requestState.ts'),
  ]);
  return { engine: chartText(subServerMachine), 'local-request': chartText(localRequestMachine), request: chartText(requestMachine) };
}

/** `text` with each `<!-- chart:NAME -->` … `<!-- /chart -->` block holding NAME's chart as a mermaid code block. */
export function withCharts(text: string, charts: Record<string, string>): string {
  return text.replace(/<!-- chart:([\w-]+) -->[\s\S]*?<!-- \/chart -->/g, (whole, name: string) =>
    charts[name] === undefined ? whole : `<!-- chart:${name} -->\n\`\`\`mermaid\n${charts[name]}\n\`\`\`\n<!-- /chart -->`,
  );
}
