// Header line of the live timeline: a deployed algorithm's predicted (with its band) and measured tok/s and hand-off rate over a window, a percentage only for like-with-like traffic, flagged past 15 %.
import { useEffect, useState } from 'react';
import { PREDICTION_TOLERANCE, type PredictionCheck } from '../../../shared/api/evaluate.ts';
import { deployedAlgorithms, predictionCheck } from './predictionFeed.ts';
import type { TimelineController } from './timelineController.ts';
import { useTick } from './useTick.ts';
import { plural } from '../plural.ts';

const WINDOW_MS = 30_000;
const POLL_MS = 2000;

const BAND_HINT =
  "The range: the same prediction with every step at the 75th and at the 25th percentile of the step latencies it is fitted on (the evaluation and this window). A percentage shows only when the window ran as predicted: a steady concurrency, the evaluation's request shape, this algorithm alone on the models.";

const signed = (x: number | null) => (x === null ? '' : ` (${(x * 100).toFixed(0)} % off)`);

export function PredictionBar({ c: tl }: { c: TimelineController }) {
  useTick(tl);
  const live = tl.source.kind === 'live';
  const [names, setNames] = useState<string[]>([]);
  const [defaultName, setDefaultName] = useState<string | null>(null);
  const [picked, setPicked] = useState<string | null>(() => new URLSearchParams(location.search).get('algorithm'));
  const [check, setCheck] = useState<PredictionCheck | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Unless picked (or named in the address), the server's default: what requests without a model run.
  const name = (picked && names.includes(picked) ? picked : null) ?? defaultName ?? names[0] ?? null;

  useEffect(() => {
    if (!live) return;
    let stop = false;
    const load = () =>
      deployedAlgorithms().then(
        (d) => {
          if (stop) return;
          setNames(d.names);
          setDefaultName(d.defaultName);
        },
        (e: Error) => !stop && setError(e.message),
      );
    void load();
    const t = setInterval(load, 10_000);
    return () => {
      stop = true;
      clearInterval(t);
    };
  }, [live]);

  useEffect(() => {
    if (!live || !name) return;
    let stop = false;
    const poll = () =>
      predictionCheck(name, WINDOW_MS).then(
        (c) => {
          if (stop) return;
          setCheck(c);
          setError(null);
        },
        (e: Error) => !stop && setError(e.message),
      );
    void poll();
    const t = setInterval(poll, POLL_MS);
    return () => {
      stop = true;
      clearInterval(t);
    };
  }, [live, name]);

  if (!live) return null;
  const c = check?.algorithm === name ? check : null;
  return (
    <div className={`tl-predict${c?.flagged ? ' flagged' : ''}`} data-testid="prediction-bar" data-flagged={c?.flagged ? 'true' : 'false'}>
      <label className="k" htmlFor="tl-predict-alg">
        prediction check
      </label>
      <select id="tl-predict-alg" value={name ?? ''} onChange={(e) => setPicked(e.target.value)} data-testid="prediction-algorithm">
        {names.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
      {error && <span className="bad">{error}</span>}
      {c && !c.evaluated && <span className="muted">v{c.version} was not evaluated in the designer: nothing predicted to compare with.</span>}
      {c && c.evaluated && c.requests === 0 && (
        <span className="muted">
          v{c.version}: no request of it ended in the last {Math.round(c.windowMs / 1000)} s.
        </span>
      )}
      {c && c.requests > 0 && (
        <>
          <span className="k">tok/s</span>
          <span className="v" data-testid="prediction-toks" title={c.predicted ? BAND_HINT : undefined}>
            predicted <b>{c.predicted ? c.predicted.tokS.toFixed(0) : '—'}</b>
            {c.predicted && (
              <span className="muted" data-testid="prediction-band">{` (${c.predicted.tokSBand.low.toFixed(0)}–${c.predicted.tokSBand.high.toFixed(0)})`}</span>
            )}{' '}
            · measured <b>{c.measured.tokS.toFixed(0)}</b>
            {signed(c.tokSDiff)}
          </span>
          <span className="k">handoffs / token</span>
          <span className="v" data-testid="prediction-handoffs">
            predicted <b>{c.predicted ? c.predicted.handoffsPerToken.toFixed(3) : '—'}</b> · measured <b>{c.measured.handoffsPerToken.toFixed(3)}</b>
            {signed(c.handoffDiff)}
          </span>
          <span
            className="muted"
            data-testid="prediction-compared"
            title="What the prediction was held against: this algorithm's requests that ended in the window, over the time some were in flight, at the concurrency predicted for"
          >
            last {Math.round(c.windowMs / 1000)} s · {plural(c.requests, 'request')} · {c.meanActive.toFixed(1)} in flight
            {c.compared &&
              ` · predicted at c = ${c.compared.concurrency} · ${c.compared.tokensPerRequest.toFixed(0)} tokens/request live, ${c.compared.evaluatedTokensPerRequest.toFixed(0)} evaluated`}
          </span>
          {!c.comparable && c.notComparable.length > 0 && (
            <span className="warn" role="note" data-testid="prediction-not-compared">
              not compared: {c.notComparable.join('; ')}
            </span>
          )}
          {c.flagged && (
            <span className="flag" role="status" data-testid="prediction-flag">
              ⚠ differs by more than {PREDICTION_TOLERANCE * 100} %
            </span>
          )}
        </>
      )}
    </div>
  );
}
