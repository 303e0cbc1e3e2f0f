import type { ReactNode } from 'react';

/** A column heading: its text, or `{ hidden }` for a column named for screen readers only (actions, a picture). */
export type Column = string | { hidden: string };

/** A table in its scrolling wrapper: one header row of `columns`, then the rows given as children. */
export function DataTable({ columns, className, children }: { columns: Column[]; className?: string; children: ReactNode }) {
  return (
    <div className="table-wrap">
      <table className={className}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={typeof c === 'string' ? c : c.hidden} scope="col">
                {typeof c === 'string' ? c : <span className="sr-only">{c.hidden}</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
