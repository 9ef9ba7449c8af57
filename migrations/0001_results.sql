-- 0001_results: the result cache. One row per config hash (endpoint + estimator version +
-- normalized request). The row is written once, whole, inside one statement; hit_count and
-- last_hit_at are the only columns that change afterwards.
CREATE TABLE results (
    hash              TEXT PRIMARY KEY,
    endpoint          TEXT NOT NULL,
    estimator_version TEXT NOT NULL,
    request           TEXT NOT NULL,   -- normalized request, canonical JSON
    response          TEXT NOT NULL,   -- response body as served
    created_at        TEXT NOT NULL,   -- ISO 8601 UTC
    hit_count         INTEGER NOT NULL DEFAULT 0,
    last_hit_at       TEXT
) STRICT;

CREATE INDEX results_by_endpoint ON results (endpoint, created_at);
