/* attention.c: attn-bench, gad's side of the attention benchmark (issue
 * 27; bench/attention.sh runs it alternated with bench/attention.py):
 * scaled_dot_product_attention forward + backward, causal, f32, on
 * q, k, v [B, H, T, d]. Prints one JSON line per run: the median, min and
 * max seconds of `reps` timed calls after one warm-up call, and the extra
 * memory of the first call (the peak above q, k, v, dO, the output and the
 * three gradients) two ways: counted by an allocator hook (every byte gad
 * takes: tensors, its caches, scratch, GEMM packing), and as the growth of
 * the process's peak RSS (ru_maxrss), as the PyTorch side measures it.
 *
 *   attn-bench T [B H d reps threads] */
#include <gad.h>
#include "bench_util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static atomic_llong cur_bytes, peak_bytes;

static void *count_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    long long now = atomic_fetch_add(&cur_bytes, (long long)size) + (long long)size;
    long long pk = atomic_load(&peak_bytes);
    while (now > pk && !atomic_compare_exchange_weak(&peak_bytes, &pk, now)) {
    }
    return p;
}

static void count_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    atomic_fetch_sub(&cur_bytes, (long long)size);
    free(p);
}


static long maxrss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}


/* One forward + backward; the gradients in g. */
static int step(gad_tensor **in, gad_tensor *dO, gad_tensor **g) {
    gad_scope_begin();
    gad_tensor *y = gad_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 1, 0, 0, NULL);
    int ok = y && gad_grad_ex(y, dO, in, 3, g, 0) == GAD_OK;
    for (int i = 0; ok && i < 3; i++) gad_keep(g[i]);
    gad_scope_end();
    return ok ? 0 : -1;
}

int main(int argc, char **argv) {
    int64_t T = argc > 1 ? atoll(argv[1]) : 512, B = argc > 2 ? atoll(argv[2]) : 8;
    int64_t H = argc > 3 ? atoll(argv[3]) : 8, d = argc > 4 ? atoll(argv[4]) : 64;
    int reps = argc > 5 ? atoi(argv[5]) : 5, threads = argc > 6 ? atoi(argv[6]) : 2;
    gad_allocator a = {count_alloc, count_free, NULL};
    gad_set_allocator(&a);
    gad_set_num_threads(threads);
    gad_rng *r = gad_rng_new(1);
    int64_t shape[4] = {B, H, T, d};
    gad_tensor *in[3], *g[3];
    for (int i = 0; i < 3; i++)
        in[i] = gad_requires_grad(gad_rng_normal_tensor(r, shape, 4, GAD_F32, 0, 1));
    gad_tensor *dO = gad_rng_normal_tensor(r, shape, 4, GAD_F32, 0, 1);
    double tensor_bytes = (double)(B * H * T * d) * 4;
    { /* a small call first, so that the code it pages in is not counted */
        int64_t s1[4] = {1, 1, 16, d};
        gad_tensor *t[3], *tg[3];
        for (int i = 0; i < 3; i++) t[i] = gad_requires_grad(gad_ones(s1, 4, GAD_F32));
        gad_tensor *o = gad_ones(s1, 4, GAD_F32);
        if (step(t, o, tg) == 0)
            for (int i = 0; i < 3; i++) gad_release(tg[i]);
        for (int i = 0; i < 3; i++) gad_release(t[i]);
        gad_release(o);
    }
    /* the first call: its memory */
    long rss0 = maxrss_kb();
    long long base = atomic_load(&cur_bytes);
    atomic_store(&peak_bytes, base);
    if (step(in, dO, g)) {
        fprintf(stderr, "attn-bench: %s\n", gad_last_error() ? gad_last_error()->text : "?");
        return 1;
    }
    long rss1 = maxrss_kb();
    double extra = (double)(atomic_load(&peak_bytes) - base) - 4 * tensor_bytes;
    double extra_rss = (double)(rss1 - rss0) * 1024 - 4 * tensor_bytes;
    for (int i = 0; i < 3; i++) gad_release(g[i]);
    double *ts = malloc((size_t)reps * sizeof *ts);
    for (int k = 0; k < reps; k++) {
        double t0 = now_s();
        if (step(in, dO, g)) return 1;
        ts[k] = now_s() - t0;
        for (int i = 0; i < 3; i++) gad_release(g[i]);
    }
    qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
    printf("{\"impl\": \"gad\", \"B\": %lld, \"H\": %lld, \"T\": %lld, \"d\": %lld, "
           "\"threads\": %d, \"median_s\": %.4f, \"min_s\": %.4f, \"max_s\": %.4f, "
           "\"extra_alloc_MiB\": %.2f, \"extra_rss_MiB\": %.2f, \"qkvo_MiB\": %.2f}\n",
           (long long)B, (long long)H, (long long)T, (long long)d, threads, ts[reps / 2], ts[0],
           ts[reps - 1], extra / 1048576, extra_rss / 1048576, tensor_bytes / 1048576);
    free(ts);
    for (int i = 0; i < 3; i++) gad_release(in[i]);
    gad_release(dO);
    gad_rng_free(r);
    return 0;
}
