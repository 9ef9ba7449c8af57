/* calibrate_codec.h — POST /v1/calibrate (codec_calibrate_endpoint, in endpoint.h) and the
 * reader of nccl-tests' output it uses.
 *
 * nccl-tests (NVIDIA/nccl-tests: all_reduce_perf, all_gather_perf, reduce_scatter_perf,
 * alltoall_perf, sendrecv_perf) print comment lines starting with '#' (the run's settings, the
 * devices, the two header lines of the table, "# Out of bounds values" and
 * "# Avg bus bandwidth    : <GB/s>") and one line per message size:
 *     size count type [redop [root]]  time algbw busbw #wrong  time algbw busbw #wrong
 * with size in bytes (the whole buffer), time in µs, algbw = size/time and busbw = algbw × the
 * collective's factor in GB/s, first out of place then in place; #wrong is an integer or N/A.
 * Blank lines and NCCL's own log lines ("NCCL INFO", "NCCL WARN") are skipped. */
#ifndef FATHOM_CALIBRATE_CODEC_H
#define FATHOM_CALIBRATE_CODEC_H

#include <stddef.h>

#include "fathom_error.h"

#define CODEC_NCCL_MAX_ROWS 4096 /* rows of one pasted table */

typedef struct {
    int line;      /* 1-based line of the paste */
    double bytes;  /* size column */
    double count;  /* count column (elements) */
    double time_s; /* out-of-place time, seconds */
    double algbw_gbps, busbw_gbps;       /* out of place */
    double time_in_s, algbw_in_gbps, busbw_in_gbps; /* in place */
} codec_nccl_row_t;

typedef struct {
    size_t n_rows;
    codec_nccl_row_t rows[CODEC_NCCL_MAX_ROWS];
    double avg_busbw_gbps; /* the "# Avg bus bandwidth" line, NaN when absent */
} codec_nccl_table_t;

/* Parses text into *out (the caller's; large: allocate it). Returns 0, or -1 with err
 * FATHOM_E_INVALID_FIELD, field = path, and a message starting "line N: " naming the line that is
 * wrong (or saying that no line is a row of the table). */
int codec_nccl_parse(const char *text, const char *path, codec_nccl_table_t *out,
                     fathom_error_t *err);

#endif
