-- 0006_sweep_kinds: `kind` is no longer a CHECK-ed list. The scheduler refuses a kind it does
-- not know (codec/sweep_kind.h's table), so adding a kind is a row of that table and no
-- migration (PostgreSQL's sweeps never had the CHECK). SQLite cannot drop a CHECK constraint in
-- place: the sweeps table is rebuilt as in 0005, its points copied aside and back.
CREATE TABLE sweep_points_copy AS SELECT * FROM sweep_points;
DROP TABLE sweep_points;

CREATE TABLE sweeps_new (
    id          TEXT PRIMARY KEY,           -- config hash of the normalized spec
    kind        TEXT NOT NULL,              -- a row of the sweep-kind table (codec/sweep_kind.h)
    spec        TEXT NOT NULL,              -- normalized spec, canonical JSON
    status      TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    size        INTEGER NOT NULL,           -- grid points, executions the search tries, or plan candidates
    total       INTEGER NOT NULL DEFAULT 0, -- units of progress (set when started)
    done        INTEGER NOT NULL DEFAULT 0, -- units committed
    evaluations INTEGER NOT NULL DEFAULT 0, -- estimates made so far
    state       TEXT,                       -- a kind that keeps a state: its checkpoint, in its own format
    result      TEXT,                       -- final {"best", "counts"} (a plan adds "plan")
    error       TEXT,                       -- a failed sweep's error object (JSON)
    created_at  TEXT NOT NULL,
    started_at  TEXT,
    finished_at TEXT,
    sample      TEXT                        -- search: the sample of executions that fit (0003)
) STRICT;
INSERT INTO sweeps_new (id, kind, spec, status, size, total, done, evaluations, state, result,
                        error, created_at, started_at, finished_at, sample)
    SELECT id, kind, spec, status, size, total, done, evaluations, state, result, error,
           created_at, started_at, finished_at, sample FROM sweeps;
DROP TABLE sweeps;
ALTER TABLE sweeps_new RENAME TO sweeps;
CREATE INDEX sweeps_by_status ON sweeps (status, created_at);
CREATE INDEX sweeps_by_created ON sweeps (created_at);

CREATE TABLE sweep_points (
    sweep_id    TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,           -- point index in the grid's order (a plan's candidate)
    point_values TEXT NOT NULL,             -- {"<axis>": value, ...}
    status      INTEGER NOT NULL,           -- 200 estimated, 422 refused
    fits        INTEGER NOT NULL,           -- 1 when estimated and fits memory
    sample_rate REAL,                       -- when estimated
    response    TEXT NOT NULL,              -- estimate response, or the error (a plan: its candidate)
    PRIMARY KEY (sweep_id, idx)
) STRICT, WITHOUT ROWID;
INSERT INTO sweep_points (sweep_id, idx, point_values, status, fits, sample_rate, response)
    SELECT sweep_id, idx, point_values, status, fits, sample_rate, response FROM sweep_points_copy;
DROP TABLE sweep_points_copy;
CREATE INDEX sweep_points_best ON sweep_points (sweep_id, fits, sample_rate);
