/* json_read.c — the strict member readers declared in json_read.h. */
#include "json_read.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void jr_path(char *out, size_t cap, const char *parent, const char *key)
{
    if (!parent || !parent[0])
        snprintf(out, cap, "%s", key);
    else
        snprintf(out, cap, "%s.%s", parent, key);
}

void jr_path_index(char *out, size_t cap, const char *parent, size_t index)
{
    snprintf(out, cap, "%s[%zu]", parent ? parent : "", index);
}

const char *jr_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

int jr_expect_object(const json_t *v, const char *path, fathom_error_t *err)
{
    if (!v)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path, "is required");
    if (!json_is_object(v))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path, "%s must be an object, not %s",
                                path && path[0] ? "this field" : "the request body",
                                jr_type_name(v));
    return 0;
}

int jr_expect_array(const json_t *v, const char *path, size_t min_len, size_t max_len,
                    fathom_error_t *err)
{
    if (!v)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path, "is required");
    if (!json_is_array(v))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "must be an array, not %s", jr_type_name(v));
    size_t n = json_array_size(v);
    if (n < min_len)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "must have at least %zu element%s", min_len,
                                min_len == 1 ? "" : "s");
    if (n > max_len)
        return fathom_error_set(err, FATHOM_E_LIMIT_EXCEEDED, path,
                                "has %zu elements; the limit is %zu", n, max_len);
    return 0;
}

int jr_check_keys(const json_t *obj, const char *path, const char *const *allowed,
                  fathom_error_t *err)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        bool known = false;
        for (const char *const *a = allowed; *a; a++) {
            if (strcmp(*a, key) == 0) {
                known = true;
                break;
            }
        }
        if (!known) {
            char p[JR_PATH_MAX];
            jr_path(p, sizeof p, path, key);
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "is not a known field");
        }
    }
    return 0;
}

bool jr_has(const json_t *obj, const char *key)
{
    return json_is_object(obj) && json_object_get(obj, key) != NULL;
}

const char *jr_text(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* Shared by jr_real and jr_value_real: v is present. */
int jr_value_real(const json_t *v, const char *path, double min, double max, double *out,
                  fathom_error_t *err)
{
    double x;
    if (json_is_integer(v)) {
        /* A real field takes any integer as the nearest double, the value the same number
         * written with an exponent has (both round to nearest), so both share one hash. */
        x = (double)json_integer_value(v);
    } else if (json_is_real(v)) {
        x = json_real_value(v);
    } else {
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path, "must be a number, not %s",
                                jr_type_name(v));
    }
    if (!isfinite(x))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path, "must be finite");
    /* No quantity here is meaningful below DBL_MIN, and a subnormal passes "greater than 0"
     * only to turn into an infinity in the first division by it (a bandwidth of 1e-310 GB/s, a
     * model of 1e-310 parameters, a TTFT target of 5e-324 ms: fuzz findings) */
    if (x != 0 && fabs(x) < DBL_MIN)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "must be 0 or at least %.17g in magnitude, got %.17g", DBL_MIN,
                                x);
    if (x < min || x > max)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "must be between %.17g and %.17g, got %.17g", min, max, x);
    *out = x;
    return 0;
}

int jr_value_int(const json_t *v, const char *path, int64_t min, int64_t max, int64_t *out,
                 fathom_error_t *err)
{
    int64_t x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
        if (x > JR_MAX_EXACT_INT || x < -JR_MAX_EXACT_INT)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                    "integer is too large to be represented exactly (limit 2^53)");
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d != floor(d))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                    "must be an integer, got %.17g", d);
        if (fabs(d) > (double)JR_MAX_EXACT_INT)
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                    "integer is too large to be represented exactly (limit 2^53)");
        x = (int64_t)d;
    } else {
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path, "must be an integer, not %s",
                                jr_type_name(v));
    }
    if (x < min || x > max)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, path,
                                "must be between %lld and %lld, got %lld", (long long)min,
                                (long long)max, (long long)x);
    *out = x;
    return 0;
}

/* Looks up obj[key]; returns 1 if present (with *v and the member's path filled), 0 if absent
 * and optional, -1 if absent and required. */
static int member(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
                  const json_t **v, char *mpath, size_t cap, fathom_error_t *err)
{
    jr_path(mpath, cap, path, key);
    *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    /* a null is read as the value it is: no field these readers read is nullable (the schemas
     * say so), and the reader's "must be an integer, not null" names it; leaving the field out
     * is how a request takes the default */
    if (*v)
        return 1;
    if (presence == JR_OPTIONAL)
        return 0;
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, mpath, "is required");
}

/* The start every member reader shares: looks up obj[key] into v (its path in p); when it is
 * absent and optional, stores the default and returns 0 from the reader; when it is absent and
 * required, returns -1 (err says so). */
#define MEMBER_OR_DEFAULT(out, dflt)                                                         \
    char p[JR_PATH_MAX];                                                                     \
    const json_t *v;                                                                         \
    do {                                                                                     \
        int found_ = member(obj, path, key, presence, &v, p, sizeof p, err);                 \
        if (found_ <= 0) {                                                                   \
            if (found_ == 0)                                                                 \
                *(out) = (dflt);                                                             \
            return found_;                                                                   \
        }                                                                                    \
    } while (0)

int jr_real(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
            double dflt, double min, double max, double *out, fathom_error_t *err)
{
    MEMBER_OR_DEFAULT(out, dflt);
    return jr_value_real(v, p, min, max, out, err);
}

