import type { ReactNode } from 'react';
import { isPlainHttpOffLan } from '../callbackAddress.js';
import { formatEta, statusName, statusTone } from '../format.js';
import { useT } from '../i18n.js';

/** A server error, in words, announced to screen readers. */
export function ErrorMessage({ error }: { error: string | undefined }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {error}
    </p>
  );
}

/** A callback address that would cross networks unencrypted ({@link isPlainHttpOffLan}), said as the admin types it. */
export function CallbackAddressWarning({ address }: { address: string }) {
  const t = useT();
  if (!isPlainHttpOffLan(address)) return null;
  return (
    <p className="error" role="status" data-testid="callback-warning">
      {t.feedback.callbackWarning}
    </p>
  );
}

/** A confirmation of something done. */
export function Notice({ children }: { children: ReactNode }) {
  if (!children) return null;
  return (
    <p className="notice" role="status">
      {children}
    </p>
  );
}

/** A video's Status as a badge. */
export function StatusBadge({ status }: { status: number }) {
  useT(); // the name below is in the chosen language: render again when it changes
  return (
    <span className={`badge ${statusTone(status)}`} data-status={status}>
      {status} · {statusName(status)}
    </span>
  );
}

/** A job's state as a badge. */
export function StateBadge({ state }: { state: string }) {
  const t = useT();
  const tone = state === 'succeeded' || state === 'delivered' ? 'ok' : state === 'failed' ? 'bad' : state === 'running' || state === 'pending' ? 'busy' : 'idle';
  return (
    <span className={`badge ${tone}`} data-state={state}>
      {t.feedback.states[state] ?? state}
    </span>
  );
}

/** An application's state as a badge. */
export function AppStateBadge({ disabled }: { disabled: boolean }) {
  const t = useT();
  return disabled ? <span className="badge bad">{t.feedback.disabled}</span> : <span className="badge ok">{t.feedback.enabled}</span>;
}

/** A progress bar with its percentage (role=progressbar, so tests and screen readers read it). */
export function ProgressBar({ percent, label }: { percent: number | null; label: string }) {
  const t = useT();
  const p = percent === null ? null : Math.max(0, Math.min(100, percent));
  return (
    <div className="progress" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={p ?? undefined}>
      <div className="progress-fill" style={{ width: `${p ?? 0}%` }} />
      <span className="progress-text">{p === null ? t.feedback.sizeUnknown : `${p.toFixed(p < 10 && p > 0 ? 1 : 0)}%`}</span>
    </div>
  );
}

/** "speed · time left" under a progress bar. */
export function SpeedEta({ speed, etaSeconds }: { speed: string | null | undefined; etaSeconds: number | null | undefined }) {
  const t = useT();
  return (
    <span className="muted small-text">
      {speed ? `${speed}` : '—'} · {etaSeconds !== null && etaSeconds !== undefined ? t.feedback.left(formatEta(etaSeconds)) : t.feedback.timeLeftUnknown}
    </span>
  );
}

/** A page's title block. */
export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="page-header">
      <h1 tabIndex={-1} id="page-title">
        {title}
      </h1>
      {children ? <div className="page-actions">{children}</div> : null}
    </div>
  );
}
