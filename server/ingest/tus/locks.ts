import type { Locker, Server } from '@tus/server';

/**
 * The locks of the tus endpoint: @tus/server's own (its MemoryLocker, this process only), or in
 * cluster mode one every node sees, opened at start and closed at stop. The pieces that change an
 * upload outside a request (finishing it, marking its video) take the same lock the request
 * handlers take, so neither races the other.
 */
export class TusLocks {
  private opened: (Locker & { close(): Promise<void> }) | undefined;

  /**
   * @param options The Server's options: @tus/server reads `locker` there per request
   *   (BaseHandler.getLocker), so the opened lock is put there.
   * @param openLocker Opens the lock every node sees; absent: the Server's own is kept.
   */
  constructor(
    private readonly options: Server['options'],
    private readonly openLocker?: () => Promise<Locker & { close(): Promise<void> }>,
  ) {}

  /** Opens the cluster's lock, if any; no request arrives before this, so none used the other. */
  async open(): Promise<void> {
    if (!this.openLocker || this.opened) return;
    this.opened = await this.openLocker();
    this.options.locker = this.opened;
  }

  /** Closes the cluster's lock (once no request is in flight). */
  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    await opened?.close();
  }

  /** Runs `fn` holding the lock on `id`, as @tus/server's handlers hold it; a finish is not asked to stop early. */
  async under<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const configured = this.options.locker;
    const locker = await (typeof configured === 'function' ? configured(new Request('http://localhost/')) : configured);
    const lock = locker.newLock(id);
    await lock.lock(new AbortController().signal, () => undefined);
    try {
      return await fn();
    } finally {
      await lock.unlock();
    }
  }
}
