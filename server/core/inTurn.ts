/**
 * Steps run one after another, each once the one before has settled (a failed step does not
 * stop the next): for state one process reads and writes across awaits, such as a file rewritten
 * whole or a decision taken on what is held.
 */
export class InTurn {
  private last: Promise<unknown> = Promise.resolve();

  /** Runs `step` after the steps given before it; resolves or rejects as it does. */
  run<T>(step: () => Promise<T>): Promise<T> {
    const done = this.last.then(step);
    this.last = done.catch(() => undefined);
    return done;
  }
}
