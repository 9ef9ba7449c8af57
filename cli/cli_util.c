/* cli_util.c — file reading, printing and endpoint running shared by the CLI's subcommands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "error_codec.h"
#include "json_parse.h"
#include "sweep_kind.h"

json_t *cli_read_json_file(const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fathom: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
        if (len == cap) {
            if (cap > CODEC_MAX_BODY_BYTES * 4) {
                fprintf(stderr, "fathom: %s is too large\n", path);
                free(buf);
                buf = NULL;
                break;
            }
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    if (f != stdin)
        fclose(f);
    if (!buf)
        return NULL;
    fathom_error_t err;
    json_t *v = codec_parse_body(buf, len, &err);
    free(buf);
    if (!v)
        fprintf(stderr, "fathom: %s: %s (line %d, column %d)\n", path, err.message, err.line,
                err.column);
    return v;
}

json_t *cli_file_or_preset(const char *arg)
{
    struct stat st;
    if (strcmp(arg, "-") == 0 || (stat(arg, &st) == 0 && S_ISREG(st.st_mode)))
        return cli_read_json_file(arg);
    return json_string(arg);
}

void cli_print_json(const json_t *v)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
    if (text)
        printf("%s\n", text);
    free(text);
}

int cli_print_error(const fathom_error_t *err)
{
    json_t *out = json_pack("{s:o}", "error", codec_error_encode(err));
    if (out)
        cli_print_json(out);
    else
        fprintf(stderr, "fathom: %s: %s\n", fathom_code_name(err->code), err->message);
    json_decref(out);
    return 1;
}

int cli_run_endpoint(const codec_endpoint_t *ep, const json_t *body, const cli_env_t *env)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    const codec_ctx_t ctx = {env->presets};
    json_t *normalized = ep->normalize(body, &ctx, &err);
    if (!normalized)
        return cli_print_error(&err);
    json_t *out = ep->evaluate(normalized, &ctx, &err);
    json_decref(normalized);
    if (!out)
        return cli_print_error(&err);
    cli_print_json(out);
    json_decref(out);
    return 0;
}

/* A progress bar on stderr: units done of the total, and the model evaluations made. */
static void show_progress(const sweep_progress_t *p, void *user)
{
    (void)user;
    int width = 40, filled = p->units_total ? (int)(width * p->units_done / p->units_total) : 0;
    fprintf(stderr, "\r[%.*s%*s] %zu/%zu units, %llu evaluations", filled,
            "########################################", width - filled, "", p->units_done,
            p->units_total, (unsigned long long)p->evaluations);
    if (p->units_done == p->units_total)
        fputc('\n', stderr);
}

int cli_run_sweep(const char *kind, const json_t *body, const cli_env_t *env, int threads,
                  int flags, json_t **result)
{
    fathom_error_t err;
    fathom_error_clear(&err);
    const codec_ctx_t ctx = {env->presets};
    /* This machine's own run: no server's limits. */
    const sweep_limits_t unlimited = {UINT64_MAX, UINT64_MAX};
    const sweep_kind_t *k = NULL;
    uint64_t size = 0;
    const char *given = json_string_value(json_object_get(body, "kind"));
    if (given && strcmp(given, kind) != 0) {
        fathom_error_set(&err, FATHOM_E_INVALID_FIELD, "kind", "must be \"%s\" here", kind);
        return cli_print_error(&err);
    }
    json_t *spec = codec_sweep_normalize(body, &ctx, &unlimited, &k, &size, &err);
    *result = spec ? codec_sweep_run(k, spec, &ctx, threads, NULL,
                                     isatty(2) ? show_progress : NULL, NULL, flags, &err)
                   : NULL;
    json_decref(spec);
    return *result ? 0 : cli_print_error(&err);
}

int cli_plan_command(int argc, char **argv, const cli_env_t *env, const char *kind,
                     const char *block, const char *usage, void (*print_table)(const json_t *))
{
    const char *file = NULL;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int as_json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            as_json = 1;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!file && argv[i][0] != '-') {
            file = argv[i];
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    if (!file || threads < 1 || threads > CODEC_SWEEP_MAX_THREADS) {
        fputs(usage, stderr);
        return 2;
    }
    json_t *body = cli_read_json_file(file);
    if (!body)
        return 1;
    if (json_is_object(body) && !json_object_get(body, "kind"))
        json_object_set_new(body, "kind", json_string(kind));
    json_t *result = NULL;
    int rc = cli_run_sweep(kind, body, env, threads, 0, &result);
    const json_t *out = json_object_get(result, block);
    if (out && as_json)
        cli_print_json(out);
    else if (out)
        print_table(out);
    json_decref(result);
    json_decref(body);
    return rc;
}
