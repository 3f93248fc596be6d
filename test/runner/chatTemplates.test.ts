// Chat templates render as transformers renders them (@huggingface/jinja with trim_blocks/lstrip_blocks): real
// models' templates, checked in under test/fixtures/chat-templates/, and the bundled models' own template. The expected
// prompts were produced by Python's jinja2 with transformers' settings (trim_blocks, lstrip_blocks, tojson, raise_exception).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { charTokenizer } from '../../runtime/runner/charTokenizer.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer, type ChatMessage } from '../../runtime/runner/tokenizer.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { toHttpError } from '../../runtime/http/httpErrors.ts';
import { MODEL_NAMES, modelDir } from './helpers.ts';

const FIXTURES = path.join(import.meta.dirname, '../fixtures/chat-templates');

/** A tokenizer whose only interesting part is its chat template (a one-token vocabulary). */
function withTemplate(template: string, tokens: { bos?: string; eos?: string } = {}, modelName = 'test-model'): TextTokenizer {
  const json = {
    version: '1.0',
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
    model: { type: 'BPE', vocab: { a: 0 }, merges: [] },
  };
  return new TextTokenizer(json, { bos_token: tokens.bos ?? '<s>', eos_token: tokens.eos ?? '</s>', chat_template: template }, { bos: 0, eos: 0 }, modelName);
}

function fixture(name: string, tokens?: { bos?: string; eos?: string }): TextTokenizer {
  return withTemplate(fs.readFileSync(path.join(FIXTURES, name), 'utf8'), tokens, name.replace(/[.]jinja$/, ''));
}

const SYSTEM: ChatMessage = { role: 'system', content: 'You are terse.' };
const CONVERSATION: ChatMessage[] = [
  { role: 'user', content: 'What is 2+2?' },
  { role: 'assistant', content: '4' },
  { role: 'user', content: 'And 3*3?' },
];
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

