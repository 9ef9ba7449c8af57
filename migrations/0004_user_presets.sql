-- 0004_user_presets: presets stored through PUT /v1/presets/<kind>/<name> (today only systems),
-- shared by every fathomd on this database. `body` is the normalized object (canonical JSON, as
-- the decoder accepted it); a request naming the preset reads this one row by its key.
CREATE TABLE user_presets (
    kind TEXT NOT NULL,        -- "systems" (the URL segment; "models" is reserved for later)
    name TEXT NOT NULL,        -- [a-z0-9][a-z0-9._-]{0,63}, never a built-in preset's name
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (kind, name)
) STRICT, WITHOUT ROWID;
