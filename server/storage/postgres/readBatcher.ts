/**
 * Reads by key that arrive in the same turn of the event loop, made as one query (DataLoader's
 * idea). Under load many API calls are read from their sockets in one turn; each would cost a
 * round trip to PostgreSQL (two system calls here, a statement's overhead there) for one short
 * row. Gathered, they cost one. A read still starts after its call arrived, so it sees every
 * write committed before: nothing is answered from memory.
 */
export class ReadBatcher<V> {
  private pending = new Map<string, Array<{ resolve: (v: V | undefined) => void; reject: (err: unknown) => void }>>();
  private scheduled = false;

  /**
   * `readMany`: the values of the keys given (a key without a value is absent from the map).
   * `maxKeys`: a batch that reaches this many keys is sent at once.
   */
  constructor(
    private readonly readMany: (keys: string[]) => Promise<Map<string, V>>,
    private readonly maxKeys = 100,
  ) {}

  /** The value of `key`, read with the other keys asked for in this turn. */
  load(key: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      let waiting = this.pending.get(key);
      if (!waiting) this.pending.set(key, (waiting = []));
      waiting.push({ resolve, reject });
      if (this.pending.size >= this.maxKeys) {
        this.send();
      } else if (!this.scheduled) {
        this.scheduled = true;
        // After the turn's I/O: every call read from a socket in it has asked by then.
        setImmediate(() => {
          this.scheduled = false;
          this.send();
        });
      }
    });
  }

  private send(): void {
    const batch = this.pending;
    if (batch.size === 0) return;
    this.pending = new Map();
    this.readMany([...batch.keys()]).then(
      (found) => {
        for (const [key, waiting] of batch) for (const w of waiting) w.resolve(found.get(key));
      },
      (err: unknown) => {
        for (const waiting of batch.values()) for (const w of waiting) w.reject(err);
      },
    );
  }
}
