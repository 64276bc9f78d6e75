/* plot.c: loss.svg, the plot of a run's training and validation losses
 * against the step, with the learning rate on a second axis (right) and a
 * dashed line at every step a run was resumed from, written by hand as
 * SVG. */
#include "plot.h"

#include <math.h>

#include "util.h"

/* A "nice" tick spacing (1, 2 or 5 times a power of ten) for about n ticks
 * over range. */
static double nice_step(double range, int n) {
    if (!(range > 0)) return 1;
    double raw = range / n, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

#define SVG_W 800
#define SVG_H 500
#define PL 70  /* plot area: left, right, top, bottom margins */
#define PR 76
#define PT 48
#define PB 56

int write_svg(FILE *f, const void *ctx) {
    const plot_ctx *pc = ctx;
    const metrics *mt = pc->mt;
    double xmax = 1, ymin = INFINITY, ymax = -INFINITY, last_val = NAN, lrmax = 0;
    for (size_t i = 0; i < mt->n; i++) {
        const metric_row *r = &mt->rows[i];
        if ((double)r->step > xmax) xmax = (double)r->step;
        if (isfinite(r->val)) last_val = r->val;
        if (isfinite(r->lr) && r->lr > lrmax) lrmax = r->lr;
    }
    /* the y range leaves out the first 5% of the steps, whose steep fall
     * from ln 256 would flatten the rest (those lines run off the top) */
    for (size_t i = 0; i < mt->n; i++) {
        const metric_row *r = &mt->rows[i];
        if ((double)r->step < 0.05 * xmax && mt->n > 20) continue;
        double v[2] = {r->train, r->val};
        for (int j = 0; j < 2; j++)
            if (isfinite(v[j])) ymin = fmin(ymin, v[j]), ymax = fmax(ymax, v[j]);
    }
    if (!(ymax >= ymin)) ymin = 0, ymax = LN_VOCAB;
    double ys = nice_step(ymax - ymin, 6);
    ymin = floor(ymin / ys) * ys;
    ymax = ceil(ymax / ys) * ys;
    if (ymax <= ymin) ymax = ymin + ys;
    double xs = nice_step(xmax, 8);
    xmax = ceil(xmax / xs) * xs;
    /* the learning rate's axis: 0 to a round number above the peak */
    double ls = nice_step(lrmax > 0 ? lrmax : 1, 5);
    double lrtop = ceil((lrmax > 0 ? lrmax : 1) / ls) * ls;
    const double w = SVG_W - PL - PR, h = SVG_H - PT - PB;
#define X(v) (PL + (v) / xmax * w)
#define Y(v) (PT + (ymax - (v)) / (ymax - ymin) * h)
#define YL(v) (PT + (lrtop - (v)) / lrtop * h)
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            SVG_W, SVG_H, SVG_W, SVG_H);
    fprintf(f,
            "<text x=\"%d\" y=\"24\" font-size=\"15\" font-weight=\"bold\">%s: D=%lld "
            "L=%lld B=%lld T=%lld",
            PL, lm_name, (long long)pc->c->d, (long long)pc->c->layers, (long long)pc->c->batch,
            (long long)pc->c->seq);
    if (isfinite(last_val)) fprintf(f, " | validation %.4f nats/byte", last_val);
    fprintf(f, "</text>\n");
    /* grid, ticks and labels */
    fprintf(f, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (double y = ymin; y <= ymax + ys / 2; y += ys)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", PL, Y(y),
                SVG_W - PR, Y(y));
    for (double x = 0; x <= xmax + xs / 2; x += xs)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", X(x), PT, X(x),
                SVG_H - PB);
    fprintf(f, "</g>\n<g fill=\"#333\">\n");
    for (double y = ymin; y <= ymax + ys / 2; y += ys)
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", PL - 6,
                Y(y) + 4, fabs(y) < ys / 2 ? 0.0 : y);
    for (double x = 0; x <= xmax + xs / 2; x += xs)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", X(x),
                SVG_H - PB + 18, x);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">step</text>\n"
            "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">"
            "loss (nats per byte)</text>\n</g>\n",
            PL + w / 2, SVG_H - 12, PT + h / 2);
    /* the learning rate's ticks, on the right */
    fprintf(f, "<g fill=\"#2ca02c\">\n");
    for (double y = 0; y <= lrtop + ls / 2; y += ls)
        fprintf(f, "<text x=\"%d\" y=\"%.1f\">%.1e</text>\n", SVG_W - PR + 6, YL(y) + 4,
                fabs(y) < ls / 2 ? 0.0 : y);
    fprintf(f,
            "<text transform=\"translate(%d %.1f) rotate(90)\" text-anchor=\"middle\">"
            "learning rate</text>\n</g>\n",
            SVG_W - 10, PT + h / 2);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
            "stroke=\"#555\"/>\n"
            "<clipPath id=\"area\"><rect x=\"%d\" y=\"%d\" width=\"%.0f\" "
            "height=\"%.0f\"/></clipPath>\n<g clip-path=\"url(#area)\">\n",
            PL, PT, w, h, PL, PT, w, h);
    /* train: the raw per-step losses, faint, and their running mean over 25 steps */
    const char *style[2] = {"stroke=\"#1f77b4\" stroke-opacity=\"0.25\" stroke-width=\"1\"",
                            "stroke=\"#1f77b4\" stroke-width=\"2\""};
    for (int pass = 0; pass < 2; pass++) {
        fprintf(f, "<polyline fill=\"none\" %s points=\"", style[pass]);
        double win[25];
        int nw = 0, pos = 0, col = 0;
        for (size_t i = 0; i < mt->n; i++) {
            double v = mt->rows[i].train;
            if (!isfinite(v)) continue;
            if (pass == 1) {
                win[pos] = v;
                pos = (pos + 1) % 25;
                if (nw < 25) nw++;
                v = 0;
                for (int j = 0; j < nw; j++) v += win[j];
                v /= nw;
            }
            col += fprintf(f, "%.1f,%.1f ", X((double)mt->rows[i].step), Y(v));
            if (col > 100) fputc('\n', f), col = 0;
        }
        fprintf(f, "\"/>\n");
    }
    /* validation: a line with dots */
    fprintf(f, "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" points=\"");
    for (size_t i = 0; i < mt->n; i++)
        if (isfinite(mt->rows[i].val))
            fprintf(f, "%.1f,%.1f ", X((double)mt->rows[i].step), Y(mt->rows[i].val));
    fprintf(f, "\"/>\n<g fill=\"#d62728\">\n");
    for (size_t i = 0; i < mt->n; i++)
        if (isfinite(mt->rows[i].val))
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>\n", X((double)mt->rows[i].step),
                    Y(mt->rows[i].val));
    fprintf(f, "</g>\n");
    /* the learning rate of every update (the row of step s has update s-1's) */
    fprintf(f, "<polyline id=\"lr\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"1.5\" "
               "points=\"");
    int col = 0;
    for (size_t i = 0; i < mt->n; i++)
        if (isfinite(mt->rows[i].lr)) {
            col += fprintf(f, "%.1f,%.1f ", X((double)mt->rows[i].step), YL(mt->rows[i].lr));
            if (col > 100) fputc('\n', f), col = 0;
        }
    fprintf(f, "\"/>\n");
    /* the resumes: a new session starts after the checkpoint's step */
    fprintf(f, "<g id=\"resumes\" stroke=\"#666\" stroke-dasharray=\"4 3\">\n");
    for (size_t i = 1; i < mt->n; i++)
        if (mt->rows[i].session != mt->rows[i - 1].session) {
            double x = X((double)mt->rows[i - 1].step);
            fprintf(f,
                    "<line data-step=\"%lld\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                    "<text x=\"%.1f\" y=\"%d\" stroke=\"none\" fill=\"#666\" "
                    "font-size=\"10\">resumed %lld</text>\n",
                    (long long)mt->rows[i - 1].step, x, PT, x, SVG_H - PB, x + 3, PT + 10,
                    (long long)mt->rows[i - 1].step);
        }
    fprintf(f, "</g>\n</g>\n");
    /* legend */
    int lx = SVG_W - PR - 230, ly = PT + 12;
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"220\" height=\"98\" fill=\"white\" "
            "stroke=\"#bbb\"/>\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#1f77b4\" "
            "stroke-opacity=\"0.25\"/>\n"
            "<text x=\"%d\" y=\"%d\">train (each step)</text>\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#1f77b4\" "
            "stroke-width=\"2\"/>\n"
            "<text x=\"%d\" y=\"%d\">train (mean of 25 steps)</text>\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#d62728\" "
            "stroke-width=\"2\"/>\n"
            "<circle cx=\"%d\" cy=\"%d\" r=\"3\" fill=\"#d62728\"/>\n"
            "<text x=\"%d\" y=\"%d\">validation (held-out 5%%)</text>\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#2ca02c\" "
            "stroke-width=\"1.5\"/>\n"
            "<text x=\"%d\" y=\"%d\">learning rate (right axis)</text>\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#666\" "
            "stroke-dasharray=\"4 3\"/>\n"
            "<text x=\"%d\" y=\"%d\">resumed from a checkpoint</text>\n",
            lx, ly - 4, lx + 8, ly + 8, lx + 36, ly + 8, lx + 44, ly + 12, lx + 8, ly + 26,
            lx + 36, ly + 26, lx + 44, ly + 30, lx + 8, ly + 44, lx + 36, ly + 44, lx + 22,
            ly + 44, lx + 44, ly + 48, lx + 8, ly + 62, lx + 36, ly + 62, lx + 44, ly + 66,
            lx + 8, ly + 80, lx + 36, ly + 80, lx + 44, ly + 84);
    fprintf(f, "</svg>\n");
#undef X
#undef Y
#undef YL
    return 0;
}
