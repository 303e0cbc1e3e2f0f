/**
 * PostgreSQL's own time per API call, from pg_stat_statements: the cluster bench resets it before
 * each measured run and reads it after, so what a call costs the database stands beside what it
 * costs the node. The server must load the module (shared_preload_libraries, which the bench's
 * throwaway PostgreSQL is started with).
 */
import pg from 'pg';

/** One statement's share of the measured runs of a call. */
export interface StatementFigures {
  /** The statement as pg_stat_statements normalised it, on one line. */
  query: string;
  calls: number;
  totalMs: number;
}

/** The statements of one database over the runs read so far, summed by statement. */
export class StatementTally {
  private readonly byQuery = new Map<string, StatementFigures>();
  /** API responses of the runs read, to divide by. */
  responses = 0;

  add(statements: StatementFigures[], responses: number): void {
    this.responses += responses;
    for (const s of statements) {
      const seen = this.byQuery.get(s.query);
      if (seen) {
        seen.calls += s.calls;
        seen.totalMs += s.totalMs;
      } else this.byQuery.set(s.query, { ...s });
    }
  }

  /** Statements per API response and their execution time per response, in ms. */
  perResponse(): { statements: number; execMs: number } {
    const all = [...this.byQuery.values()];
    return { statements: sum(all.map((s) => s.calls)) / this.responses, execMs: sum(all.map((s) => s.totalMs)) / this.responses };
  }

  /** The `n` statements that took the most time, most first. */
  top(n: number): StatementFigures[] {
    return [...this.byQuery.values()].sort((a, b) => b.totalMs - a.totalMs).slice(0, n);
  }
}

/** Reads and resets the statistics of one database, through a connection to another (its own statements are not counted). */
export class StatementStats {
  private constructor(
    private readonly client: pg.Client,
    private readonly database: string,
  ) {}

  /** `adminUrl`: a database other than the measured one (the server's `postgres`). */
  static async open(adminUrl: string, measuredUrl: string, database: string): Promise<StatementStats> {
    // The view and its functions live in the database that created the extension.
    const setup = new pg.Client({ connectionString: measuredUrl });
    await setup.connect();
    try {
      await setup.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    } finally {
      await setup.end();
    }
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    return new StatementStats(client, database);
  }

  /** Forgets every statement counted so far (all databases: only the measured one is read). */
  async reset(): Promise<void> {
    await this.client.query('SELECT pg_stat_statements_reset()');
  }

  /** The measured database's statements since the last reset. */
  async read(): Promise<StatementFigures[]> {
    const { rows } = await this.client.query<{ query: string; calls: string; total_exec_time: number }>(
      `SELECT s.query, s.calls, s.total_exec_time FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1`,
      [this.database],
    );
    return rows.map((r) => ({ query: r.query.replace(/\s+/g, ' ').trim(), calls: Number(r.calls), totalMs: r.total_exec_time }));
  }

  async close(): Promise<void> {
    await this.client.end();
  }
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
