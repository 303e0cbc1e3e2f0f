/**
 * Schema migrations, applied in order on open: entry N brings `PRAGMA user_version` from N to N+1.
 * Never edit an entry that has shipped; append a new one. Media never goes in the database.
 */
export const MIGRATIONS: ReadonlyArray<ReadonlyArray<string>> = [
  // 1: applications and videos
  [
    `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    `CREATE TABLE apps (
       app_id TEXT PRIMARY KEY,
       name TEXT NOT NULL,
       secret TEXT NOT NULL,
       callback_url TEXT NOT NULL DEFAULT '',
       disabled INTEGER NOT NULL DEFAULT 0,
       created_at INTEGER NOT NULL,
       updated_at INTEGER NOT NULL
     )`,
    // An application may list the videos of the applications it was granted (spec 4.3 aId).
    `CREATE TABLE app_grants (
       app_id TEXT NOT NULL REFERENCES apps(app_id),
       target_app_id TEXT NOT NULL REFERENCES apps(app_id),
       PRIMARY KEY (app_id, target_app_id)
     )`,
    `CREATE TABLE videos (
       id TEXT PRIMARY KEY,
       app_id TEXT NOT NULL REFERENCES apps(app_id),
       title TEXT NOT NULL,
       description TEXT NOT NULL DEFAULT '',
       tags TEXT NOT NULL DEFAULT '',
       actors TEXT NOT NULL DEFAULT '',
       create_user TEXT NOT NULL DEFAULT '',
       status INTEGER NOT NULL,
       status_reason TEXT NOT NULL DEFAULT '',
       source_type INTEGER NOT NULL,
       source_url TEXT NOT NULL DEFAULT '',
       duration INTEGER NOT NULL DEFAULT 0,
       cover_file TEXT NOT NULL DEFAULT '',
       created_at INTEGER NOT NULL,
       updated_at INTEGER NOT NULL
     )`,
    // Lists are newest first (CreateDate, then Id): these indexes serve both list calls.
    `CREATE INDEX videos_by_app ON videos (app_id, created_at DESC, id DESC)`,
    `CREATE INDEX videos_by_app_user ON videos (app_id, create_user, created_at DESC, id DESC)`,
  ],
  // 2: the job queue, the status history, renditions
  [
    // Jobs are data: a type, a JSON payload, a state. See server/jobs/jobQueue.ts.
    `CREATE TABLE jobs (
       id TEXT PRIMARY KEY,
       type TEXT NOT NULL,
       video_id TEXT NOT NULL DEFAULT '',
       payload TEXT NOT NULL DEFAULT '{}',
       state TEXT NOT NULL,
       priority INTEGER NOT NULL DEFAULT 0,
       seq INTEGER NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       max_attempts INTEGER NOT NULL DEFAULT 1,
       run_after INTEGER NOT NULL DEFAULT 0,
       progress REAL NOT NULL DEFAULT 0,
       error TEXT NOT NULL DEFAULT '',
       created_at INTEGER NOT NULL,
       started_at INTEGER,
       finished_at INTEGER,
       updated_at INTEGER NOT NULL
     )`,
    `CREATE INDEX jobs_by_state ON jobs (state, type, priority DESC, seq)`,
    `CREATE INDEX jobs_by_video ON jobs (video_id)`,
    `CREATE TABLE video_status_history (
       video_id TEXT NOT NULL,
       at INTEGER NOT NULL,
       from_status INTEGER,
       to_status INTEGER NOT NULL,
       reason TEXT NOT NULL DEFAULT ''
     )`,
    `CREATE INDEX video_status_history_by_video ON video_status_history (video_id, at)`,
    // One row per playable file of a video (spec 2.5 VideoPlayFile); file is relative to the media root.
    `CREATE TABLE renditions (
       video_id TEXT NOT NULL,
       label TEXT NOT NULL,
       width INTEGER NOT NULL,
       height INTEGER NOT NULL,
       bitrate_kbps INTEGER NOT NULL,
       file TEXT NOT NULL,
       bytes INTEGER NOT NULL DEFAULT 0,
       PRIMARY KEY (video_id, label)
     )`,
    // Ingest: where the stored source file is, and the widget's needHandleSepcial choice.
    `ALTER TABLE videos ADD COLUMN source_file TEXT NOT NULL DEFAULT ''`,
    `ALTER TABLE videos ADD COLUMN keep_source INTEGER NOT NULL DEFAULT 0`,
  ],
  // 3: status callbacks (server/callbacks): one delivery per end-state change of a video, and the
  // log of its HTTP attempts.
  [
    `CREATE TABLE callback_deliveries (
       id TEXT PRIMARY KEY,
       seq INTEGER NOT NULL UNIQUE,
       app_id TEXT NOT NULL,
       kind TEXT NOT NULL,
       video_id TEXT NOT NULL,
       video_status INTEGER NOT NULL,
       status_at INTEGER,
       state TEXT NOT NULL,
       series INTEGER NOT NULL DEFAULT 1,
       series_attempts INTEGER NOT NULL DEFAULT 0,
       first_attempt_at INTEGER,
       next_attempt_at INTEGER,
       delivered_at INTEGER,
       last_error TEXT NOT NULL DEFAULT '',
       created_at INTEGER NOT NULL,
       updated_at INTEGER NOT NULL
     )`,
    // One status delivery per status change (its video_status_history row): the listener and the
    // start-up reconciliation cannot both create one.
    `CREATE UNIQUE INDEX callback_deliveries_by_change ON callback_deliveries (video_id, status_at, video_status) WHERE kind = 'status'`,
    `CREATE INDEX callback_deliveries_by_app ON callback_deliveries (app_id, seq)`,
    `CREATE INDEX callback_deliveries_by_state ON callback_deliveries (state)`,
    `CREATE TABLE callback_attempts (
       delivery_id TEXT NOT NULL,
       series INTEGER NOT NULL,
       attempt INTEGER NOT NULL,
       at INTEGER NOT NULL,
       url TEXT NOT NULL,
       http_status INTEGER,
       error TEXT NOT NULL DEFAULT '',
       latency_ms INTEGER NOT NULL,
       response_excerpt TEXT NOT NULL DEFAULT '',
       ok INTEGER NOT NULL,
       PRIMARY KEY (delivery_id, series, attempt)
     )`,
    // End states reached before this table existed count as handled: the start-up reconciliation
    // must not call back a database's whole history. (Migrations are not replayed from the
    // journal, so randomblob is safe here.)
    `INSERT OR IGNORE INTO callback_deliveries (id, seq, app_id, kind, video_id, video_status, status_at, state, last_error, created_at, updated_at)
     SELECT lower(hex(randomblob(16))), h.rowid, v.app_id, 'status', h.video_id, h.to_status, h.at, 'skipped',
            'reached before status callbacks existed', h.at, h.at
     FROM video_status_history h JOIN videos v ON v.id = h.video_id
     WHERE h.to_status IN (1, 4, 7)`,
  ],
  // 4: videos_by_app in ascending order. Lists read it backwards just as well (newest first), and
  // new videos, the newest, now go at its end, where SQLite fills pages whole: at its start, where
  // they went before, every page split left two pages half empty. For 100,000 videos that was 15
  // MB instead of 7.4, and the database lives in memory, twice over while a snapshot is written.
  // An existing database keeps the freed pages and reuses them as it grows (VACUUM would need a
  // second copy of it in memory, and seconds).
  [`DROP INDEX videos_by_app`, `CREATE INDEX videos_by_app ON videos (app_id, created_at, id)`],
  // 5: an application's API caller networks (issue 12 item 1; auth/apiNetworks.ts): CIDRs,
  // comma-separated; '' (every existing application) for any address, as before.
  [`ALTER TABLE apps ADD COLUMN api_networks TEXT NOT NULL DEFAULT ''`],
  // 6: the application a job works for (issue 12, items 6 and 8: slots shared fairly between
  // applications; storage/fairQueue.ts). Jobs carry their video's; existing ones take it now.
  // claim_seq stamps each claim, so an application's highest is when it was last served. The
  // indexes serve the claim and the queue's list: the latest stamp, an application's latest, and
  // each application's queue in its order (priority, then seq).
  [
    `ALTER TABLE jobs ADD COLUMN app_id TEXT NOT NULL DEFAULT ''`,
    `UPDATE jobs SET app_id = COALESCE((SELECT v.app_id FROM videos v WHERE v.id = jobs.video_id), '') WHERE video_id <> ''`,
    `ALTER TABLE jobs ADD COLUMN claim_seq INTEGER NOT NULL DEFAULT 0`,
    `CREATE INDEX jobs_by_claim ON jobs (claim_seq)`,
    `CREATE INDEX jobs_served ON jobs (type, app_id, claim_seq)`,
    `CREATE INDEX jobs_queue_by_app ON jobs (state, type, app_id, priority DESC, seq)`,
  ],
  // 7: videos by status, oldest first: the sweep of registrations never uploaded (status 8) and
  // the console's count of them read it (issue 13, item 4; console/registrationExpiry.ts).
  [`CREATE INDEX videos_by_status_age ON videos (status, created_at, id)`],
  // 8: who holds a running job in cluster mode (JobRecord.lease; jobs/turnQueue.ts). Always '' in
  // the embedded mode; the column is here so that both engines keep one schema and one contract.
  [`ALTER TABLE jobs ADD COLUMN lease TEXT NOT NULL DEFAULT ''`],
  // 9: the status callback's outbox (storage/outbox.ts): the id of the job that makes a pending
  // delivery's next attempt, '' while none holds it. A job runs an attempt only if it holds it, so
  // two nodes queueing the same attempt send it once, and any node can queue what a crash left
  // without a job. Existing pending deliveries start with none: the first sweep queues them again
  // and, with an old job still queued, whichever takes the claim first sends.
  [`ALTER TABLE callback_deliveries ADD COLUMN attempt_job TEXT NOT NULL DEFAULT ''`],
  // 10: where the rest of a video's ladder stands once its first rendition made it playable
  // (VideoRecord.ladder; processing/ladderJob.ts): '' for every video before, whose ladder is
  // whole; and the applications that want every rung before status 1 (AppRecord.wholeLadderFirst)
  [`ALTER TABLE videos ADD COLUMN ladder TEXT NOT NULL DEFAULT ''`, `ALTER TABLE apps ADD COLUMN whole_ladder_first INTEGER NOT NULL DEFAULT 0`],
  // 11: who may fetch an application's media (AppRecord.mediaAccess, mediaTtlSeconds), and the
  // keys that sign media addresses and upload credentials (SigningKeyStore; keys/keyRing.ts)
  [
    `ALTER TABLE apps ADD COLUMN media_access TEXT NOT NULL DEFAULT 'public'`,
    `ALTER TABLE apps ADD COLUMN media_ttl_seconds INTEGER NOT NULL DEFAULT 3600`,
    `CREATE TABLE signing_keys (
       purpose TEXT NOT NULL,
       id TEXT NOT NULL,
       secret TEXT NOT NULL,
       created_at INTEGER NOT NULL,
       expires_at INTEGER,
       PRIMARY KEY (purpose, id)
     )`,
  ],
  // 12: the console's sessions (ConsoleSessionStore; console/consoleSessions.ts), so that a
  // restart keeps the console logged in: the SHA-256 of each session's id, never the id.
  [`CREATE TABLE console_sessions (id_hash TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)`, `CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at)`],
  // 13: a video's text tracks (TextTrackRecord; processing/textTracks.ts): its captions, from the
  // source's subtitle streams or added by its application, and its chapters. The files are
  // `text/<video_id>/<id>.vtt` in the media store.
  [
    `CREATE TABLE text_tracks (
       video_id TEXT NOT NULL,
       id TEXT NOT NULL,
       kind TEXT NOT NULL,
       origin TEXT NOT NULL,
       language TEXT NOT NULL DEFAULT '',
       label TEXT NOT NULL DEFAULT '',
       forced INTEGER NOT NULL DEFAULT 0,
       bytes INTEGER NOT NULL DEFAULT 0,
       created_at INTEGER NOT NULL,
       PRIMARY KEY (video_id, id)
     )`,
  ],
  // 14: views and watch time per video and day (ViewCountStore; services/viewCounter.ts); the
  // index serves the overview's sums per day
  [
    `CREATE TABLE video_views (
       video_id TEXT NOT NULL,
       day TEXT NOT NULL,
       views INTEGER NOT NULL DEFAULT 0,
       watch_seconds INTEGER NOT NULL DEFAULT 0,
       PRIMARY KEY (video_id, day)
     )`,
    `CREATE INDEX video_views_by_day ON video_views (day)`,
  ],
];
