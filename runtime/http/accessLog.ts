// One line per answered HTTP request (config "accessLog": true; off by default), written when the response ends.
import type { NextFunction, Request, Response } from 'express';

/**
 * Method, path without its query (a query may carry a token), status, time to the end of the
 * response (streams included), and the API key's name when one was used; never a header or a body.
 */
export function accessLog(write: (line: string) => void = (l) => console.log(l)) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const t0 = performance.now();
    // read now: a router mounted on a prefix strips it from req.path while it runs
    const { method, path } = req;
    res.on('close', () => {
      const key = typeof res.locals.apiKeyName === 'string' ? ` key=${res.locals.apiKeyName}` : '';
      const ended = res.writableFinished ? '' : ' (client gone)';
      write(`[access] ${req.socket.remoteAddress ?? '-'} ${method} ${path} ${res.statusCode} ${(performance.now() - t0).toFixed(1)}ms${key}${ended}`);
    });
    next();
  };
}
