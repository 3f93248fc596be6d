// What the playground shows beside the answer's tokens: the model's reasoning (folded), its tool calls as cards, and the usage with cached prompt tokens.
import type { StreamToken } from './api.ts';
import { prettyJson, type ChatUsage, type ToolCall } from './chatExtras.ts';
import { modelColor } from './modelColors.ts';
import { tokenChips } from './tokenChips.ts';

/** The thought, folded; its tokens in their models' colours when the server attributed them. */
export function ReasoningBlock({
  text,
  tokens,
  streaming,
  catalog,
}: {
  text: string;
  tokens: readonly StreamToken[];
  streaming: boolean;
  catalog: readonly { name: string }[];
}) {
  if (!text && !tokens.length) return null;
  const size = tokens.length ? `${tokens.length.toLocaleString()} tokens` : `${text.length.toLocaleString()} characters`;
  return (
    <details className="pg-reasoning" data-testid="pg-reasoning">
      <summary>
        Reasoning{' '}
        <span className="muted">
          · {size}
          {streaming ? ' · thinking…' : ''}
        </span>
      </summary>
      <div className="pg-reasoning-text" data-testid="pg-reasoning-text">
        {tokens.length
          ? tokenChips(tokens, text).map(({ index, text: piece }) => {
              const t = tokens[index];
              const c = modelColor(t.model, catalog);
              return (
                <span key={index} className="pg-rtok" style={{ borderBottomColor: c }} data-model={t.model} title={t.model}>
                  {piece}
                </span>
              );
            })
          : text}
      </div>
    </details>
  );
}

export function ToolCallCards({ calls }: { calls: readonly ToolCall[] }) {
  if (!calls.length) return null;
  return (
    <div className="pg-tool-calls" data-testid="pg-tool-calls">
      {calls.map((c) => {
        const pretty = prettyJson(c.arguments);
        return (
          <div key={c.index} className="pg-tool-call" data-testid="pg-tool-call" data-name={c.name}>
            <div className="pg-tool-head">
              <span className="pg-tool-fn">ƒ</span>
              <b data-testid="pg-tool-name">{c.name || '(unnamed)'}</b>
              {c.id && <code className="muted">{c.id}</code>}
            </div>
            <pre className="pg-tool-args" data-testid="pg-tool-args">
              {pretty ?? c.arguments}
            </pre>
            {pretty === null && c.arguments && <div className="pg-field-error">arguments are not (yet) valid JSON</div>}
          </div>
        );
      })}
    </div>
  );
}

export function UsageLine({ usage }: { usage: ChatUsage | null }) {
  if (!usage) return null;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const prompt = typeof cached === 'number' ? `prompt ${usage.prompt_tokens} (${cached} cached)` : `prompt ${usage.prompt_tokens}`;
  return (
    <span
      className="muted"
      data-testid="pg-usage"
      data-cached={cached ?? undefined}
      title="Usage as the server reported it at the end of the stream; cached: prompt tokens taken from the prefix cache"
    >
      {`${prompt} · completion ${usage.completion_tokens}`}
    </span>
  );
}
