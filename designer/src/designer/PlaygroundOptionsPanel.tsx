// The playground's response format and tools: a fold-out under the prompt, each field checked as it is typed with its problem shown beside it.
import { useMemo, useState } from 'react';
import { buildChatOptions, type OptionField, type PlaygroundOptions, type ResponseFormatKind } from './playgroundOptions.ts';
import { useDesigner, useStore } from './useDesigner.ts';

const SCHEMA_HINT = '{\n  "type": "object",\n  "properties": { "answer": { "type": "integer" } },\n  "required": ["answer"]\n}';
const TOOLS_HINT =
  '[{"type": "function", "function": {"name": "get_weather",\n  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]';

function FieldError({ field, message }: { field: OptionField; message: string | undefined }) {
  if (!message) return null;
  return (
    <p className="pg-field-error" role="alert" id={`pg-${field}-error`} data-testid={`pg-${field}-error`}>
      {message}
    </p>
  );
}

export function PlaygroundOptionsPanel() {
  const store = useStore();
  const o = useDesigner((s) => s.playground.options);
  const built = useMemo(() => buildChatOptions(o), [o]);
  const problem = (f: OptionField) => (built.ok ? undefined : built.problems.find((p) => p.field === f)?.message);
  const set = (patch: Partial<PlaygroundOptions>) => store.setPlaygroundOptions(patch);
  const hasTools = o.toolsText.trim() !== '';
  const [open, setOpen] = useState(o.format !== 'none' || hasTools);
  const summary = [
    o.format === 'json_object' ? 'JSON object' : o.format === 'json_schema' ? 'JSON schema' : null,
    hasTools ? `${built.toolNames.length || '?'} tool${built.toolNames.length === 1 ? '' : 's'}` : null,
  ]
    .filter(Boolean)
    .join(' · ');
  // the named choice stays listed while the tools are being edited, so it is not silently switched
  const named = o.toolChoice.startsWith('function:') ? o.toolChoice.slice('function:'.length) : null;
  const names = named && !built.toolNames.includes(named) ? [...built.toolNames, named] : built.toolNames;
  return (
    <details className="pg-options" data-testid="pg-options" open={open} onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        Response format &amp; tools {summary && <span className="muted">· {summary}</span>}
        {!built.ok && (
          <span className="bad" title={built.problems.map((p) => p.message).join('\n')}>
            {' '}
            · fix before running
          </span>
        )}
      </summary>
      <div className="pg-options-body">
        <label className="pf-label" htmlFor="pg-format">
          Response format
        </label>
        <select
          id="pg-format"
          value={o.format}
          onChange={(e) => {
            const format = e.target.value as ResponseFormatKind;
            // an empty schema field starts from an example rather than an error
            set(format === 'json_schema' && !o.schemaText.trim() ? { format, schemaText: SCHEMA_HINT } : { format });
          }}
          data-testid="pg-format"
        >
          <option value="none">None: free text</option>
          <option value="json_object">JSON object</option>
          <option value="json_schema">JSON schema</option>
        </select>
        {o.format === 'json_schema' && (
          <>
            <textarea
              rows={6}
              className={`pg-code${problem('schema') ? ' invalid' : ''}`}
              value={o.schemaText}
              onChange={(e) => set({ schemaText: e.target.value })}
              placeholder={SCHEMA_HINT}
              spellCheck={false}
              aria-label="JSON schema"
              aria-invalid={problem('schema') ? true : undefined}
              aria-describedby={problem('schema') ? 'pg-schema-error' : undefined}
              data-testid="pg-schema"
            />
            <FieldError field="schema" message={problem('schema')} />
          </>
        )}
        <label className="pf-label" htmlFor="pg-tools">
          Tools <span className="pf-range">JSON array of OpenAI tool definitions</span>
        </label>
        <textarea
          id="pg-tools"
          rows={3}
          className={`pg-code${problem('tools') ? ' invalid' : ''}`}
          value={o.toolsText}
          onChange={(e) => set({ toolsText: e.target.value })}
          placeholder={TOOLS_HINT}
          spellCheck={false}
          aria-invalid={problem('tools') ? true : undefined}
          aria-describedby={problem('tools') ? 'pg-tools-error' : undefined}
          data-testid="pg-tools"
        />
        <FieldError field="tools" message={problem('tools')} />
        <label className="muted small pg-choice">
          tool choice{' '}
          <select value={o.toolChoice} onChange={(e) => set({ toolChoice: e.target.value })} disabled={!hasTools} data-testid="pg-tool-choice">
            <option value="auto">auto</option>
            <option value="required">required</option>
            <option value="none">none</option>
            {names.map((n) => (
              <option key={n} value={`function:${n}`}>
                function: {n}
              </option>
            ))}
          </select>
        </label>
        <FieldError field="tool_choice" message={problem('tool_choice')} />
      </div>
    </details>
  );
}
