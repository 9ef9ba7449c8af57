/* json_read.h — strict, field-naming readers for request JSON (jansson values).
 *
 * Every reader takes the JSON path of the object it reads from ("execution", "system.mem1",
 * "" for the top level) and, on failure, fills a fathom_error_t whose `field` is the full path of
 * the offending member ("execution.tensor_par") and whose message says why. Readers return 0 on
 * success and -1 on failure, so a decoder is a column of `if (jr_…(…)) return -1;` lines.
 *
 * What "strict" means here: no type coercion (a string "8" is not a number); integer fields must
 * be exact (no fraction, magnitude at most 2^53); real fields must be finite and take any JSON
 * number, however many digits, as its nearest double; a member that is absent takes
 * the default given by the caller only when the caller says it is optional; unknown members are
 * refused by jr_check_keys. */
#ifndef FATHOM_JSON_READ_H
#define FATHOM_JSON_READ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fathom_error.h"

/* Largest magnitude an integer field may have: beyond it a double cannot hold every integer, so
 * two different requests could normalize to one hash. */
#define JR_MAX_EXACT_INT 9007199254740992LL /* 2^53 */

/* Maximum nesting depth and path length a decoder will follow. */
#define JR_PATH_MAX FATHOM_ERROR_FIELD_MAX

typedef enum { JR_REQUIRED = 0, JR_OPTIONAL = 1 } jr_presence_t;

/* Joins a parent path and a member name ("a.b" + "c" → "a.b.c"; "" + "c" → "c"). */
void jr_path(char *out, size_t cap, const char *parent, const char *key);
/* Joins a parent path and an array index ("a.b" + 3 → "a.b[3]"). */
void jr_path_index(char *out, size_t cap, const char *parent, size_t index);

/* Fails unless v is a JSON object (path names v). */
int jr_expect_object(const json_t *v, const char *path, fathom_error_t *err);
/* Fails unless v is an array of min_len..max_len elements. */
int jr_expect_array(const json_t *v, const char *path, size_t min_len, size_t max_len,
                    fathom_error_t *err);

/* Fails on the first member of obj whose name is not in the NULL-terminated list `allowed`. */
int jr_check_keys(const json_t *obj, const char *path, const char *const *allowed,
                  fathom_error_t *err);

/* Reads obj[key] as a finite real in [min, max]. Integers are accepted as reals. When the member
 * is absent: JR_OPTIONAL stores dflt, JR_REQUIRED fails. */
int jr_real(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
            double dflt, double min, double max, double *out, fathom_error_t *err);

/* Reads obj[key] as a finite real in (0, max]: strictly positive. */
int jr_positive(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
                double dflt, double max, double *out, fathom_error_t *err);

/* Reads obj[key] as an exact integer in [min, max]. A real with no fractional part (8.0) is
 * accepted as the integer it equals: a client that writes every number as a float is not wrong. */
int jr_int(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
           int64_t dflt, int64_t min, int64_t max, int64_t *out, fathom_error_t *err);

/* Reads a JSON value (not a member) as a real / exact integer; path names the value itself. */
int jr_value_real(const json_t *v, const char *path, double min, double max, double *out,
                  fathom_error_t *err);
int jr_value_int(const json_t *v, const char *path, int64_t min, int64_t max, int64_t *out,
                 fathom_error_t *err);

int jr_bool(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
            bool dflt, bool *out, fathom_error_t *err);

/* Reads obj[key] as one of the NULL-terminated `names`; stores its index. */
int jr_enum(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
            int dflt, const char *const *names, int *out, fathom_error_t *err);

/* Reads obj[key] as an array of distinct names from the NULL-terminated `names` (at most one
 * of each); stores the set as bits, 1 << index. Absent (JR_OPTIONAL): the empty set. */
int jr_enum_set(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
                const char *const *names, unsigned *out, fathom_error_t *err);

/* Reads obj[key] as a string of at most max_len bytes; *out points into obj (borrowed). */
int jr_string(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
              const char *dflt, size_t max_len, const char **out, fathom_error_t *err);

/* The members of a table row (a published run) that a reader takes field by field, by type;
 * each list ends with NULL, and any may be NULL. */
typedef struct {
    const char *const *ints, *const *strings, *const *bools, *const *numbers;
} jr_row_types_t;
/* Checks row[i] of `array` (an object; anything else passes, for the reader to list) against
 * types, each member when present and not null (null stands for absent, as published tables
 * write an unstated figure): read with defaults, a member of another type would silently be
 * absent ("tp": "4" as TP 1). The error names array[i].key and, in its message, the row's
 * id_key member when it has one ("(row MB-001)"). */
int jr_row_types(const json_t *row, const char *array, size_t i, const jr_row_types_t *types,
                 const char *id_key, fathom_error_t *err);

/* True when obj has the member key (and obj is an object). */
bool jr_has(const json_t *obj, const char *key);
/* obj's member key when it is a string, else "" (absent, null or another type): for reading
 * rows whose types jr_row_types has already checked. */
const char *jr_text(const json_t *obj, const char *key);
/* "an integer", "a string", "null"…: v's JSON type as an error message names it. */
const char *jr_type_name(const json_t *v);

#endif
