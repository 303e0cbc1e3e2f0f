import { useState } from 'react';
import { copyText, errorMessage } from '../api.js';
import { useT } from '../i18n.js';

/** A button that copies `text`; says "Copied" (to screen readers too) or why it could not. */
export function CopyButton({ text, label, what }: { text: string; label?: string; what?: string }) {
  const t = useT();
  const shown = label ?? t.common.copy;
  const [state, setState] = useState<'' | 'copied' | string>('');
  const copy = async () => {
    try {
      await copyText(text);
      setState('copied');
    } catch (err) {
      setState(errorMessage(err));
    }
    window.setTimeout(() => setState(''), 2500);
  };
  return (
    <span className="copy">
      <button type="button" className="small" onClick={copy} aria-label={what ? t.common.copyWhat(shown, what) : undefined}>
        {shown}
      </button>
      <span className="copy-state" aria-live="polite">
        {state === 'copied' ? t.common.copied : state}
      </span>
    </span>
  );
}

/** A value in monospace with its copy button. */
export function CopyValue({ value, what }: { value: string; what: string }) {
  return (
    <span className="copy-value">
      <code>{value}</code>
      <CopyButton text={value} what={what} />
    </span>
  );
}
