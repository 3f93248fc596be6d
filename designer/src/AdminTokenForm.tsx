// Asks for the admin token where a page was refused (401), says where to find it, and offers to forget a kept one.
import { useState } from 'react';
import { TOKEN_HINT, adminToken, forgetAdminToken, keepAdminToken } from './adminToken.ts';

/** The question, shown while the server refuses this page: one field, one button. */
export function AdminTokenForm({ onSaved, refused }: { onSaved(): void; refused: boolean }) {
  const [value, setValue] = useState('');
  const had = adminToken() !== null;
  return (
    <form
      className="token-form"
      data-testid="admin-token-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (!value.trim()) return;
        keepAdminToken(value);
        setValue('');
        onSaved();
      }}
    >
      <b>{refused && had ? 'The server refused the kept admin token.' : 'This server needs its admin token.'}</b>
      <span className="token-hint">{TOKEN_HINT} It is kept in this browser until you forget it.</span>
      <input
        type="password"
        autoComplete="off"
        spellCheck={false}
        placeholder="admin token"
        aria-label="admin token"
        value={value}
        onChange={(e) => setValue(e.target.value)}
        data-testid="admin-token-input"
      />
      <button type="submit" className="primary" disabled={!value.trim()} data-testid="admin-token-save">
        Use token
      </button>
    </form>
  );
}

/** Shown while a token is kept: removes it from this browser. */
export function ForgetTokenButton({ onForgot }: { onForgot(): void }) {
  if (adminToken() === null) return null;
  return (
    <button
      type="button"
      className="token-forget"
      title="Remove the admin token kept in this browser"
      data-testid="admin-token-forget"
      onClick={() => {
        forgetAdminToken();
        onForgot();
      }}
    >
      Forget token
    </button>
  );
}
