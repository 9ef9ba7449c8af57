-- 0002_sweeps: asynchronous sweeps and their points.
-- A sweep advances only by checkpoint transactions that write its finished units' points (grid)
-- or its merged best list (search) together with `done`, so after a crash `done` always counts
-- exactly the work that is stored, and the sweep resumes from there.
CREATE TABLE sweeps (
    id          TEXT PRIMARY KEY,           -- config hash of the normalized spec
    kind        TEXT NOT NULL CHECK (kind IN ('optimal_execution', 'grid')),
    spec        TEXT NOT NULL,              -- normalized spec, canonical JSON
    status      TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    size        INTEGER NOT NULL,           -- grid points, or executions the search tries
    total       INTEGER NOT NULL DEFAULT 0, -- units of progress (set when started)
    done        INTEGER NOT NULL DEFAULT 0, -- units committed
    evaluations INTEGER NOT NULL DEFAULT 0, -- estimates made so far
    state       TEXT,                       -- search: merged best list and counts so far
    result      TEXT,                       -- final {"best", "counts"}
    error       TEXT,
    created_at  TEXT NOT NULL,
    started_at  TEXT,
    finished_at TEXT
) STRICT;

CREATE INDEX sweeps_by_status ON sweeps (status, created_at);
CREATE INDEX sweeps_by_created ON sweeps (created_at);

CREATE TABLE sweep_points (
    sweep_id    TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,           -- point index in the grid's order
    point_values TEXT NOT NULL,             -- {"<axis>": value, ...}
    status      INTEGER NOT NULL,           -- 200 estimated, 422 refused
    fits        INTEGER NOT NULL,           -- 1 when estimated and fits memory
    sample_rate REAL,                       -- when estimated
    response    TEXT NOT NULL,              -- estimate response, or the error
    PRIMARY KEY (sweep_id, idx)
) STRICT, WITHOUT ROWID;

CREATE INDEX sweep_points_best ON sweep_points (sweep_id, fits, sample_rate);
