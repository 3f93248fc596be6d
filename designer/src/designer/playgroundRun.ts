// The playground's one chat request at a time, against the draft or a stored algorithm, its stream folded into PlaygroundState.
import type { IrDocument } from '../../../shared/ir/irSchema.ts';
import type { StreamToken } from './api.ts';
import { mergeToolCalls, type ChatUsage, type ToolCall } from './chatExtras.ts';
import type { DesignerServer } from './designerPorts.ts';
import { buildChatOptions, DEFAULT_OPTIONS, type PlaygroundOptions } from './playgroundOptions.ts';
import { errorText } from './registryFlow.ts';

export interface PlaygroundState {
  status: 'idle' | 'running' | 'done' | 'error';
  /** "draft" runs the graph on the canvas without storing it; otherwise an algorithm name. */
  target: string;
  prompt: string;
  maxTokens: number;
  tokens: StreamToken[];
  /** Text from servers that stream content without the token extension. */
  text: string;
  finish: string | null;
  message?: string;
  /** The run's request id, to find it on the timeline. */
  requestId?: string;
  /** Response format and tools, as typed (checked when a run starts). */
  options: PlaygroundOptions;
  /** The thought of a thinking model (`reasoning_content`), apart from the answer. */
  reasoning: string;
  /** The thought's tokens with their models, when the server attributes them. */
  reasoningTokens: StreamToken[];
  toolCalls: ToolCall[];
  /** The stream's closing usage, when the server sent one. */
  usage: ChatUsage | null;
}

export const INITIAL_PLAYGROUND: PlaygroundState = {
  status: 'idle',
  target: 'draft',
  // a word problem like the bundled models' task; their answers run to about 90 tokens
  prompt: 'Nora has 4 boxes of pencils. Each box holds 36 pencils. She gives 25 pencils to a friend. How many pencils does Nora have left?',
  maxTokens: 128,
  tokens: [],
  text: '',
  finish: null,
  options: DEFAULT_OPTIONS,
  reasoning: '',
  reasoningTokens: [],
  toolCalls: [],
  usage: null,
};

/** What a run needs of the designer store. */
export interface PlaygroundHost {
  server: DesignerServer;
  get(): PlaygroundState;
  set(next: PlaygroundState): void;
  /** The compiled IR of the canvas graph, or null while it has errors. */
  compiledIr(): IrDocument | null;
}

export class PlaygroundRun {
  private abort: AbortController | null = null;

  constructor(private readonly host: PlaygroundHost) {}

  /** Sends the playground's prompt; a run already streaming is stopped first. */
  run = async (): Promise<void> => {
    this.stop();
    const { host } = this;
    const p = host.get();
    const cleared = { tokens: [], text: '', reasoning: '', reasoningTokens: [], toolCalls: [], usage: null };
    // A bad schema or tool list is shown at its field; nothing is sent.
    const options = buildChatOptions(p.options);
    if (!options.ok) {
      host.set({ ...p, ...cleared, status: 'error', requestId: undefined, message: `Not sent: ${options.problems.map((x) => x.message).join('; ')}` });
      return;
    }
    let ir: IrDocument | undefined;
    if (p.target === 'draft') {
      ir = host.compiledIr() ?? undefined;
      if (!ir) {
        host.set({ ...p, ...cleared, status: 'error', message: 'The draft has errors: fix them to run it.' });
        return;
      }
    }
    const abort = new AbortController();
    this.abort = abort;
    host.set({ ...p, ...cleared, status: 'running', finish: null, message: undefined, requestId: undefined });
    // a stopped or superseded run's late deltas must not write over the next run
    const update = (patch: Partial<PlaygroundState>) => {
      if (this.abort === abort) host.set({ ...host.get(), ...patch });
    };
    try {
      const finish = await host.server.streamChat({
        model: p.target,
        ir,
        prompt: p.prompt,
        maxTokens: p.maxTokens,
        signal: abort.signal,
        onTokens: (tokens, text) => update({ tokens: [...host.get().tokens, ...tokens], text: host.get().text + (text ?? '') }),
        onText: (text) => update({ text: host.get().text + text }),
        onId: (requestId) => update({ requestId }),
        extra: options.body,
        onReasoning: (text) => update({ reasoning: host.get().reasoning + text }),
        onReasoningTokens: (tokens) => update({ reasoningTokens: [...host.get().reasoningTokens, ...tokens] }),
        onToolCalls: (deltas) => update({ toolCalls: mergeToolCalls(host.get().toolCalls, deltas) }),
        onUsage: (usage) => update({ usage }),
      });
      update({ status: 'done', finish });
    } catch (e) {
      if (abort.signal.aborted) update({ status: 'done', finish: 'stopped' });
      else update({ status: 'error', message: errorText(e) });
    } finally {
      if (this.abort === abort) this.abort = null;
    }
  };

  stop = (): void => {
    this.abort?.abort();
  };
}
