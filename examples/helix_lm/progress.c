/* progress.c: the progress display of training: a bar redrawn in place on a
 * terminal (at most ten times a second), otherwise plain lines; permanent
 * lines (evaluations) between them. */
#include "progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "util.h"

static void format_duration(char *buf, size_t cap, double s) {
    if (!(s >= 0) || s > 1e7) {
        snprintf(buf, cap, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, cap, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

/* Clear the bar's line (before printing a permanent line). */
void progress_clear(progress *p) {
    if (p->tty && p->bar_shown) {
        fputs("\r\033[K", stdout);
        p->bar_shown = 0;
    }
}

void progress_line(progress *p, const char *fmt, ...) {
    progress_clear(p);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

void progress_update(progress *p, const progress_info *in, int force) {
    double t = now_seconds();
    if (p->tty && !force && t - p->last_draw < 0.1) return; /* at most 10 draws a second */
    p->last_draw = t;
    char eta[32], val[32], total[32];
    format_duration(eta, sizeof eta, in->eta);
    if (isfinite(in->val)) /* with the step it is from: it may be old */
        snprintf(val, sizeof val, "%.4f@%lld", in->val, (long long)in->val_step);
    else
        snprintf(val, sizeof val, "-");
    if (in->total > 0)
        snprintf(total, sizeof total, "/%lld", (long long)in->total);
    else
        total[0] = '\0';
    if (p->tty) {
        char bar[24];
        int width = 20, filled = (int)(in->frac * width);
        if (filled > width) filled = width;
        for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
        bar[width] = '\0';
        printf("\r\033[K[%s] %3d%% step %lld%s  loss %.4f  val %s  %.0f tok/s  ETA %s", bar,
               (int)(100 * in->frac), (long long)in->step, total, in->loss, val, in->tok_per_s, eta);
        p->bar_shown = 1;
        fflush(stdout);
    } else {
        printf("step %lld%s  loss %.4f  lr %.2e  %.0f tok/s  ETA %s\n", (long long)in->step,
               total, in->loss, in->lr, in->tok_per_s, eta);
        fflush(stdout);
    }
}
