/**
 * The parts a server is made of, in the order they start; they stop in the reverse order. One
 * list serves a build that fails half-way (what was added so far stops, last first) and a
 * server's close alike, so the two cannot drift apart (issue 36: they had).
 */

/** One thing the server opened or runs, and how it starts and stops. */
export interface Part {
  /** What it is, for the message when its stop fails. */
  readonly name: string;
  /** Runs when the server starts (listen), after every part before it in the list. */
  start?(): Promise<void> | void;
  /** Runs when the server closes (or its build fails), after every part after it in the list. */
  stop?(graceMs: number): Promise<void> | void;
}

export class Parts {
  private readonly list: Part[] = [];

  /** Adds parts at the end of the list; an absent one (a feature this node does not run) is skipped. */
  add(...parts: Array<Part | undefined>): void {
    for (const part of parts) if (part) this.list.push(part);
  }

  /** Starts every part, first first; rejects at the first that fails (the caller then stops them all). */
  async start(): Promise<void> {
    for (const part of this.list) await part.start?.();
  }

  /**
   * Stops every part, last first. A part that fails to stop does not keep the ones before it
   * open (the data directory's lock and the database are at the bottom): the rest stop, then
   * this rejects with the first failure.
   */
  async stop(graceMs: number): Promise<void> {
    const failures: Error[] = [];
    for (const part of [...this.list].reverse()) {
      try {
        await part.stop?.(graceMs);
      } catch (err) {
        failures.push(new Error(`Stopping ${part.name}: ${(err as Error).message ?? String(err)}`, { cause: err }));
      }
    }
    if (failures.length > 0) throw failures[0];
  }
}