describe('real-world chat templates', () => {
  it('ChatML', () => {
    expect(fixture('chatml.jinja').applyChatTemplate([SYSTEM, ...CONVERSATION])).toBe(
      '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3*3?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('Qwen2.5-Instruct: default system prompt, loop.first / loop.last', () => {
    expect(fixture('qwen2.5-instruct.jinja').applyChatTemplate(CONVERSATION)).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3*3?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('Qwen2.5-Instruct with tools: tojson', () => {
    expect(fixture('qwen2.5-instruct.jinja').applyChatTemplate([SYSTEM, { role: 'user', content: 'Weather in Paris?' }], true, { tools: TOOLS })).toBe(
      '<|im_start|>system\nYou are terse.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('Qwen3: namespace, a reversed slice, and earlier turns lose their <think> block', () => {
    const messages = [SYSTEM, CONVERSATION[0], { role: 'assistant', content: '<think>\nTwo plus two.\n</think>\n\n4' }, CONVERSATION[2]];
    expect(fixture('qwen3.jinja').applyChatTemplate(messages)).toBe(
      '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3*3?<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(fixture('qwen3.jinja').applyChatTemplate([CONVERSATION[0]], true, { enable_thinking: false })).toBe(
      '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    );
  });

  it('Llama-3.1-Instruct: system message extracted, date default, |trim', () => {
    const tok = fixture('llama-3.1-instruct.jinja', { bos: '<|begin_of_text|>', eos: '<|eot_id|>' });
    expect(tok.applyChatTemplate([SYSTEM, ...CONVERSATION])).toBe(
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnd 3*3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });

  it('Llama-3.1-Instruct with tools: tojson(indent=4) in the first user message', () => {
    const tok = fixture('llama-3.1-instruct.jinja', { bos: '<|begin_of_text|>', eos: '<|eot_id|>' });
    expect(tok.applyChatTemplate([{ role: 'user', content: 'Weather in Paris?' }], true, { tools: TOOLS })).toBe(
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n{\n    "type": "function",\n    "function": {\n        "name": "get_weather",\n        "description": "Current weather for a city",\n        "parameters": {\n            "type": "object",\n            "properties": {\n                "city": {\n                    "type": "string"\n                }\n            },\n            "required": [\n                "city"\n            ]\n        }\n    }\n}\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });

  it('Mistral-7B-Instruct-v0.1: alternating roles, eos_token after each answer', () => {
    expect(fixture('mistral-7b-instruct-v0.1.jinja').applyChatTemplate(CONVERSATION)).toBe('<s>[INST] What is 2+2? [/INST]4</s>[INST] And 3*3? [/INST]');
  });

  it('macros, namespace and loop variables render', () => {
    const src =
      '{%- macro turn(role, text) -%}[{{ role | upper }}] {{ text }}{%- endmacro -%}' +
      '{%- set ns = namespace(users=0) -%}' +
      "{%- for m in messages -%}{%- if m.role == 'user' %}{%- set ns.users = ns.users + 1 %}{%- endif -%}" +
      '{{ turn(m.role, m.content) }}{%- if not loop.last %} | {% endif -%}{%- endfor -%}' +
      "{{ ' (' ~ ns.users ~ ' from the user, ' ~ (messages | map(attribute='role') | list | tojson) ~ ')' }}";
    expect(withTemplate(src).applyChatTemplate(CONVERSATION)).toBe(
      '[USER] What is 2+2? | [ASSISTANT] 4 | [USER] And 3*3? (2 from the user, ["user", "assistant", "user"])',
    );
  });
});

describe("the bundled models' template", () => {
  it.each(MODEL_NAMES)('%s renders a conversation as it always did', (name) => {
    const tok = TextTokenizer.fromFolder(loadModelFolder(modelDir(name)));
    expect(tok.hasChatTemplate).toBe(true);
    expect(tok.applyChatTemplate([{ role: 'user', content: ' 347*26 ' }])).toBe('<s>Q: 347*26=\nA: ');
    expect(tok.applyChatTemplate([{ role: 'user', content: '347*26=' }])).toBe('<s>Q: 347*26=\nA: ');
    expect(
      tok.applyChatTemplate([
        { role: 'user', content: ' 347*26 ' },
        { role: 'assistant', content: '347*26=9022' },
        { role: 'user', content: '12*3=' },
      ]),
    ).toBe('<s>Q: 347*26=\nA: 347*26=9022</s>Q: 12*3=\nA: ');
  });

  it("the simulated runners' char tokenizer renders as before", () => {
    expect(
      charTokenizer().applyChatTemplate([
        { role: 'system', content: 'x' },
        { role: 'user', content: ' 1+2 ' },
      ]),
    ).toBe('<s>Q: 1+2\nA: ');
  });
});

describe('template errors', () => {
  function thrown(f: () => unknown): TokenRouterError {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(TokenRouterError);
      return e as TokenRouterError;
    }
    throw new Error('did not throw');
  }

  it('raise_exception in a template is a 400 naming the model', () => {
    const e = thrown(() => fixture('mistral-7b-instruct-v0.1.jinja').applyChatTemplate([SYSTEM, CONVERSATION[0]]));
    expect(e.code).toBe('invalid_request');
    expect(e.param).toBe('messages');
    expect(e.message).toBe(
      'model "mistral-7b-instruct-v0.1": its chat template failed to render these messages: Conversation roles must alternate user/assistant/user/assistant/...',
    );
    const h = toHttpError(e);
    expect(h.status).toBe(400);
    expect(h.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param: 'messages' });
  });

  it('a template that does not parse loads (plain encoding still works) and is a 400 naming the model when a chat needs it', () => {
    const tok = withTemplate('{% for m in messages %}{{ m.content }}', {}, 'broken');
    expect(tok.encode('a', false)).toEqual([0]);
    const e = thrown(() => tok.encodeChat(CONVERSATION));
    expect(e.code).toBe('invalid_request');
    expect(e.message).toMatch(/^model "broken": its chat template does not parse: /);
    expect(toHttpError(e).status).toBe(400);
  });

  it('a runtime error inside the template (calling an undefined function) is a 400 too', () => {
    const e = thrown(() => withTemplate('{{ no_such_function(messages) }}').applyChatTemplate(CONVERSATION));
    expect(e.message).toMatch(/^model "test-model": its chat template failed to render these messages: /);
    expect(toHttpError(e).status).toBe(400);
  });
});
