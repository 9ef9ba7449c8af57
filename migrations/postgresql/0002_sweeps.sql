-- 0002_sweeps (PostgreSQL): sweeps and their points, as migrations/0002_sweeps.sql and
-- 0003_sweep_sample.sql for SQLite, plus the lease that lets several replicas share them:
-- `owner` is the replica running the sweep and `lease_until` (the database's clock) when its
-- claim lapses unless renewed; another replica may claim a running sweep whose lease lapsed.
-- `kind` has no CHECK: the scheduler refuses kinds it does not know, so a new kind needs no
-- migration here.
CREATE TABLE sweeps (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    spec        TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    size        BIGINT NOT NULL,
    total       BIGINT NOT NULL DEFAULT 0,
    done        BIGINT NOT NULL DEFAULT 0,
    evaluations BIGINT NOT NULL DEFAULT 0,
    state       TEXT,
    sample      TEXT,
    result      TEXT,
    error       TEXT,
    created_at  TEXT NOT NULL,
    started_at  TEXT,
    finished_at TEXT,
    owner       TEXT,
    lease_until TIMESTAMPTZ
);

CREATE INDEX sweeps_by_status ON sweeps (status, created_at);
CREATE INDEX sweeps_by_created ON sweeps (created_at);

CREATE TABLE sweep_points (
    sweep_id     TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
    idx          BIGINT NOT NULL,
    point_values TEXT NOT NULL,
    status       INTEGER NOT NULL,
    fits         INTEGER NOT NULL,
    sample_rate  DOUBLE PRECISION,
    response     TEXT NOT NULL,
    PRIMARY KEY (sweep_id, idx)
);

CREATE INDEX sweep_points_best ON sweep_points (sweep_id, fits, sample_rate);

-- Which replica ran which units: one row per checkpoint, units [first_unit, last_unit).
CREATE TABLE sweep_runs (
    sweep_id   TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
    first_unit BIGINT NOT NULL,
    last_unit  BIGINT NOT NULL,
    replica    TEXT NOT NULL,
    at         TEXT NOT NULL,
    PRIMARY KEY (sweep_id, first_unit)
);
