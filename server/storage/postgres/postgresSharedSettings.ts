/**
 * {@link SharedSettingsStore} in PostgreSQL (`console_settings`, migration 8): the settings saved
 * from the console, one document for every node of a cluster (issue 11).
 *
 * A save locks the one row, writes the next version and NOTIFYs {@link CHANNEL} with it in the
 * same transaction: PostgreSQL delivers a notification only when its transaction commits, so a
 * node never hears of a save that was rolled back, and hears of each in commit order. Each node
 * LISTENs on a connection of its own and reads the row when told (the payload is only the
 * version: a ladder of twelve rungs would still fit NOTIFY's 8,000 bytes, but one read is simpler
 * than a second encoding). LISTEN rather than polling the version: a save reaches the other nodes
 * at once and an idle cluster costs no query. What NOTIFY cannot give is delivery while the
 * listening connection is down, so after every (re)connection the row is read again.
 */
import pg from 'pg';
import type { SharedSettingsDocument, SharedSettingsStore } from '../types.js';
import { databaseAddress, type PostgresDatabase, type Queryable } from './postgresDatabase.js';

/** The channel a save is announced on; the payload is the new version. */
const CHANNEL = 'vop_settings';

/** Waits between attempts to listen again after the listening connection failed, in ms (the last repeats). */
const RELISTEN_DELAYS_MS = [250, 1_000, 5_000];

interface Row {
  settings: Record<string, unknown>;
  version: number;
  updated_at: number;
}

function toDocument(row: Row | undefined): SharedSettingsDocument {
  // The row is made by the migration; absent only if someone deleted it by hand.
  if (!row) return { settings: {}, version: 0, updatedAt: 0 };
  const settings = row.settings && typeof row.settings === 'object' && !Array.isArray(row.settings) ? row.settings : {};
  return { settings, version: Number(row.version), updatedAt: Number(row.updated_at) };
}

export class PostgresSharedSettings implements SharedSettingsStore {
  readonly where: string;

  /**
   * @param db the stores' pool (reads and saves)
   * @param url the database's address, for the listening connection {@link watch} opens apart
   *   from the pool (a LISTEN holds its connection for as long as it listens)
   */
  constructor(
    private readonly db: Pick<PostgresDatabase, 'query' | 'transaction'>,
    private readonly url: string,
  ) {
    this.where = `PostgreSQL at ${databaseAddress(url)}, table console_settings`;
  }

  async read(): Promise<SharedSettingsDocument> {
    return readRow(this.db);
  }

  async update(change: (current: Record<string, unknown>) => Record<string, unknown>, now: number): Promise<SharedSettingsDocument> {
    return this.db.transaction(async (tx) => {
      const before = await readRow(tx, true);
      const settings = change(before.settings);
      const { rows } = await tx.query<Row>(
        `INSERT INTO console_settings (id, settings, version, updated_at) VALUES (1, $1, 1, $2)
         ON CONFLICT (id) DO UPDATE SET settings = EXCLUDED.settings, version = console_settings.version + 1, updated_at = EXCLUDED.updated_at
         RETURNING settings, version, updated_at`,
        [JSON.stringify(settings), now],
      );
      const doc = toDocument(rows[0]);
      await tx.query('SELECT pg_notify($1, $2)', [CHANNEL, String(doc.version)]);
      return doc;
    });
  }

  async importOnce(settings: Record<string, unknown>, now: number): Promise<boolean> {
    // Two nodes starting at once with a file each: the first UPDATE takes version 0 → 1, the
    // other's then matches no row.
    const { rows } = await this.db.query<{ version: number }>(
      `UPDATE console_settings SET settings = $1, version = 1, updated_at = $2 WHERE id = 1 AND version = 0 RETURNING version`,
      [JSON.stringify(settings), now],
    );
    if (rows.length === 0) return false;
    await this.db.query('SELECT pg_notify($1, $2)', [CHANNEL, '1']);
    return true;
  }

  watch(onDocument: (doc: SharedSettingsDocument) => void, log: (line: string) => void): () => Promise<void> {
    let closed = false;
    let listener: pg.Client | undefined;
    let failures = 0;
    // One read at a time, in order: a burst of saves gives the last version last.
    let reading: Promise<void> = Promise.resolve();
    const deliver = () => {
      reading = reading.then(async () => {
        if (closed) return;
        try {
          const doc = await this.read();
          if (!closed) onDocument(doc);
        } catch (err) {
          log(`Shared settings: reading them failed: ${(err as Error).message}`);
        }
      });
    };
    const listen = async (): Promise<void> => {
      const client = new pg.Client({ connectionString: this.url, keepAlive: true });
      client.on('notification', (n) => {
        if (n.channel === CHANNEL) deliver();
      });
      client.on('error', (err) => {
        if (listener !== client) return;
        listener = undefined;
        void client.end().catch(() => undefined);
        if (closed) return;
        log(`Shared settings: the connection listening for saves failed (${err.message}); listening again.`);
        void relisten();
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${CHANNEL}`);
      } catch (err) {
        await client.end().catch(() => undefined);
        throw err;
      }
      if (closed) {
        await client.end().catch(() => undefined);
        return;
      }
      listener = client;
      failures = 0;
      // Whatever was saved before this connection listened (at start, or while it was down).
      deliver();
    };
    const relisten = async (): Promise<void> => {
      while (!closed && !listener) {
        const delay = RELISTEN_DELAYS_MS[Math.min(failures++, RELISTEN_DELAYS_MS.length - 1)];
        await new Promise((r) => setTimeout(r, delay).unref());
        if (closed) return;
        await listen().catch((err: unknown) => log(`Shared settings: listening again failed (${(err as Error).message}); trying again.`));
      }
    };
    void listen().catch((err: unknown) => {
      if (closed) return;
      log(`Shared settings: listening for saves failed (${(err as Error).message}); trying again.`);
      void relisten();
    });
    return async () => {
      closed = true;
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => undefined);
      await reading;
    };
  }
}

async function readRow(db: Queryable, forUpdate = false): Promise<SharedSettingsDocument> {
  const { rows } = await db.query<Row>(`SELECT settings, version, updated_at FROM console_settings WHERE id = 1${forUpdate ? ' FOR UPDATE' : ''}`);
  return toDocument(rows[0]);
}
