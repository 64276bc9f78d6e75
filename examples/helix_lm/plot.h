/* plot.h: the SVG plot of a run's losses, loss.svg (plot.c). */
#ifndef HELIX_PLOT_H
#define HELIX_PLOT_H

#include <stdio.h>

#include "config.h"
#include "metrics.h"

typedef struct plot_ctx {
    const metrics *mt;
    const config *c;
} plot_ctx;

int write_svg(FILE *f, const void *ctx); /* a file_writer; ctx: a plot_ctx */

#endif
