/* store_migrations.c — what every backend's migrator shares: listing a directory's strictly
 * named migration files (NNNN_name.sql) in order and reading one (store_migrations.h). */
#include "store_migrations.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORE_MAX_MIGRATION_BYTES (1 << 20)

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A migration's file name is exactly four digits, '_', a name of [a-z0-9_], ".sql"; its version
 * is the four digits, from 1. Other .sql files in the directory are refused, not skipped: a
 * misnamed migration silently left out would leave the schema short. */
static int migration_version(const char *name)
{
    size_t len = strlen(name);
    if (len < 10 || strcmp(name + len - 4, ".sql") != 0 || name[4] != '_')
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        v = v * 10 + (name[i] - '0');
    }
    for (size_t i = 5; i < len - 4; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '_'))
            return -1;
    return v > 0 ? v : -1;
}

/* The sorted names of the .sql files in dir (a growing array: no cap on how many). */
static int list_migrations(const char *dir, char ***out, int *count, fathom_error_t *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cannot open migrations directory %s", dir);
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".sql") != 0)
            continue;
        if (migration_version(e->d_name) < 0) {
            fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL,
                     "migration %s/%s is misnamed (want NNNN_name.sql: four digits from 0001, "
                     "a name of a-z, 0-9 and _)",
                     dir, e->d_name);
            goto out;
        }
        if (n == cap) {
            int ncap = cap ? cap * 2 : 16;
            char **grown = realloc(names, (size_t)ncap * sizeof *names);
            if (!grown)
                goto oom;
            names = grown;
            cap = ncap;
        }
        if ((names[n] = strdup(e->d_name)) == NULL)
            goto oom;
        n++;
    }
    if (n > 1)
        qsort(names, (size_t)n, sizeof names[0], by_name);
    for (int i = 1; i < n; i++) {
        if (migration_version(names[i]) == migration_version(names[i - 1])) {
            fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "migrations %s and %s have the same version", names[i - 1],
                     names[i]);
            goto out;
        }
    }
    *out = names;
    *count = n;
    names = NULL;
    n = 0;
    rc = 0;
    goto out;
oom:
    fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "out of memory listing migrations");
out:
    closedir(d);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

static char *read_migration(const char *path, fathom_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "cannot read migration %s", path);
        return NULL;
    }
    char *buf = malloc(STORE_MAX_MIGRATION_BYTES + 1);
    size_t n = buf ? fread(buf, 1, STORE_MAX_MIGRATION_BYTES + 1, f) : 0;
    fclose(f);
    if (!buf || n > STORE_MAX_MIGRATION_BYTES) {
        fathom_error_set(err, FATHOM_E_INTERNAL, NULL, "migration %s is too large or memory ran out", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}


int store__latest_migration(const char *dir, fathom_error_t *err)
{
    char **names = NULL;
    int n = 0;
    if (list_migrations(dir, &names, &n, err))
        return -1;
    const int latest = n ? migration_version(names[n - 1]) : 0;
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return latest;
}

int store__apply_migrations(const char *dir, int current, store_migration_fn apply, void *ctx,
                            int *version, fathom_error_t *err)
{
    char **names = NULL;
    int n = 0, rc = -1;
    if (list_migrations(dir, &names, &n, err))
        return -1;
    for (int i = 0; i < n; i++) {
        const int v = migration_version(names[i]);
        if (v <= current)
            continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path) {
            fathom_error_set(err, FATHOM_E_UNAVAILABLE, NULL, "migration path too long");
            goto out;
        }
        char *sql = read_migration(path, err);
        if (!sql)
            goto out;
        const int failed = apply(ctx, names[i], v, sql, err);
        free(sql);
        if (failed)
            goto out;
        current = v;
    }
    *version = current;
    rc = 0;
out:
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
