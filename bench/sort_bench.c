/* sort-bench: gad's side of the sort / top-k / cumulative / sampling
 * figures of issue 27 (bench/sort_bench.py is torch's; bench/sort_compare
 * runs both alternately). Transformer-sized cases, f32: top-k k = 50 and
 * the logits sampler over [16, 50257] logits, sort of 1M floats, cumsum
 * over [16, 50257] and [4096, 1024]; and the integer paths: sort, argsort,
 * top-k and argmax of i64 ids, cumsum of a bool mask and of i64 counts.
 * One JSON line per case: the median, min and max of the per-call times in
 * ms after warm-up. */
#include "gad.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>



enum { REPS = 15 };

typedef gad_tensor *(*bench_fn)(gad_tensor *x, gad_rng *r);

static void run(const char *name, bench_fn f, gad_tensor *x, gad_rng *r) {
    double t[REPS];
    for (int i = 0; i < 3; i++) { /* warm-up */
        gad_scope_begin();
        if (!f(x, r)) {
            fprintf(stderr, "%s: %s\n", name, gad_last_error() ? gad_last_error()->text : "?");
            exit(1);
        }
        gad_scope_end();
    }
    for (int i = 0; i < REPS; i++) {
        gad_scope_begin();
        double t0 = now_ms();
        f(x, r);
        t[i] = now_ms() - t0;
        gad_scope_end();
    }
    qsort(t, REPS, sizeof t[0], cmp_double);
    printf("{\"case\": \"%s\", \"ms\": %.4f, \"min\": %.4f, \"max\": %.4f}\n", name, t[REPS / 2],
           t[0], t[REPS - 1]);
    fflush(stdout);
}

static gad_tensor *topk50(gad_tensor *x, gad_rng *r) {
    (void)r;
    gad_tensor *ix;
    return gad_topk(x, 50, -1, 1, 1, &ix);
}
static gad_tensor *sort_all(gad_tensor *x, gad_rng *r) {
    (void)r;
    gad_tensor *ix;
    return gad_sort(x, -1, 0, &ix);
}
static gad_tensor *cumsum_last(gad_tensor *x, gad_rng *r) {
    (void)r;
    return gad_cumsum(x, -1);
}
static gad_tensor *cumsum_first(gad_tensor *x, gad_rng *r) {
    (void)r;
    return gad_cumsum(x, 0);
}
static gad_tensor *sample(gad_tensor *x, gad_rng *r) {
    gad_sample_opts o = {0.8, 50, 0.9};
    return gad_sample_logits(x, &o, r);
}
static gad_tensor *sample_p(gad_tensor *x, gad_rng *r) {
    gad_sample_opts o = {0.8, 0, 0.9};
    return gad_sample_logits(x, &o, r);
}
static gad_tensor *argsort_last(gad_tensor *x, gad_rng *r) {
    (void)r;
    return gad_argsort(x, -1, 0);
}
static gad_tensor *argmax_last(gad_tensor *x, gad_rng *r) {
    (void)r;
    return gad_argmax(x, -1, 0);
}
static gad_tensor *multinomial1(gad_tensor *x, gad_rng *r) {
    return gad_multinomial(x, 1, 1, r);
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    gad_set_num_threads(2);
    gad_rng *r = gad_rng_new(7);
    int64_t lg[2] = {16, 50257}, big[1] = {1 << 20}, act[2] = {4096, 1024};
    gad_tensor *logits = gad_keep(gad_rng_normal_tensor(r, lg, 2, GAD_F32, 0, 3));
    gad_tensor *probs = gad_keep(gad_softmax(logits, -1));
    gad_tensor *v1m = gad_keep(gad_rng_normal_tensor(r, big, 1, GAD_F32, 0, 1));
    gad_tensor *a = gad_keep(gad_rng_normal_tensor(r, act, 2, GAD_F32, 0, 1));
#define CASE(n, f, x) if (!only || strstr(n, only)) run(n, f, x, r)
    CASE("topk50_16x50257", topk50, logits);
    CASE("sort_1M", sort_all, v1m);
    CASE("sort_16x50257", sort_all, logits);
    CASE("cumsum_16x50257_last", cumsum_last, logits);
    CASE("cumsum_4096x1024_dim0", cumsum_first, a);
    CASE("multinomial_16x50257", multinomial1, probs);
    CASE("sample_topk50_topp0.9_16x50257", sample, logits);
    CASE("sample_topp0.9_16x50257", sample_p, logits);
    /* integers: ids in about +-30000 (ties), a mask, small counts */
    int64_t mk[2] = {16, 2048};
    gad_tensor *ids = gad_keep(gad_cast(gad_mul_scalar(logits, 1e4), GAD_I64));
    gad_tensor *ids1m = gad_keep(gad_cast(gad_mul_scalar(v1m, 3e4), GAD_I64));
    gad_tensor *cnt = gad_keep(gad_cast(gad_mul_scalar(a, 100), GAD_I64));
    gad_tensor *mask = gad_keep(gad_gt_scalar(gad_rng_normal_tensor(r, mk, 2, GAD_F32, 0, 1), -1));
    CASE("i64_sort_1M", sort_all, ids1m);
    CASE("i64_argsort_16x50257", argsort_last, ids);
    CASE("i64_topk50_16x50257", topk50, ids);
    CASE("i64_argmax_16x50257", argmax_last, ids);
    CASE("bool_cumsum_16x2048_last", cumsum_last, mask);
    CASE("i64_cumsum_4096x1024_dim0", cumsum_first, cnt);
    gad_rng_free(r);
    return 0;
}
