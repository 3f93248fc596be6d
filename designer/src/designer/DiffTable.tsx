// A version diff as a table (red: before, green: after), shared by the versions panel and the confirm dialogs.
import type { DiffRow } from './versionDiff.ts';

export function DiffTable({ rows, testId }: { rows: DiffRow[]; testId: string }) {
  return (
    <table className="diff" data-testid={testId}>
      <tbody>
        {rows.map((r, i) => (
          <tr key={i} className={r.type}>
            {r.type === 'algorithm' && (
              <>
                <td>{r.field}</td>
                <td className="from">{r.from}</td>
                <td className="to">{r.to}</td>
              </>
            )}
            {(r.type === 'added' || r.type === 'removed') && (
              <>
                <td>
                  {r.type === 'added' ? '+' : '−'} {r.nodeId}
                </td>
                <td colSpan={2} className="muted">
                  {r.nodeType} {r.type}
                </td>
              </>
            )}
            {r.type === 'param' && (
              <>
                <td>
                  {r.nodeId}.<b>{r.param}</b>
                </td>
                <td className="from">{r.from}</td>
                <td className="to">{r.to}</td>
              </>
            )}
            {r.type === 'wiring' && (
              <>
                <td>
                  {r.nodeId}.{r.port} ⇠
                </td>
                <td className="from">{r.from}</td>
                <td className="to">{r.to}</td>
              </>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
