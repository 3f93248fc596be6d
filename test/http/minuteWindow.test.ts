// The per-key sliding minute: what remains, when it resets, how long a refused client waits; and the apiKeys config refusals.
import { describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../runtime/config/serverConfig.ts';
import { MinuteWindow, resetText } from '../../runtime/http/minuteWindow.ts';

describe('MinuteWindow', () => {
  it('counts what arrived in the last 60 s; a full window waits until enough has left', () => {
    let now = 1_000_000;
    const w = new MinuteWindow(100, () => now);
    w.add(40);
    now += 10_000;
    w.add(70);
    expect(w.state()).toEqual({ limit: 100, remaining: 0, resetMs: 60_000 });
    // dropping the first 40 brings 110 under 100: it leaves 50 s from now
    expect(w.waitMs()).toBe(50_000);
    now += 50_000;
    expect(w.state().remaining).toBe(30);
    expect(w.waitMs()).toBe(0);
    now += 10_000;
    expect(w.state()).toEqual({ limit: 100, remaining: 100, resetMs: 0 });
  });

  it('formats resets as OpenAI does', () => {
    expect([resetText(20), resetText(1000), resetText(17_200), resetText(60_000), resetText(361_000)]).toEqual(['20ms', '1s', '18s', '1m0s', '6m1s']);
  });
});

describe('apiKeys in the config', () => {
  it('refuses an entry with neither or both of key and sha256, a bad hash, a name or a key twice, naming the entry', () => {
    const bad = (apiKeys: unknown) => () => parseServerConfig({ apiKeys });
    expect(bad([{ name: 'a' }])).toThrow(/apiKeys\.0: give exactly one of "key" and "sha256"/);
    expect(bad([{ name: 'a', key: 'sk-1', sha256: 'ab'.repeat(32) }])).toThrow(/apiKeys\.0: give exactly one/);
    expect(bad([{ name: 'a', sha256: 'xyz' }])).toThrow(/apiKeys\.0\.sha256: sha256 is the key's SHA-256 as 64 hex digits/);
    expect(
      bad([
        { name: 'a', key: 'sk-1' },
        { name: 'a', key: 'sk-2' },
      ]),
    ).toThrow(/apiKeys\.1\.name: "a" is listed twice/);
    expect(
      bad([
        { name: 'a', key: 'sk-1' },
        { name: 'b', key: 'sk-1' },
      ]),
    ).toThrow(/apiKeys\.1: the same key is listed twice/);
    expect(bad([{ name: 'a', key: 'sk-1', requestsPerMinute: 0 }])).toThrow(/apiKeys\.0\.requestsPerMinute/);
    expect(bad([{ name: 'a', key: 'sk-1', rpm: 5 }])).toThrow(/apiKeys\.0: Unrecognized key: "rpm"/);
  });
});
