/* select-bench: the comparison and selection ops of issue 27, f32, against
 * select_ref.py (PyTorch) in bench/select.sh, which alternates the two.
 * Each case: one call (a new output each time) timed over repeats after a
 * warm-up; prints one JSON line per case with the median, min and max in
 * microseconds. Threads: gad's default (GAD_NUM_THREADS). */
#include "gad.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}


enum { REPS = 21 };

typedef struct ins {
    gad_tensor *x, *y, *row, *mask, *lo, *hi, *sq;
} ins;

static gad_tensor *run(int k, const ins *in) {
    switch (k) {
    case 0: return gad_lt(in->x, in->y);
    case 1: return gad_lt_scalar(in->x, 0.25);
    case 2: return gad_eq(in->x, in->row);
    case 3: return gad_where(in->mask, in->x, in->y);
    case 4: return gad_masked_fill(in->x, in->mask, -1e9);
    case 5: return gad_isnan(in->x);
    case 6: return gad_logical_and(in->mask, in->mask);
    case 7: return gad_any(in->mask, (int[]){1}, 1, 0);
    case 8: return gad_tril(in->sq, 0);
    default: return gad_clamp_tensor(in->x, in->lo, in->hi);
    }
}

static const char *const names[] = {"lt", "lt_scalar", "eq_bcast_row", "where",
                                    "masked_fill", "isnan", "logical_and", "any_axis1",
                                    "tril_2048", "clamp_tensor"};

int main(int argc, char **argv) {
    int64_t rows = 1024, cols = 4096; /* 4M elements */
    if (argc > 1) rows = atoll(argv[1]);
    const int64_t shp[2] = {rows, cols}, rshp[1] = {cols}, sq[2] = {2048, 2048};
    gad_rng *r = gad_rng_new(1);
    ins in;
    in.x = gad_keep(gad_rng_normal_tensor(r, shp, 2, GAD_F32, 0, 1));
    in.y = gad_keep(gad_rng_normal_tensor(r, shp, 2, GAD_F32, 0, 1));
    in.row = gad_keep(gad_rng_normal_tensor(r, rshp, 1, GAD_F32, 0, 1));
    in.mask = gad_keep(gad_gt_scalar(in.y, 0));
    in.lo = gad_keep(gad_full(shp, 2, GAD_F32, -0.5));
    in.hi = gad_keep(gad_full(rshp, 1, GAD_F32, 0.5));
    in.sq = gad_keep(gad_rng_normal_tensor(r, sq, 2, GAD_F32, 0, 1));
    for (int k = 0; k < (int)(sizeof names / sizeof names[0]); k++) {
        double t[REPS];
        for (int w = 0; w < 3; w++) {
            gad_scope_begin();
            run(k, &in);
            gad_scope_end();
        }
        for (int i = 0; i < REPS; i++) {
            gad_scope_begin();
            double t0 = now_us();
            gad_tensor *y = run(k, &in);
            t[i] = now_us() - t0;
            if (!y) {
                fprintf(stderr, "%s: %s\n", names[k], gad_last_error()->text);
                return 1;
            }
            gad_scope_end();
        }
        qsort(t, REPS, sizeof t[0], cmp_double);
        printf("{\"impl\": \"gad\", \"case\": \"%s\", \"median_us\": %.1f, \"min_us\": %.1f, "
               "\"max_us\": %.1f}\n",
               names[k], t[REPS / 2], t[0], t[REPS - 1]);
    }
    gad_rng_free(r);
    return 0;
}
