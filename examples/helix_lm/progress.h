/* progress.h: the progress display of training: a live bar on a terminal,
 * otherwise plain lines (progress.c). */
#ifndef HELIX_PROGRESS_H
#define HELIX_PROGRESS_H

#include <stdint.h>

typedef struct progress {
    int tty;           /* a live bar on a terminal, else plain lines */
    int bar_shown;     /* a bar is on the current line */
    double last_draw;  /* when the bar was last drawn */
    double step_ema;   /* seconds per training step (moving average) */
} progress;

void progress_clear(progress *p);
/* A permanent line (the bar, if any, is redrawn after it). */
void progress_line(progress *p, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The state of training for the display. */
typedef struct progress_info {
    int64_t step, total;    /* total: 0 when unknown */
    double frac;            /* fraction done, 0..1 */
    double loss, val;       /* latest values (NaN: none yet) */
    int64_t val_step;       /* the step val is from */
    double lr;
    double tok_per_s, eta;  /* eta in seconds (negative: unknown) */
} progress_info;

/* The bar (on a terminal: the last validation loss with the step it is
 * from, "val 1.8311@200") or a plain line (no validation loss: the lines of
 * the steps that have one are the permanent lines train.c prints). */
void progress_update(progress *p, const progress_info *in, int force);

#endif
