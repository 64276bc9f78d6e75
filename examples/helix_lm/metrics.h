/* metrics.h: the metrics of a training run, one row per step, written to
 * and read back from metrics.csv (metrics.c). */
#ifndef HELIX_METRICS_H
#define HELIX_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct metric_row {
    int64_t step;    /* optimizer updates done */
    double seconds;  /* training wall clock at that point */
    double train;    /* loss of the batch of update `step`, before it (NaN: none) */
    double val;      /* validation loss after `step` updates (NaN: not evaluated) */
    double lr;       /* learning rate of update `step` (NaN: none) */
    double gnorm;    /* gradient norm before clipping (NaN: none) */
    int64_t session; /* 0 for the run's first session, +1 for each resume */
} metric_row;

typedef struct metrics {
    metric_row *rows;
    size_t n, cap;
    int64_t tokens_per_step;
} metrics;

int metrics_add(metrics *mt, metric_row r);
int write_csv(FILE *f, const void *ctx); /* a file_writer; ctx: the metrics */
/* Read back a CSV this program wrote, keeping the rows up to step
 * max_step (a resumed run continues it). A missing file gives no rows; a
 * file of an older helix_lm (no session column) gives session 0. */
int read_csv(const char *path, int64_t max_step, metrics *mt);
/* 0 when the rows are the steps 0, 1, ..., last, each once. */
int metrics_contiguous(const metrics *mt);

#endif
