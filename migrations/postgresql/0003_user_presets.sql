-- 0003_user_presets (PostgreSQL): presets stored through PUT /v1/presets/<kind>/<name>, as
-- migrations/0004_user_presets.sql for SQLite (the dialects number their files apart). Every
-- replica on this database shares them. `body` is the normalized object (canonical JSON).
CREATE TABLE user_presets (
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (kind, name)
);
