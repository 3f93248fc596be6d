// Reads every request body as JSON: plain UTF-8 bodies on a short path of our own, compressed or other-charset ones through express.json.
import { isUtf8 } from 'node:buffer';
import type http from 'node:http';
import { parse as parseContentType } from 'content-type';
import express, { type NextFunction, type Request, type RequestHandler } from 'express';

/**
 * Almost every body is uncompressed UTF-8 JSON, and body-parser's general path (content-type
 * parsing, raw-body's stream plumbing, iconv's decoder) was ~4.5 % of the entry's CPU at c = 8 on
 * the small model (a CPU profile). Those bodies take a short path here with body-parser's rules and
 * errors (the same `status` and `type`, so httpErrors maps them as before); a Content-Encoding or a
 * charset other than UTF-8 goes to express.json, which inflates within the limit or refuses (415).
 */
export function jsonBody(limitBytes: number): RequestHandler {
  const general = express.json({ limit: limitBytes, strict: true, type: () => true, verify: rejectInvalidUtf8 });
  return (req, res, next) => {
    // as body-parser: a request already read or cut off has nothing left to parse
    if (req.readableEnded || req.destroyed || !req.readable) return next();
    if (!hasBody(req)) {
      req.body = undefined;
      return next();
    }
    const enc = req.headers['content-encoding'];
    if ((enc !== undefined && enc.toLowerCase() !== 'identity') || !plainCharset(req.headers['content-type'])) return general(req, res, next);
    readPlain(req, limitBytes, next);
  };
}

/** As type-is: a request has a body when it says how it is framed (chunked, or a length, 0 included). */
function hasBody(req: http.IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || !Number.isNaN(Number.parseInt(req.headers['content-length'] ?? '', 10));
}

/**
 * No charset (an empty one too), or exactly UTF-8, found as body-parser finds it (the same parser:
 * quoting, the first of a repeated parameter). Anything else, `utf8` included, goes to express.json,
 * which answers it as it always did.
 */
function plainCharset(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  const charset = parseContentType(contentType).parameters.charset?.toLowerCase();
  return charset === undefined || charset === '' || charset === 'utf-8';
}

function bodyError(status: number, type: string, message: string): Error {
  return Object.assign(new Error(message), { status, statusCode: status, type, expose: true });
}

/** Collects the body within `limit` bytes, then checks UTF-8 and parses it strictly (an object or an array; empty reads as {}). */
function readPlain(req: Request, limit: number, next: NextFunction): void {
  const chunks: Buffer[] = [];
  let received = 0;
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limit) refuse(req, tooLarge(limit), next, stop);
    else chunks.push(chunk);
  };
  const onEnd = () => {
    stop();
    const buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
    if (!isUtf8(buf)) return next(notUtf8());
    try {
      req.body = parseStrict(buf.toString('utf8'));
    } catch (e) {
      return next(bodyError(400, 'entity.parse.failed', (e as Error).message));
    }
    next();
  };
  // a client gone before the end: 'aborted', or a close with no end (whichever comes, once)
  const onGone = () => {
    stop();
    next(bodyError(400, 'request.aborted', 'request aborted'));
  };
  function stop() {
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    req.removeListener('aborted', onGone);
    req.removeListener('close', onGone);
  }
  if (Number.parseInt(req.headers['content-length'] ?? '', 10) > limit) return refuse(req, tooLarge(limit), next, stop);
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('aborted', onGone);
  req.on('close', onGone);
}

/** Past the limit the rest is read and dropped before the error is answered, so the connection stays usable (as body-parser does). */
function refuse(req: Request, e: Error, next: NextFunction, stop: () => void): void {
  stop();
  if (req.readableEnded || req.destroyed) return next(e);
  let told = false;
  const tell = () => {
    if (told) return;
    told = true;
    next(e);
  };
  req.once('end', tell);
  req.once('close', tell);
  req.resume();
}

const notUtf8 = () => bodyError(400, 'encoding.invalid', 'request body is not valid UTF-8');

function tooLarge(limit: number): Error {
  return bodyError(413, 'entity.too.large', `request entity too large (limit ${limit} bytes)`);
}

const FIRST = /^[ \t\n\r]*(.|$)/s;

/** body-parser's strict JSON: empty is {}, anything but an object or array is refused before parsing. A leading BOM is dropped, as its decoder drops it. */
export function parseStrict(text: string): unknown {
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (s.length === 0) return {};
  if (s[0] !== '{' && s[0] !== '[') {
    const first = FIRST.exec(s)![1];
    if (first !== '{' && first !== '[') throw new SyntaxError(first === '' ? 'Unexpected end of JSON input' : `Unexpected token '${first}', a body must be a JSON object or array`);
  }
  return JSON.parse(s);
}

/**
 * JSON must be UTF-8 (RFC 8259); the decoder would otherwise turn invalid bytes into U+FFFD silently
 * and the model would answer a prompt the client never sent. body-parser turns the throw into a 400.
 */
function rejectInvalidUtf8(_req: http.IncomingMessage, _res: http.ServerResponse, buf: Buffer, encoding: string): void {
  if (/^utf-?8$/i.test(encoding) && !isUtf8(buf)) throw notUtf8();
}

