import type { CustomTypesConfig, Pool, QueryResult, QueryResultRow } from 'pg';
import { backoffDelay, type RetryConfig } from '../../core/retry.js';
import { PG_MIGRATIONS } from './migrations.js';
import { assertNoUnfinishedPostgresRestore } from './restoreMark.js';

/** A query's parameters: what node-postgres sends (numbers, strings, booleans, null, arrays of them). */
/**
 * How long PostgreSQL lets a session of ours sit in an open transaction without a statement
 * before it ends that session. None of ours waits between its statements; a node that does was
 * paused (SIGSTOP, a frozen VM) or cut off mid-transaction, and its row and advisory locks would
 * otherwise hold every other node up until its connection dies, which for a paused process is
 * never. The session-level locks of the upload locker (advisoryLocker.ts) are outside transactions.
 */
export const IDLE_IN_TRANSACTION_MS = 10_000;

export type PgParam = string | number | boolean | null | string[] | number[];

/** What the stores need of a connection or of the pool: a query. */
export interface Queryable {
  /**
   * `name`: a hot statement's name, under which each connection prepares it once and then only
   * binds and runs it (PostgreSQL parses and plans it once per connection, not on every call).
   * The same name must always go with the same text.
   */
  query<R extends QueryResultRow>(sql: string, params?: PgParam[], name?: string): Promise<QueryResult<R>>;
}

/** Connections a node keeps open at most when nothing says otherwise (PostgresDatabaseOptions.maxConnections). */
export const DEFAULT_MAX_CONNECTIONS = 10;

/**
 * BIGINT (Unix ms, counts, sequences) read as numbers, not strings: every value vop stores fits
 * in 2^53. The other types keep node-postgres' parsers.
 */
function typeParsers(pg: typeof import('pg').default): CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: string) =>
      oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as CustomTypesConfig['getTypeParser'],
  };
}

/**
 * The key of the advisory lock migrations run under: whichever node comes first migrates, the
 * others wait and then find nothing left to do. (A fixed 64-bit number: "vop-migr" in ASCII.)
 */
const MIGRATION_LOCK_KEY = '8534954024722297458';

/** Options of {@link PostgresDatabase.open}. */
export interface PostgresDatabaseOptions {
  /** `postgres://user:password@host:port/database` (libpq's URI form; `?sslmode=…` and the like apply). */
  url: string;
  /** How long to keep trying while the database does not answer (nodes start in any order). */
  connectRetry: RetryConfig;
  /** Connections this process keeps open at most. */
  maxConnections?: number;
  /**
   * The restore itself opens the database it is restoring (to migrate it): only it may open one
   * that holds an unfinished restore (restoreMark.ts); every node refuses such a database.
   */
  restoring?: boolean;
  log: (line: string) => void;
}

/** A pool of connections to vop's PostgreSQL database, migrated on open. */
export class PostgresDatabase implements Queryable {
  private constructor(readonly pool: Pool) {}

  /**
   * Connects, waiting for the database with a log line per try and a bounded retry, then applies
   * the migrations not yet applied, under an advisory lock.
   */
  static async open(options: PostgresDatabaseOptions): Promise<PostgresDatabase> {
    // Loaded here, not at the top: the embedded default (and its bundle) never loads the client.
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({
      connectionString: options.url,
      types: typeParsers(pg),
      max: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      connectionTimeoutMillis: 10_000,
      options: `-c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`,
    });
    // An idle connection the server drops (a restart, a failover) must not crash the process.
    pool.on('error', (err) => options.log(`PostgreSQL: an idle connection failed: ${err.message}`));
    const db = new PostgresDatabase(pool);
    try {
      await waitForDatabase(pool, options);
      if (!options.restoring) await assertNoUnfinishedPostgresRestore(pool, databaseAddress(options.url));
      await db.migrate();
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
    return db;
  }

  query<R extends QueryResultRow>(sql: string, params: PgParam[] = [], name?: string): Promise<QueryResult<R>> {
    return name ? this.pool.query<R>({ name, text: sql, values: params }) : this.pool.query<R>(sql, params);
  }

  /** Runs `fn` in one transaction on one connection: all of its writes commit, or none. */
  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const out = await fn({ query: (sql, params = [], name) => (name ? client.query({ name, text: sql, values: params }) : client.query(sql, params)) });
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** Applies the migrations not applied yet; runs once across nodes, whichever comes first. */
  private async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      // Session-level lock: held across the migrations' own transactions, released below (or
      // when the connection ends, should this process die here).
      await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      try {
        await client.query('CREATE TABLE IF NOT EXISTS vop_schema (version INTEGER NOT NULL)');
        const { rows } = await client.query<{ version: number }>('SELECT version FROM vop_schema');
        let version = rows[0]?.version ?? 0;
        if (rows.length === 0) await client.query('INSERT INTO vop_schema (version) VALUES (0)');
        if (version > PG_MIGRATIONS.length) {
          throw new Error(`The database's schema is version ${version}, newer than this vop knows (${PG_MIGRATIONS.length}): run a newer vop.`);
        }
        for (; version < PG_MIGRATIONS.length; version++) {
          await client.query('BEGIN');
          try {
            for (const sql of PG_MIGRATIONS[version]!) await client.query(sql);
            await client.query('UPDATE vop_schema SET version = $1', [version + 1]);
            await client.query('COMMIT');
          } catch (err) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw err;
          }
        }
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      }
    } finally {
      client.release();
    }
  }
}

/** `host:port` of a database address, for log lines (never its password). */
export function databaseAddress(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || '5432'}`;
  } catch {
    return '(an address that is not a URL)';
  }
}

/** Errors that mean "not there yet": refused, unreachable, starting up, shutting down. */
function isNotReady(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e.code && ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'].includes(e.code)) return true;
  // 57P03: the database system is starting up (or shutting down); 3D000: no such database yet.
  if (e.code === '57P03' || e.code === '3D000') return true;
  return /timeout|terminated/i.test(e.message ?? '');
}

async function waitForDatabase(pool: Pool, options: PostgresDatabaseOptions): Promise<void> {
  const where = databaseAddress(options.url);
  for (let retry = 0; ; retry++) {
    try {
      const client = await pool.connect();
      client.release();
      if (retry > 0) options.log(`The database at ${where} answers.`);
      return;
    } catch (err) {
      if (!isNotReady(err) || retry >= options.connectRetry.maxRetries) {
        throw new Error(`Cannot reach the database at ${where}: ${(err as Error).message}`, { cause: err });
      }
      const delay = backoffDelay(options.connectRetry, retry + 1);
      options.log(`Waiting for the database at ${where} … (${(err as Error).message}; try ${retry + 2} of ${options.connectRetry.maxRetries + 1} in ${delay} ms)`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
