// Evaluate tab: pick a task (bundled, or a task folder's path on the server), run the draft on N of its validation problems with a progress bar and cancel, its accuracy and routing statistics, its predicted serving cost, and the accuracy × throughput plot beside the served models and algorithms.
import { createContext, useContext, useEffect, useState, useSyncExternalStore } from 'react';
import { PREDICT_LIVE_WINDOW_MS, type Prediction } from '../../../shared/api/evaluate.ts';
import { DEFAULT_TASK, type EvaluateFlow, type EvaluateState } from './evaluateFlow.ts';
import { FrontierPlot } from './FrontierPlot.tsx';
import { modelColor } from './modelColors.ts';
import { useDesigner, useStore } from './useDesigner.ts';

export const EvaluateContext = createContext<EvaluateFlow | null>(null);

function useEvaluate(): [EvaluateFlow, EvaluateState] {
  const flow = useContext(EvaluateContext);
  if (!flow) throw new Error('useEvaluate outside <EvaluateContext.Provider>');
  return [flow, useSyncExternalStore(flow.subscribe, flow.getState)];
}

type PredictionSetting = Prediction['best'];

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const num = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '—');

const whole = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '—');
const BAND_HINT =
  'The step latencies this prediction is fitted on vary from step to step (other work on the machine, the gaps between batches). The figure reads each model and batch size at its median step; the range has every step at the 75th percentile (low end) and at the 25th (high end). A measurement outside it means the machine or the traffic changed, not only the model.';

/** One threshold setting and what the throughput model predicts for it: the best, and the one in force. */
function SettingRow({ label, setting, testId, hint }: { label: string; setting: PredictionSetting; testId: string; hint: string }) {
  return (
    <tr>
      <th scope="row" title={hint}>
        {label}
      </th>
      <td data-testid={testId}>
        <span data-testid={`${testId}-toks`} title={BAND_HINT}>
          ≈ {whole(setting.tokS)} tok/s{' '}
          <span className="muted" data-testid={`${testId}-band`}>
            ({whole(setting.tokSBand.low)}–{whole(setting.tokSBand.high)})
          </span>
        </span>{' '}
        · p99 TPOT {num(setting.p99TpotMs)} ms{' '}
        <span className="muted" data-testid={`${testId}-thresholds`}>
          (thresholds{' '}
          {Object.entries(setting.thresholds)
            .map(([m, t]) => `${m} ${t}`)
            .join(', ')}
          )
        </span>
      </td>
    </tr>
  );
}

/** The picker's entry that shows the path field. */
const BY_PATH = '\u0000path';

/** The task runs grade on: a bundled one from the list, or a path on the server typed in (applied on Enter or on leaving the field). */
function TaskPicker({ flow, s }: { flow: EvaluateFlow; s: EvaluateState }) {
  const [path, setPath] = useState(s.taskByPath ? s.task : '');
  const running = s.status === 'running';
  const bundled = s.tasks.length > 0 ? s.tasks : [{ name: s.taskByPath ? DEFAULT_TASK : s.task, grader: '' }];
  const apply = () => void flow.setTask(path.trim(), true);
  return (
    <>
      <label className="muted small">
        task{' '}
        <select
          value={s.taskByPath ? BY_PATH : s.task}
          disabled={running}
          onChange={(e) => (e.target.value === BY_PATH ? void flow.setTask(path.trim(), true) : void flow.setTask(e.target.value, false))}
          data-testid="ev-task"
        >
          {bundled.map((t) => (
            <option key={t.name} value={t.name} title={'description' in t ? t.description : undefined}>
              {t.name}
            </option>
          ))}
          <option value={BY_PATH}>task folder on the server…</option>
        </select>
      </label>
      {s.taskByPath && (
        <input
          type="text"
          className="ev-task-path"
          placeholder="path to a task folder (task.json, validation.jsonl)"
          aria-label="Task folder path on the server"
          value={path}
          disabled={running}
          onChange={(e) => setPath(e.target.value)}
          onBlur={apply}
          onKeyDown={(e) => e.key === 'Enter' && apply()}
          data-testid="ev-task-path"
        />
      )}
    </>
  );
}

