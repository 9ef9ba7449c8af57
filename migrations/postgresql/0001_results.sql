-- 0001_results (PostgreSQL): the result cache, as migrations/0001_results.sql for SQLite. One row
-- per config hash; written once, whole; hit_count and last_hit_at are the only columns that
-- change afterwards. Timestamps are ISO 8601 UTC text, as the SQLite store keeps them.
CREATE TABLE results (
    hash              TEXT PRIMARY KEY,
    endpoint          TEXT NOT NULL,
    estimator_version TEXT NOT NULL,
    request           TEXT NOT NULL,
    response          TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    hit_count         BIGINT NOT NULL DEFAULT 0,
    last_hit_at       TEXT
);

CREATE INDEX results_by_endpoint ON results (endpoint, created_at);
