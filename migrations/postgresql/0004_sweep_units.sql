-- 0004_sweep_units (PostgreSQL only): units of one running search shared by replicas. The
-- owner claims each unit before running it; other replicas help by claiming units from the end
-- of the range. A row is held by `replica` until `lease_until` (renewed while it runs); a
-- helper stores its unit's result (`state`, `sample`: the unit's search result encoded like a
-- checkpoint) with state 'done', and the owner merges it in unit order. Rows below the sweep's
-- `done` are deleted at each checkpoint (their replicas are recorded in sweep_runs first).
CREATE TABLE sweep_units (
    sweep_id    TEXT NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
    unit        BIGINT NOT NULL,
    replica     TEXT NOT NULL,
    lease_until TIMESTAMPTZ NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('running', 'done')),
    result      TEXT,
    sample      TEXT,
    evaluations BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (sweep_id, unit)
);