export function EvaluatePanel() {
  const store = useStore();
  const [flow, s] = useEvaluate();
  const errorCount = useDesigner((d) => d.errorCount);
  const catalog = useDesigner((d) => d.catalog);
  const registry = useDesigner((d) => d.registry);
  const running = s.status === 'running';
  const p = s.progress;
  const r = s.result;
  const pred = s.prediction;
  // the problems field's bound is the server's validation set, asked for once the panel shows
  useEffect(() => {
    if (s.maxProblems === null && s.tasks.length === 0) void flow.loadBounds();
  }, [flow, s.maxProblems, s.tasks.length]);
  // models whose step latency no live request has measured: the prediction rests on the evaluation alone for them
  const unseen = pred
    ? Object.entries(pred.liveBatches)
        .filter(([, n]) => n === 0)
        .map(([m]) => m)
    : [];
  const references = [
    ...catalog.map((m) => ({ name: m.name, kind: 'model' as const })),
    ...registry.algorithms
      .filter((a) => a.activeVersion !== null)
      .map((a) => ({ name: a.name, kind: 'algorithm' as const, skip: a.served ? undefined : 'not served: it does not load on the models this server serves' })),
  ];
  const evaluate = () => {
    const ir = store.compiledIr();
    if (ir) void flow.evaluateDraft(ir);
  };
  return (
    <div className="evaluate" data-testid="evaluate">
      <div className="ev-controls">
        <TaskPicker flow={flow} s={s} />
        <label className="muted small">
          problems{' '}
          <input
            type="number"
            min={1}
            max={s.maxProblems ?? undefined}
            value={s.problems}
            disabled={running}
            onChange={(e) => flow.setProblems(Number(e.target.value))}
            title={s.maxProblems === null ? undefined : `up to ${s.maxProblems}, the task's validation set's size`}
            data-testid="ev-problems"
          />
        </label>
        <div className="tb-spacer" />
        {running ? (
          <button type="button" onClick={() => void flow.cancel()} data-testid="ev-cancel">
            Cancel
          </button>
        ) : (
          <button
            type="button"
            className="primary"
            onClick={evaluate}
            disabled={errorCount > 0 || !s.task}
            title={
              errorCount > 0
                ? 'The draft has errors: fix them to evaluate it'
                : !s.task
                  ? 'Give the task folder’s path first'
                  : `Run the draft on the validation problems of task ${s.task}`
            }
            data-testid="ev-run"
          >
            Evaluate draft
          </button>
        )}
      </div>
      {p && (
        <div className="ev-progress-row">
          <progress max={p.total} value={p.done} aria-label={`Evaluating ${s.label ?? ''}`} data-testid="ev-progress" />
          <span className="muted small" data-testid="ev-progress-text">
            {s.label} {p.done}/{p.total}
            {p.done > 0 ? ` · ${pct(p.correct / p.done)} right so far` : ''}
          </span>
        </div>
      )}
      <div className="ev-status" role="status" data-testid="ev-status" data-status={s.status}>
        {s.status === 'idle' && (
          <span className="muted">
            Runs the graph on the canvas (not deployed) on the first N validation problems of the task through the live server, grades each answer by the task's
            grader, then predicts what serving it costs.
          </span>
        )}
        {s.message && <span className={s.status === 'error' ? 'bad' : 'muted'}>{s.message}</span>}
        {s.queue.length > 0 && <span className="muted"> · {s.queue.length} more to compare</span>}
      </div>
      {r && (
        <table className="ev-stats" data-testid="ev-result">
          <tbody>
            <tr>
              <th scope="row">accuracy</th>
              <td data-testid="ev-accuracy">
                {pct(r.accuracy)}{' '}
                <span className="muted">
                  ({r.correct}/{r.problems} of task {r.task}, graded by {r.grader})
                </span>
              </td>
            </tr>
            <tr>
              <th scope="row">mean output</th>
              <td>{num(r.meanOutputTokens)} tokens</td>
            </tr>
            <tr>
              <th scope="row">handoffs / request</th>
              <td data-testid="ev-handoffs">{num(r.handoffsPerRequest, 2)}</td>
            </tr>
            <tr>
              <th scope="row">token share</th>
              <td>
                {Object.entries(r.tokenShare).map(([m, x]) => (
                  <span key={m} className="ev-share">
                    <i style={{ background: modelColor(m, catalog) }} />
                    {m} {pct(x)}
                  </span>
                ))}
              </td>
            </tr>
            <tr>
              <th
                scope="row"
                title="P[a→b]: the share of steps on model a that were followed by work on model b (a hand-off), measured in this evaluation; the throughput model prices the draft from these"
              >
                hand-off rate <span className="muted small">(per step)</span>
              </th>
              <td className="ev-matrix">
                {r.routing.models.map((from, i) =>
                  r.routing.models.map((to, j) =>
                    i === j ? null : (
                      <span key={`${from}-${to}`}>
                        {from}→{to} {num(r.routing.P[i][j], 3)}
                      </span>
                    ),
                  ),
                )}
              </td>
            </tr>
          </tbody>
        </table>
      )}
      <div className="ev-controls">
        <label className="muted small">
          predict at concurrency{' '}
          <input
            type="number"
            min={1}
            max={32}
            value={s.concurrency}
            onChange={(e) => void flow.setConcurrency(Number(e.target.value))}
            data-testid="ev-concurrency"
          />
        </label>
        <label
          className="muted small"
          title="Each client's own time per request outside the server: the network both ways and its turnaround before it asks again"
        >
          client ms per request{' '}
          <input
            type="number"
            min={0}
            max={60000}
            step="any"
            value={s.clientMs}
            onChange={(e) => void flow.setClientMs(Number(e.target.value))}
            data-testid="ev-client-ms"
          />
        </label>
      </div>
      {s.predicting && !s.repricing && <div className="muted small">Predicting…</div>}
      {s.repricing && (
        <div className="muted small" role="status" data-testid="ev-repricing">
          Re-pricing at concurrency {s.concurrency}… the figures below are still at {s.pricedAt}.
        </div>
      )}
      {pred && (
        <table className="ev-stats" data-testid="ev-prediction">
          <caption className="muted small" data-testid="ev-prediction-at">
            at concurrency {pred.concurrency}
          </caption>
          <tbody>
            <SettingRow
              label="best thresholds"
              setting={pred.best}
              testId="ev-predicted"
              hint="The thresholds the throughput model would choose for this concurrency, and what it predicts with them"
            />
            {pred.current && (
              <SettingRow
                label="today's thresholds"
                setting={pred.current}
                testId="ev-current"
                hint="The thresholds in force on the server now (what a deploy runs with unless thresholds are auto), and what the model predicts with them"
              />
            )}
          </tbody>
        </table>
      )}
      {unseen.length > 0 && (
        <div className="muted small" role="note" data-testid="ev-latency-note">
          No live traffic on {unseen.join(', ')} in the last {PREDICT_LIVE_WINDOW_MS / 1000} s: {unseen.length === 1 ? 'its' : 'their'} step latency is this
          evaluation's alone, measured without the HTTP entry's work beside it, so the prediction can be off by 15 % or more either way.
        </div>
      )}
      {s.notCompared.length > 0 && (
        <ul className="ev-not-compared small" data-testid="ev-not-compared">
          {s.notCompared.map((n) => (
            <li key={n.name}>
              <b>{n.name}</b> <span className="muted">{n.why}</span>
            </li>
          ))}
        </ul>
      )}
      {s.points.length > 0 && <FrontierPlot points={s.points} concurrency={s.pricedAt} />}
      <div className="ev-controls">
        <button
          type="button"
          onClick={() => void flow.compare(references)}
          disabled={running || references.length === 0}
          title="Evaluate each served model and deployed algorithm with the same settings, for the plot; one that cannot run says why and the rest go on"
          data-testid="ev-compare"
        >
          Compare with served ({references.length})
        </button>
      </div>
    </div>
  );
}
