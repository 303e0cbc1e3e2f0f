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
];
