/* log.h — fathomd's log: one JSON object per line on stderr, below --log-level dropped. */
#ifndef FATHOM_LOG_H
#define FATHOM_LOG_H

#include <jansson.h>

#include "config.h"

void log_set_level(log_level_t level);
/* Logs msg with the members of fields (stolen; may be NULL) added to the line. */
void log_event(log_level_t level, const char *msg, json_t *fields);
void log_msg(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
