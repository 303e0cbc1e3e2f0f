import { useState } from 'react';
import { errorMessage } from './api.js';

/** What {@link useAction} gives a page. */
export interface Action {
  /** Runs `what`: clears the last notice and error, shows what it returns as the notice, or why it failed as the error. */
  run: (what: () => Promise<string | void>, key?: string) => Promise<void>;
  /** True while an action runs. */
  busy: boolean;
  /** The running action's key ('' when none): which row's buttons to disable. */
  busyKey: string;
  error: string;
  notice: string;
  setNotice: (notice: string) => void;
  setError: (error: string) => void;
}

/**
 * A page's buttons that call the server: one action at a time is tracked (busy, by key), its
 * result shows as a notice and its failure as an error. `onSuccess` runs after an action that
 * succeeded (a reload of what it changed), before the page stops being busy.
 */
export function useAction(onSuccess?: () => unknown): Action {
  const [busyKey, setBusyKey] = useState('');
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  const run = async (what: () => Promise<string | void>, key = 'action') => {
    setBusyKey(key);
    setError('');
    setNotice('');
    try {
      setNotice((await what()) ?? '');
      await onSuccess?.();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusyKey('');
    }
  };
  return { run, busy: busyKey !== '', busyKey, error, notice, setNotice, setError };
}
