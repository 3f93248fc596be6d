// Chat prompts rendered once per conversation: the same ids as rendering afresh, a private copy for each caller, and no reuse for a template that reads the clock.
import { describe, expect, it, vi } from 'vitest';
import { ChatPrompts } from '../../runtime/http/chatPrompts.ts';
import { charTokenizer } from './testService.ts';

describe('ChatPrompts', () => {
  it('renders a conversation once and hands out copies equal to a fresh render', () => {
    const tok = charTokenizer();
    const render = vi.spyOn(tok, 'applyChatTemplate');
    const prompts = new ChatPrompts(tok);
    const a = [{ role: 'user', content: '12*34' }];
    const first = prompts.ids(a);
    first.push(99);
    const second = prompts.ids([{ role: 'user', content: '12*34' }]);
    expect(second).toEqual(tok.encodeChat(a, true));
    expect(render).toHaveBeenCalledTimes(2); // once by the cache, once by the check above
    expect(prompts.ids([{ role: 'user', content: '12*35' }])).not.toEqual(second);
  });

  it('renders every time when the template reads the clock', () => {
    const tok = charTokenizer();
    Object.defineProperty(tok, 'templateIsPure', { value: false });
    const render = vi.spyOn(tok, 'applyChatTemplate');
    const prompts = new ChatPrompts(tok);
    prompts.ids([{ role: 'user', content: '1*1' }]);
    prompts.ids([{ role: 'user', content: '1*1' }]);
    expect(render).toHaveBeenCalledTimes(2);
  });
});

describe('ChatPrompts with template variables', () => {
  it("keys on the variables and the messages' other fields, not only role and content", () => {
    const tok = charTokenizer();
    const render = vi.spyOn(tok, 'applyChatTemplate');
    const prompts = new ChatPrompts(tok);
    const m = [{ role: 'user', content: '1*1' }];
    prompts.ids(m, { enable_thinking: false });
    prompts.ids(m, { enable_thinking: true });
    const named = { role: 'user', content: '1*1', name: 'x' };
    prompts.ids([named], { enable_thinking: true });
    prompts.ids(m, { enable_thinking: false });
    expect(render).toHaveBeenCalledTimes(3);
    expect(render.mock.calls[0][2]).toEqual({ enable_thinking: false });
  });
});
