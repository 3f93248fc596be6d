// Load client in its own process (plain JS, starts fast): N streaming chats at once, one JSON line of per-client outcomes on stdout.
// Usage: node loadClient.mjs '{"url":"http://127.0.0.1:8080","clients":1000,"maxTokens":48}'

const { url, clients, maxTokens } = JSON.parse(process.argv[2]);

async function one(i) {
  const t0 = performance.now();
  const out = { status: 0, done: false, finish: null, error: null, ttftMs: null, e2eMs: 0, retryAfter: null, chars: 0 };
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: i % 4 === 0 ? 'small' : 'r-stitch',
        messages: [{ role: 'user', content: `${100 + i}*${(i % 89) + 2}` }],
        max_tokens: maxTokens,
        temperature: 0,
        stream: true,
      }),
    });
    out.status = res.status;
    out.retryAfter = res.headers.get('retry-after');
    if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const j = await res.json();
      out.error = j.error?.message ?? null;
    } else {
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let k;
        while ((k = buf.indexOf('\n\n')) >= 0) {
          const line = buf.slice(0, k);
          buf = buf.slice(k + 2);
          if (!line.startsWith('data: ')) continue;
          if (line === 'data: [DONE]') {
            out.done = true;
            continue;
          }
          const j = JSON.parse(line.slice(6));
          if (j.error) out.error = j.error.message;
          const c = j.choices?.[0];
          if (c?.delta?.content) {
            out.chars += c.delta.content.length;
            out.ttftMs ??= performance.now() - t0;
          }
          if (c?.finish_reason) out.finish = c.finish_reason;
        }
      }
    }
  } catch (e) {
    out.error = `client: ${e.message}`;
  }
  out.e2eMs = performance.now() - t0;
  return out;
}

const t0 = performance.now();
const results = await Promise.all(Array.from({ length: clients }, (_, i) => one(i)));
process.stdout.write(JSON.stringify({ wallMs: performance.now() - t0, results }) + '\n');
