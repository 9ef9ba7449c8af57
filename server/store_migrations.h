/* store_migrations.h — PRIVATE to the store: the migration files every backend applies. Each
 * dialect has its own directory (migrations/ for SQLite, migrations/postgresql/ for PostgreSQL)
 * of files named NNNN_name.sql; the version is the four digits. */
#ifndef FATHOM_STORE_MIGRATIONS_H
#define FATHOM_STORE_MIGRATIONS_H

#include <stddef.h>

#include "error_codec.h" /* fathom_error_t */

/* The version of a strictly named migration file, or -1 when misnamed. */
int store__migration_version(const char *name);
/* The sorted names of the .sql files in dir (each and the array freed by the caller); -1 with err when the directory cannot be read, a file is misnamed or two share a version. */
int store__list_migrations(const char *dir, char ***out, int *count, fathom_error_t *err);
/* A migration file's text (freed by the caller), or NULL with a message. */
char *store__read_migration(const char *path, fathom_error_t *err);

#endif
