import type { ReactNode } from 'react';

/**
 * A column heading: its text, or `{ hidden }` for a column named for screen readers only (actions,
 * a picture). `className` goes on the header cell: give it the class of the column's cells when
 * a style hides them (narrow windows), so the header goes with them.
 */
export type Column = string | { hidden: string; className?: string };

/** A table in its scrolling wrapper: one header row of `columns`, then the rows given as children. */
export function DataTable({ columns, className, children }: { columns: Column[]; className?: string; children: ReactNode }) {
  return (
    <div className="table-wrap">
      <table className={className}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={typeof c === 'string' ? c : c.hidden} scope="col" className={typeof c === 'string' ? undefined : c.className}>
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
