/* cli_util.c — file reading, printing and endpoint running shared by the CLI's subcommands. */
#define _GNU_SOURCE /* CPU_ALLOC, sched_getaffinity */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cpu_quota.h"
#include "error_codec.h"
#include "json_parse.h"
#include "sweep_kind.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fathom %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(`fathom %s --help` gives the usage)\n", cmd);
    return CLI_USAGE;
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int cli_parse_int(const char *cmd, const char *what, const char *text, long long min,
                  long long max, long long *out)
{
    char *end;
    errno = 0;
    const long long v = strtoll(text, &end, 10);
    /* strtoll skips leading blanks and takes a prefix: the whole text must be the number */
    if (!*text || isspace((unsigned char)text[0]) || *end || errno == ERANGE)
        return cli_usage_error(cmd, "%s must be a whole number, got '%s'", what, text);
    if (v < min || v > max)
        return cli_usage_error(cmd, "%s must be between %lld and %lld, got %lld", what, min, max,
                               v);
    *out = v;
    return CLI_OK;
}

json_t *cli_string(const char *cmd, const char *what, const char *text)
{
    json_t *s = json_string(text);
    if (!s)
        cli_usage_error(cmd, "%s is not valid UTF-8", what);
    return s;
}

int cli_default_threads(void)
{
    long n = 0;
    const long conf = sysconf(_SC_NPROCESSORS_CONF);
    const size_t ncpus = conf > CPU_SETSIZE ? (size_t)conf : CPU_SETSIZE;
    cpu_set_t *set = CPU_ALLOC(ncpus);
    const size_t size = CPU_ALLOC_SIZE(ncpus);
    if (set && sched_getaffinity(0, size, set) == 0)
        n = CPU_COUNT_S(size, set);
    CPU_FREE(set);
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    const int quota = cpu_quota_of_process();
    if (quota > 0 && quota < n)
        n = quota;
    return n < 1 ? 1 : n > CODEC_SWEEP_MAX_THREADS ? CODEC_SWEEP_MAX_THREADS : (int)n;
}

int cli_one_file_args(const char *cmd, int argc, char **argv, const char *usage,
                      const char **file)
{
    int help = 0;
    *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i]))
            help = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error(cmd, "unknown option %s", argv[i]);
        else if (*file)
            return cli_usage_error(cmd, "one FILE is read; '%s' is one too many", argv[i]);
        else
            *file = argv[i];
    }
    if (help) {
        *file = NULL;
        fputs(usage, stdout);
        return CLI_OK;
    }
    return *file ? CLI_OK : cli_usage_error(cmd, "FILE is missing");
}

char *cli_read_file(const char *path, size_t *len)
{
    static int stdin_read;
    const int is_stdin = strcmp(path, "-") == 0;
    if (is_stdin && stdin_read++) {
        fprintf(stderr, "fathom: - (standard input) is given twice; it can be read once\n");
        return NULL;
    }
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fathom: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    /* One byte past the limit tells a file at the limit from a larger one. */
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || n > CODEC_MAX_BODY_BYTES)
            break;
        char *nb = realloc(buf, (cap *= 2) + 1);
        if (!nb)
            free(buf);
        buf = nb;
    }
    const int failed = ferror(f);
    const int failure = errno;
    if (!is_stdin)
        fclose(f);
    if (!buf) {
        fprintf(stderr, "fathom: %s: out of memory\n", path);
    } else if (failed) {
        fprintf(stderr, "fathom: cannot read %s: %s\n", path, strerror(failure));
    } else if (n > CODEC_MAX_BODY_BYTES) {
        fprintf(stderr, "fathom: %s is too large: the limit is %d bytes, as for a request body\n",
                path, CODEC_MAX_BODY_BYTES);
    } else {
        buf[n] = 0;
        *len = n;
        return buf;
    }
    free(buf);
    return NULL;
}

json_t *cli_parse_json(const char *path, const char *buf, size_t len)
{
    fathom_error_t err;
    json_t *v = codec_parse_body(buf, len, &err);
    if (!v && err.line > 0)
        fprintf(stderr, "fathom: %s: %s (line %d, column %d)\n", path, err.message, err.line,
                err.column);
    else if (!v)
        fprintf(stderr, "fathom: %s: %s\n", path, err.message);
    return v;
}

json_t *cli_read_json_file(const char *path)
{
    size_t len;
    char *buf = cli_read_file(path, &len);
    json_t *v = buf ? cli_parse_json(path, buf, len) : NULL;
    free(buf);
    return v;
}

json_t *cli_file_or_preset(const char *cmd, const char *what, const char *arg, int *rc)
{
    struct stat st;
    const int is_file = strcmp(arg, "-") == 0 || stat(arg, &st) == 0;
    /* a directory fails to read, and says so */
    json_t *v = is_file ? cli_read_json_file(arg) : cli_string(cmd, what, arg);
    if (!v)
        *rc = is_file ? CLI_REFUSED : CLI_USAGE;
    return v;
}

void cli_print_json(const json_t *v)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_REAL_PRECISION(17) | JSON_ENCODE_ANY);
    if (text)
        printf("%s\n", text);
    free(text);
}

int cli_print_error(const fathom_error_t *given)
{
    /* On the command line the presets are listed by `fathom presets`, not the API. */
    static const char api[] = "GET /v1/presets", cli[] = "fathom presets";
    fathom_error_t e = *given;
    const fathom_error_t *err = &e;
    char *at = strstr(e.message, api);
    if (at) {
        memcpy(at, cli, sizeof cli - 1);
        memmove(at + sizeof cli - 1, at + sizeof api - 1, strlen(at + sizeof api - 1) + 1);
    }
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

int cli_plan_command(int argc, char **argv, const cli_env_t *env, const char *cmd,
                     const char *kind, const char *block, const char *usage,
                     void (*print_table)(const json_t *))
{
    const char *file = NULL;
    int as_json = 0, help = 0;
    long long threads = cli_default_threads();
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            help = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            as_json = 1;
        } else if (strcmp(argv[i], "--threads") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error(cmd, "--threads needs a value");
            if (cli_parse_int(cmd, "--threads", argv[++i], 1, CODEC_SWEEP_MAX_THREADS, &threads))
                return CLI_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error(cmd, "unknown option %s", argv[i]);
        } else if (file) {
            return cli_usage_error(cmd, "one FILE is read; '%s' is one too many", argv[i]);
        } else {
            file = argv[i];
        }
    }
    if (help) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (!file)
        return cli_usage_error(cmd, "FILE is missing");
    json_t *body = cli_read_json_file(file);
    if (!body)
        return CLI_REFUSED;
    if (json_is_object(body) && !json_object_get(body, "kind"))
        json_object_set_new(body, "kind", json_string(kind));
    json_t *result = NULL;
    int rc = cli_run_sweep(kind, body, env, (int)threads, 0, &result);
    const json_t *out = json_object_get(result, block);
    if (out && as_json)
        cli_print_json(out);
    else if (out)
        print_table(out);
    json_decref(result);
    json_decref(body);
    return rc;
}
