/**
 * The PostgreSQL schema, as migrations applied in order: entry N brings the schema from version N
 * to N+1 (the version is kept in `vop_schema`). Never edit an entry that has shipped; append one.
 * The tables mirror the sql.js ones (../migrations.ts) with PostgreSQL's types: times in Unix ms
 * are BIGINT, flags BOOLEAN, and the sequences of job and delivery order come from the database,
 * so that nodes sharing it never hand out the same number.
 *
 * Keys that lists are ordered by are `COLLATE "C"`: byte order, the order SQLite uses, whatever
 * locale the database was created with.
 */
export const PG_MIGRATIONS: ReadonlyArray<ReadonlyArray<string>> = [
  // 1: everything the sql.js schema had at its version 4
  [
    `CREATE TABLE apps (
       app_id TEXT COLLATE "C" PRIMARY KEY,
       name TEXT NOT NULL,
       secret TEXT NOT NULL,
       callback_url TEXT NOT NULL DEFAULT '',
       disabled BOOLEAN NOT NULL DEFAULT FALSE,
       created_at BIGINT NOT NULL,
       updated_at BIGINT NOT NULL
     )`,
    `CREATE TABLE app_grants (
       app_id TEXT COLLATE "C" NOT NULL REFERENCES apps(app_id),
       target_app_id TEXT COLLATE "C" NOT NULL REFERENCES apps(app_id),
       PRIMARY KEY (app_id, target_app_id)
     )`,
    `CREATE TABLE videos (
       id TEXT COLLATE "C" PRIMARY KEY,
       app_id TEXT COLLATE "C" NOT NULL REFERENCES apps(app_id),
       title TEXT NOT NULL,
       description TEXT NOT NULL DEFAULT '',
       tags TEXT NOT NULL DEFAULT '',
       actors TEXT NOT NULL DEFAULT '',
       create_user TEXT COLLATE "C" NOT NULL DEFAULT '',
       status INTEGER NOT NULL,
       status_reason TEXT NOT NULL DEFAULT '',
       source_type INTEGER NOT NULL,
       source_url TEXT NOT NULL DEFAULT '',
       duration INTEGER NOT NULL DEFAULT 0,
       cover_file TEXT NOT NULL DEFAULT '',
       source_file TEXT NOT NULL DEFAULT '',
       keep_source BOOLEAN NOT NULL DEFAULT FALSE,
       created_at BIGINT NOT NULL,
       updated_at BIGINT NOT NULL
     )`,
    // Lists are newest first (CreateDate, then Id): these indexes serve both list calls.
    `CREATE INDEX videos_by_app ON videos (app_id, created_at, id)`,
    `CREATE INDEX videos_by_app_user ON videos (app_id, create_user, created_at, id)`,
    `CREATE INDEX videos_by_status ON videos (status)`,
    // id orders changes made in the same millisecond (SQLite's rowid does in the sql.js table).
    `CREATE TABLE video_status_history (
       id BIGSERIAL PRIMARY KEY,
       video_id TEXT COLLATE "C" NOT NULL,
       at BIGINT NOT NULL,
       from_status INTEGER,
       to_status INTEGER NOT NULL,
       reason TEXT NOT NULL DEFAULT ''
     )`,
    `CREATE INDEX video_status_history_by_video ON video_status_history (video_id, at)`,
    `CREATE TABLE renditions (
       video_id TEXT COLLATE "C" NOT NULL,
       label TEXT COLLATE "C" NOT NULL,
       width INTEGER NOT NULL,
       height INTEGER NOT NULL,
       bitrate_kbps INTEGER NOT NULL,
       file TEXT NOT NULL,
       bytes BIGINT NOT NULL DEFAULT 0,
       PRIMARY KEY (video_id, label)
     )`,
    // Jobs are data: a type, a JSON payload (as text, read back exactly), a state.
    `CREATE TABLE jobs (
       id TEXT COLLATE "C" PRIMARY KEY,
       type TEXT COLLATE "C" NOT NULL,
       video_id TEXT COLLATE "C" NOT NULL DEFAULT '',
       payload TEXT NOT NULL DEFAULT '{}',
       state TEXT NOT NULL,
       priority INTEGER NOT NULL DEFAULT 0,
       seq BIGSERIAL NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       max_attempts INTEGER NOT NULL DEFAULT 1,
       run_after BIGINT NOT NULL DEFAULT 0,
       progress DOUBLE PRECISION NOT NULL DEFAULT 0,
       error TEXT NOT NULL DEFAULT '',
       created_at BIGINT NOT NULL,
       started_at BIGINT,
       finished_at BIGINT,
       updated_at BIGINT NOT NULL
     )`,
    `CREATE INDEX jobs_by_state ON jobs (state, type, priority DESC, seq)`,
    `CREATE INDEX jobs_by_video ON jobs (video_id)`,
    `CREATE TABLE callback_deliveries (
       id TEXT COLLATE "C" PRIMARY KEY,
       seq BIGSERIAL NOT NULL UNIQUE,
       app_id TEXT COLLATE "C" NOT NULL,
       kind TEXT NOT NULL,
       video_id TEXT COLLATE "C" NOT NULL,
       video_status INTEGER NOT NULL,
       status_at BIGINT,
       state TEXT NOT NULL,
       series INTEGER NOT NULL DEFAULT 1,
       series_attempts INTEGER NOT NULL DEFAULT 0,
       first_attempt_at BIGINT,
       next_attempt_at BIGINT,
       delivered_at BIGINT,
       last_error TEXT NOT NULL DEFAULT '',
       created_at BIGINT NOT NULL,
       updated_at BIGINT NOT NULL
     )`,
    // One status delivery per status change: the listener and the start-up reconciliation of
    // every node cannot both create one.
    `CREATE UNIQUE INDEX callback_deliveries_by_change ON callback_deliveries (video_id, status_at, video_status) WHERE kind = 'status'`,
    `CREATE INDEX callback_deliveries_by_app ON callback_deliveries (app_id, seq)`,
    `CREATE INDEX callback_deliveries_by_state ON callback_deliveries (state)`,
    `CREATE TABLE callback_attempts (
       delivery_id TEXT COLLATE "C" NOT NULL,
       series INTEGER NOT NULL,
       attempt INTEGER NOT NULL,
       at BIGINT NOT NULL,
       url TEXT NOT NULL,
       http_status INTEGER,
       error TEXT NOT NULL DEFAULT '',
       latency_ms INTEGER NOT NULL,
       response_excerpt TEXT NOT NULL DEFAULT '',
       ok BOOLEAN NOT NULL,
       PRIMARY KEY (delivery_id, series, attempt)
     )`,
  ],
  // 2: an application's API caller networks (issue 12 item 1), as the sql.js schema's version 5
  [`ALTER TABLE apps ADD COLUMN api_networks TEXT NOT NULL DEFAULT ''`],
  // 3: the application a job works for (issue 12, items 6 and 8), as the sql.js schema's version 6
  [
    `ALTER TABLE jobs ADD COLUMN app_id TEXT COLLATE "C" NOT NULL DEFAULT ''`,
    `UPDATE jobs j SET app_id = v.app_id FROM videos v WHERE v.id = j.video_id`,
    `ALTER TABLE jobs ADD COLUMN claim_seq BIGINT NOT NULL DEFAULT 0`,
    `CREATE INDEX jobs_by_claim ON jobs (claim_seq)`,
    `CREATE INDEX jobs_served ON jobs (type, app_id, claim_seq)`,
    `CREATE INDEX jobs_queue_by_app ON jobs (state, type, app_id, priority DESC, seq)`,
  ],
  // 4: videos by status, oldest first (issue 13, item 4), as the sql.js schema's version 7
  [`CREATE INDEX videos_by_status_age ON videos (status, created_at, id)`],
  // 5: counts in fixed windows that every node sees (postgresCounters.ts); the embedded mode
  // counts in memory and has no such table
  [
    `CREATE TABLE rate_windows (
       key TEXT COLLATE "C" NOT NULL,
       window_start BIGINT NOT NULL,
       n INTEGER NOT NULL,
       PRIMARY KEY (key, window_start)
     )`,
  ],
  // 6: who holds a running job (JobRecord.lease; jobs/turnQueue.ts), as the sql.js schema's version 8
  [`ALTER TABLE jobs ADD COLUMN lease TEXT COLLATE "C" NOT NULL DEFAULT ''`],
  // 7: the console's login sessions, which every node must see (postgresConsoleSessions.ts): the
  // SHA-256 of a session's id, never the id, and its expiry; the embedded mode keeps its sessions
  // in memory and has no such table
  [
    `CREATE TABLE console_sessions (
       id_hash TEXT COLLATE "C" PRIMARY KEY,
       expires_at BIGINT NOT NULL
     )`,
    `CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at)`,
  ],
  // 8: the settings saved from the console, which every node must follow
  // (postgresSharedSettings.ts): one row, one JSON document (JSON, not JSONB, so it reads back as
  // written) and its version, 0 until the first save; the embedded mode keeps them in
  // <dataDir>/settings.json and has no such table
  [
    `CREATE TABLE console_settings (
       id SMALLINT PRIMARY KEY CHECK (id = 1),
       settings JSON NOT NULL,
       version BIGINT NOT NULL,
       updated_at BIGINT NOT NULL
     )`,
    `INSERT INTO console_settings (id, settings, version, updated_at) VALUES (1, '{}', 0, 0)`,
  ],
  // 9: the status callback's outbox (storage/outbox.ts), as the
  // sql.js schema's version 9: the id of the job that makes a pending delivery's next attempt
  [`ALTER TABLE callback_deliveries ADD COLUMN attempt_job TEXT COLLATE "C" NOT NULL DEFAULT ''`],
  // 10: the uploads under way and the disk space promised to them, which every node must count
  // (postgresUploadReservations.ts, issue 12 item 7): the disk a reservation counts against, its
  // declared and written bytes, its expiry (a tus upload's, or the lease its node renews) and that
  // node; the embedded mode keeps them in memory (memory/memoryUploadReservations.ts) and has no such table
  [
    `CREATE TABLE upload_reservations (
       key TEXT COLLATE "C" PRIMARY KEY,
       kind TEXT NOT NULL,
       video_id TEXT COLLATE "C" NOT NULL,
       disk TEXT COLLATE "C" NOT NULL,
       size BIGINT NOT NULL,
       written BIGINT NOT NULL DEFAULT 0,
       expires_at BIGINT,
       owner TEXT NOT NULL DEFAULT '',
       node TEXT NOT NULL DEFAULT '',
       created_at BIGINT NOT NULL
     )`,
    `CREATE INDEX upload_reservations_by_video ON upload_reservations (video_id)`,
    `CREATE INDEX upload_reservations_by_disk ON upload_reservations (disk)`,
  ],
  // 11: the addresses applications' API calls came from lately, which the console suggests as
  // API networks (postgresApiCallers.ts): every node's callers, not only the node's own; the
  // embedded mode keeps them in memory (auth/apiNetworks.ts) and has no such table
  [
    `CREATE TABLE api_callers (
       app_id TEXT COLLATE "C" NOT NULL,
       address TEXT COLLATE "C" NOT NULL,
       last_seen BIGINT NOT NULL,
       allowed BOOLEAN NOT NULL,
       PRIMARY KEY (app_id, address)
     )`,
  ],
  // 12: where the rest of a video's ladder stands (VideoRecord.ladder) and the applications that
  // want every rung before status 1 (AppRecord.wholeLadderFirst), as the sql.js schema's version 10
  [`ALTER TABLE videos ADD COLUMN ladder TEXT NOT NULL DEFAULT ''`, `ALTER TABLE apps ADD COLUMN whole_ladder_first BOOLEAN NOT NULL DEFAULT FALSE`],
  // 13: whose an upload reservation is (its application, its client's address), which one
  // application's or one address's share of the disk counts, and when it goes idle (its bytes
  // count no longer until it is reserved again); rows made before count under no one, never idle
  [
    `ALTER TABLE upload_reservations ADD COLUMN app_id TEXT COLLATE "C" NOT NULL DEFAULT ''`,
    `ALTER TABLE upload_reservations ADD COLUMN client TEXT COLLATE "C" NOT NULL DEFAULT ''`,
    `ALTER TABLE upload_reservations ADD COLUMN idle_until BIGINT`,
  ],
  // 14: who may fetch an application's media and the signing keys, as the sql.js schema's version 11
  [
    `ALTER TABLE apps ADD COLUMN media_access TEXT NOT NULL DEFAULT 'public'`,
    `ALTER TABLE apps ADD COLUMN media_ttl_seconds INTEGER NOT NULL DEFAULT 3600`,
    `CREATE TABLE signing_keys (
       purpose TEXT COLLATE "C" NOT NULL,
       id TEXT COLLATE "C" NOT NULL,
       secret TEXT NOT NULL,
       created_at BIGINT NOT NULL,
       expires_at BIGINT,
       PRIMARY KEY (purpose, id)
     )`,
  ],
  // 15: counts of videos kept as they change, not counted on each read (videoCounts.ts): per
  // application and status, and per application and uploader, each spread over a few slots
  // (the writing session's, so that writers of one application do not queue on one row); a
  // trigger keeps them in the same transaction as every insert, update and delete of a video.
  // `changes` only grows: its sum per application moves with every write of one of its videos,
  // which tells a node that a list page it kept is still the page. The trigger comes before the
  // backfill: it locks out writers until the counts are whole.
  [
    `CREATE TABLE video_counts (
       app_id TEXT COLLATE "C" NOT NULL,
       status INTEGER NOT NULL,
       slot SMALLINT NOT NULL,
       n BIGINT NOT NULL,
       changes BIGINT NOT NULL,
       PRIMARY KEY (app_id, status, slot)
     )`,
    `CREATE TABLE video_user_counts (
       app_id TEXT COLLATE "C" NOT NULL,
       create_user TEXT COLLATE "C" NOT NULL,
       slot SMALLINT NOT NULL,
       n BIGINT NOT NULL,
       PRIMARY KEY (app_id, create_user, slot)
     )`,
    `CREATE FUNCTION video_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
     DECLARE
       s SMALLINT := pg_backend_pid() % 8;
     BEGIN
       IF TG_OP = 'UPDATE' AND OLD.app_id = NEW.app_id AND OLD.status = NEW.status THEN
         INSERT INTO video_counts AS c (app_id, status, slot, n, changes) VALUES (NEW.app_id, NEW.status, s, 0, 1)
           ON CONFLICT (app_id, status, slot) DO UPDATE SET changes = c.changes + 1;
       ELSE
         IF TG_OP <> 'INSERT' THEN
           INSERT INTO video_counts AS c (app_id, status, slot, n, changes) VALUES (OLD.app_id, OLD.status, s, -1, 1)
             ON CONFLICT (app_id, status, slot) DO UPDATE SET n = c.n - 1, changes = c.changes + 1;
         END IF;
         IF TG_OP <> 'DELETE' THEN
           INSERT INTO video_counts AS c (app_id, status, slot, n, changes) VALUES (NEW.app_id, NEW.status, s, 1, 1)
             ON CONFLICT (app_id, status, slot) DO UPDATE SET n = c.n + 1, changes = c.changes + 1;
         END IF;
       END IF;
       IF TG_OP = 'UPDATE' AND OLD.app_id = NEW.app_id AND OLD.create_user = NEW.create_user THEN
         RETURN NULL;
       END IF;
       IF TG_OP <> 'INSERT' THEN
         INSERT INTO video_user_counts AS c (app_id, create_user, slot, n) VALUES (OLD.app_id, OLD.create_user, s, -1)
           ON CONFLICT (app_id, create_user, slot) DO UPDATE SET n = c.n - 1;
       END IF;
       IF TG_OP <> 'DELETE' THEN
         INSERT INTO video_user_counts AS c (app_id, create_user, slot, n) VALUES (NEW.app_id, NEW.create_user, s, 1)
           ON CONFLICT (app_id, create_user, slot) DO UPDATE SET n = c.n + 1;
       END IF;
       RETURN NULL;
     END
     $$`,
    `CREATE TRIGGER videos_counted AFTER INSERT OR UPDATE OR DELETE ON videos FOR EACH ROW EXECUTE FUNCTION video_counts_follow()`,
    `INSERT INTO video_counts (app_id, status, slot, n, changes) SELECT app_id, status, 0, COUNT(*), COUNT(*) FROM videos GROUP BY app_id, status`,
    `INSERT INTO video_user_counts (app_id, create_user, slot, n) SELECT app_id, create_user, 0, COUNT(*) FROM videos GROUP BY app_id, create_user`,
  ],
  // a video's text tracks (captions and chapters), as the sql.js schema's version 13
  [
    `CREATE TABLE text_tracks (
       video_id TEXT COLLATE "C" NOT NULL,
       id TEXT COLLATE "C" NOT NULL,
       kind TEXT NOT NULL,
       origin TEXT NOT NULL,
       language TEXT NOT NULL DEFAULT '',
       label TEXT NOT NULL DEFAULT '',
       forced BOOLEAN NOT NULL DEFAULT FALSE,
       bytes BIGINT NOT NULL DEFAULT 0,
       created_at BIGINT NOT NULL,
       PRIMARY KEY (video_id, id)
     )`,
  ],
  // views and watch time per video and day, as the sql.js schema's version 14
  [
    `CREATE TABLE video_views (
       video_id TEXT COLLATE "C" NOT NULL,
       day TEXT COLLATE "C" NOT NULL,
       views BIGINT NOT NULL DEFAULT 0,
       watch_seconds BIGINT NOT NULL DEFAULT 0,
       PRIMARY KEY (video_id, day)
     )`,
    `CREATE INDEX video_views_by_day ON video_views (day)`,
  ],
];
