/* train.h: the training loop: a run from scratch or resumed from its
 * checkpoint, stopped cleanly by SIGINT or SIGTERM (train.c). */
#ifndef HELIX_TRAIN_H
#define HELIX_TRAIN_H

#include <stdint.h>

#include "config.h"
#include "metrics.h"

typedef struct train_result {
    int64_t steps;    /* the step reached */
    double val;       /* the last validation loss (NaN if none) */
    int interrupted;  /* stopped early (--stop-at or a signal) */
    metrics mt;       /* every row (the caller frees rows) */
} train_result;

int train(config *c, const given_set *given, int quiet, train_result *res);

#endif
