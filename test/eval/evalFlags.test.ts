// tokenrouter eval refuses a bad split, plan or --choose before it loads any model, naming what it takes.
import { describe, expect, it } from 'vitest';
import { evalCommand } from '../../runtime/cli/evalCommand.ts';

describe('tokenrouter eval flags', () => {
  it('names the splits and plans, and keeps --choose to the validation ensemble run', async () => {
    await expect(evalCommand(['--split', 'train'])).rejects.toThrow(/unknown split "train"; splits: validation, heldout/);
    await expect(evalCommand(['--plan', 'all'])).rejects.toThrow(/unknown plan "all"; plans: default, ensemble, heads/);
    await expect(evalCommand(['--plan', 'ensemble', '--choose', '/tmp/x.json'])).rejects.toThrow(/needs --plan ensemble or heads and --split validation/);
    await expect(evalCommand(['--split', 'validation', '--choose', '/tmp/x.json'])).rejects.toThrow(/needs --plan ensemble or heads and --split validation/);
    await expect(evalCommand(['--plan', 'heads'])).rejects.toThrow(/the heads plan calibrates thresholds: run it on --split validation/);
    await expect(evalCommand(['--split', 'validation', '--problems', '1001'])).rejects.toThrow(/--problems must be an integer from 1 to 1000/);
  });
});