int jr_positive(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
                double dflt, double max, double *out, fathom_error_t *err)
{
    MEMBER_OR_DEFAULT(out, dflt);
    double x;
    if (jr_value_real(v, p, -INFINITY, INFINITY, &x, err))
        return -1;
    if (!(x > 0))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "must be greater than 0, got %.17g",
                                x);
    if (x > max)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "must be at most %.17g, got %.17g",
                                max, x);
    *out = x;
    return 0;
}

int jr_int(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
           int64_t dflt, int64_t min, int64_t max, int64_t *out, fathom_error_t *err)
{
    MEMBER_OR_DEFAULT(out, dflt);
    return jr_value_int(v, p, min, max, out, err);
}

int jr_bool(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
            bool dflt, bool *out, fathom_error_t *err)
{
    MEMBER_OR_DEFAULT(out, dflt);
    if (!json_is_boolean(v))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "must be true or false, not %s",
                                jr_type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* v (at path p) as one of the NULL-terminated names: its index in *out. */
static int enum_value(const json_t *v, const char *p, const char *const *names, int *out,
                      fathom_error_t *err)
{
    char choices[256] = "";
    size_t used = 0;
    for (int i = 0; names[i]; i++) {
        if (json_is_string(v) && strcmp(json_string_value(v), names[i]) == 0) {
            *out = i;
            return 0;
        }
        int n = snprintf(choices + used, sizeof choices - used, "%s\"%s\"", i ? ", " : "",
                         names[i]);
        if (n > 0 && (size_t)n < sizeof choices - used)
            used += (size_t)n;
    }
    if (!json_is_string(v))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "must be a string, one of %s; not %s", choices, jr_type_name(v));
    return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "must be one of %s", choices);
}

int jr_enum(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
            int dflt, const char *const *names, int *out, fathom_error_t *err)
{
    MEMBER_OR_DEFAULT(out, dflt);
    return enum_value(v, p, names, out, err);
}

int jr_enum_set(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
                const char *const *names, unsigned *out, fathom_error_t *err)
{
    MEMBER_OR_DEFAULT(out, 0u);
    size_t count = 0;
    while (names[count])
        count++;
    if (jr_expect_array(v, p, 0, count, err))
        return -1;
    unsigned set = 0;
    size_t i;
    const json_t *item;
    json_array_foreach(v, i, item) {
        char ip[JR_PATH_MAX + 24]; /* room for "[i]" after a full path */
        int which = 0;
        jr_path_index(ip, sizeof ip, p, i);
        if (enum_value(item, ip, names, &which, err))
            return -1;
        if (set & (1u << which))
            return fathom_error_set(err, FATHOM_E_INVALID_FIELD, ip, "repeats \"%s\"",
                                    names[which]);
        set |= 1u << which;
    }
    *out = set;
    return 0;
}

int jr_string(const json_t *obj, const char *path, const char *key, jr_presence_t presence,
              const char *dflt, size_t max_len, const char **out, fathom_error_t *err)
{
    MEMBER_OR_DEFAULT(out, dflt);
    if (!json_is_string(v))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "must be a string, not %s",
                                jr_type_name(v));
    if (json_string_length(v) > max_len)
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p,
                                "is longer than %zu characters", max_len);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return fathom_error_set(err, FATHOM_E_INVALID_FIELD, p, "must not contain NUL");
    *out = json_string_value(v);
    return 0;
}

/* Each listed member present and not null, read by its type's reader into a scratch value. */
static int row_members(const json_t *row, const char *path, const char *const *keys, int kind,
                       fathom_error_t *err)
{
    for (int k = 0; keys && keys[k]; k++) {
        const json_t *v = json_object_get(row, keys[k]);
        int64_t n;
        double x;
        bool b;
        const char *text;
        if (!v || json_is_null(v))
            continue;
        const int rc =
            kind == 0   ? jr_int(row, path, keys[k], JR_OPTIONAL, 0, -JR_MAX_EXACT_INT,
                                 JR_MAX_EXACT_INT, &n, err)
            : kind == 1 ? jr_string(row, path, keys[k], JR_OPTIONAL, NULL, 1 << 20, &text, err)
            : kind == 2 ? jr_bool(row, path, keys[k], JR_OPTIONAL, false, &b, err)
                        : jr_real(row, path, keys[k], JR_OPTIONAL, 0, -HUGE_VAL, HUGE_VAL, &x,
                                  err);
        if (rc)
            return rc;
    }
    return 0;
}

int jr_row_types(const json_t *row, const char *array, size_t i, const jr_row_types_t *types,
                 const char *id_key, fathom_error_t *err)
{
    if (!json_is_object(row))
        return 0;
    char path[JR_PATH_MAX];
    jr_path_index(path, sizeof path, array, i);
    const int rc = row_members(row, path, types->ints, 0, err) ||
                   row_members(row, path, types->strings, 1, err) ||
                   row_members(row, path, types->bools, 2, err) ||
                   row_members(row, path, types->numbers, 3, err);
    const char *id = id_key ? json_string_value(json_object_get(row, id_key)) : NULL;
    if (rc && id) {
        char why[FATHOM_ERROR_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", err->message);
        snprintf(err->message, sizeof err->message, "%.400s (row %.80s)", why, id);
    }
    return rc;
}
