import { useEffect, useRef, useState, type ReactNode, type RefObject } from 'react';
import { useT } from '../i18n.js';

/**
 * A column heading: its text, or `{ hidden }` for a column named for screen readers only (actions,
 * a picture). `className` goes on the header cell: give it the class of the column's cells when
 * a style hides them (narrow windows), so the header goes with them.
 */
export type Column = string | { hidden: string; className?: string };

/** Which sides of a scrolling box have more to show. */
interface Overflow {
  left: boolean;
  right: boolean;
}

/**
 * Whether the box scrolls sideways, and which way there is more: watched as it scrolls and as it
 * or its content changes size (a narrow window, rows arriving, another language's words).
 */
function useOverflow(): [RefObject<HTMLDivElement | null>, Overflow] {
  const ref = useRef<HTMLDivElement>(null);
  const [overflow, setOverflow] = useState<Overflow>({ left: false, right: false });
  useEffect(() => {
    const box = ref.current;
    if (!box) return;
    const measure = () => {
      // A pixel of slack: rounding of fractional widths is not content out of sight.
      const left = box.scrollLeft > 1;
      const right = box.scrollLeft + box.clientWidth < box.scrollWidth - 1;
      setOverflow((o) => (o.left === left && o.right === right ? o : { left, right }));
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(box);
    if (box.firstElementChild) observer.observe(box.firstElementChild);
    box.addEventListener('scroll', measure, { passive: true });
    return () => {
      observer.disconnect();
      box.removeEventListener('scroll', measure);
    };
  }, []);
  return [ref, overflow];
}

/**
 * A table in its scrolling wrapper: one header row of `columns`, then the rows given as children.
 * In a window too narrow for it the table scrolls sideways, and its last columns (often the
 * actions) would be out of sight with nothing to say so: the edge with more beyond it fades, and
 * a line above says the table scrolls.
 */
export function DataTable({ columns, className, children }: { columns: Column[]; className?: string; children: ReactNode }) {
  const t = useT();
  const [ref, overflow] = useOverflow();
  const scrolls = overflow.left || overflow.right;
  return (
    <div className="table-scroll">
      {scrolls ? (
        <p className="scroll-hint muted small-text" aria-hidden="true">
          {t.common.scrollHint}
        </p>
      ) : null}
      <div className={`table-frame${overflow.left ? ' more-left' : ''}${overflow.right ? ' more-right' : ''}`}>
        <div className="table-wrap" ref={ref}>
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
      </div>
    </div>
  );
}
