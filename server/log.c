/* log.c — JSON log lines on stderr (see log.h). One fprintf per line, so lines from different
 * threads never interleave (stdio locks the stream for the call). */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "store.h"

static atomic_int min_level = LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(log_level_t level)
{
    atomic_store(&min_level, (int)level);
}

void log_event(log_level_t level, const char *msg, json_t *fields)
{
    if ((int)level < atomic_load(&min_level)) {
        json_decref(fields);
        return;
    }
    char ts[32];
    store_now_iso(ts);
    json_t *line = json_pack("{s:s,s:s,s:s}", "ts", ts, "level", level_names[level], "msg", msg);
    if (fields) {
        json_object_update(line, fields);
        json_decref(fields);
    }
    char *text = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (text)
        fprintf(stderr, "%s\n", text);
    free(text);
    json_decref(line);
}

void log_msg(log_level_t level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_event(level, buf, NULL);
}
