/* store_migrations.h — PRIVATE to the store: the migration files every backend applies. Each
 * dialect has its own directory (migrations/ for SQLite, migrations/postgresql/ for PostgreSQL)
 * of files named NNNN_name.sql; the version is the four digits. */
#ifndef FATHOM_STORE_MIGRATIONS_H
#define FATHOM_STORE_MIGRATIONS_H

#include <stddef.h>

#include "error_codec.h" /* fathom_error_t */

/* PostgreSQL's migrations are in this subdirectory of the migrations directory. */
#define STORE_PG_MIGRATIONS_SUBDIR "postgresql"

/* How a backend applies one migration: runs sql (the text of file `name`) and records `version`
 * as applied; 0, or -1 with err. */
typedef int (*store_migration_fn)(void *ctx, const char *name, int version, const char *sql,
                                  fathom_error_t *err);

/* Applies, in version order, every migration file in dir above version `current` through apply;
 * *version gets the version the schema is at. 0, or -1 with err when the directory cannot be
 * read, a file is misnamed, two share a version, a file cannot be read or apply failed (*version
 * untouched). */
int store__apply_migrations(const char *dir, int current, store_migration_fn apply, void *ctx,
                            int *version, fathom_error_t *err);

/* The highest version of the migration files in dir (0 when none), or -1 with err as
 * store__apply_migrations fails on the directory. */
int store__latest_migration(const char *dir, fathom_error_t *err);

#endif
