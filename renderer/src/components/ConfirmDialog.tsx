import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { useT } from '../i18n.js';

/**
 * A modal question (the native <dialog>: focus stays inside, Escape cancels). Renders nothing
 * while `open` is false.
 */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const t = useT();
  const ref = useRef<HTMLDialogElement>(null);
  // Its own id: a page with several of these (a Cancel per row) must not name every one after the first.
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={titleId} onCancel={(e) => (e.preventDefault(), props.onCancel())}>
      <h2 id={titleId}>{props.title}</h2>
      <div>{props.children}</div>
      <div className="row end">
        <button type="button" onClick={props.onCancel} autoFocus>
          {t.common.cancel}
        </button>
        <button type="button" className={props.danger ? 'danger' : 'primary'} onClick={props.onConfirm} disabled={props.busy}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/**
 * A button that asks first: it opens a {@link ConfirmDialog}, and `onConfirm` runs once the
 * dialog is confirmed (the dialog closes first). For actions that cannot be undone.
 */
export function ConfirmButton(props: {
  /** The button's text. */
  label: string;
  /** The button's name for screen readers, when its text alone is ambiguous ("Cancel" in a list). */
  ariaLabel?: string;
  className?: string;
  disabled?: boolean;
  /** The dialog's question, its confirming button and what it explains. */
  title: string;
  confirmLabel: string;
  children: ReactNode;
  danger?: boolean;
  onConfirm: () => void;
}) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className={props.className} disabled={props.disabled} aria-label={props.ariaLabel} onClick={() => setOpen(true)}>
        {props.label}
      </button>
      <ConfirmDialog
        open={open}
        title={props.title}
        confirmLabel={props.confirmLabel}
        danger={props.danger}
        busy={props.disabled}
        onCancel={() => setOpen(false)}
        onConfirm={() => {
          setOpen(false);
          props.onConfirm();
        }}
      >
        {props.children}
      </ConfirmDialog>
    </>
  );
}
