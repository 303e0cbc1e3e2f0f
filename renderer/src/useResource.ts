import { useCallback, useEffect, useRef, useState } from 'react';
import { errorMessage } from './api.js';

/** Loads something from the server; `reload` fetches again and keeps showing the old data meanwhile. */
export function useResource<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: string; loading: boolean; reload: () => Promise<void> } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(async () => {
    const mine = ++seq.current;
    setLoading(true);
    try {
      const d = await loadRef.current();
      if (mine === seq.current) {
        setData(d);
        setError('');
      }
    } catch (err) {
      if (mine === seq.current) setError(errorMessage(err));
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  }, []);
  useEffect(() => {
    void reload();
    // `load` is a new function on every render: the caller's `deps` say when to fetch again.
  }, deps);
  return { data, error, loading, reload };
}

/** Runs `fn` at most once per `ms`, at the end of a burst (events that each ask for a reload). */
export function useDebounced(fn: () => void, ms: number): () => void {
  const ref = useRef(fn);
  ref.current = fn;
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(timer.current), []);
  return useCallback(() => {
    if (timer.current !== undefined) return;
    timer.current = window.setTimeout(() => {
      timer.current = undefined;
      ref.current();
    }, ms);
  }, [ms]);
}
