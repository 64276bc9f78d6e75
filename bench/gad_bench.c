/* gad_bench.c: gad's side of the benchmark suite (workloads W1-W7 and W10
 * of docs/workloads.md, same sizes; W8 is gpt-bench's, W9 the cnn
 * example's), one JSON line per figure:
 *   {"workload":"W5","metric":"helix_block_fwd_bwd_ms","median":..,"min":..,
 *    "max":..,"unit":"ms","reps":..,"impl":"gad",...}
 * Run: gad-bench [W1|W2|...|W7|W10|all|G1..G7|gpu|sweep|sweep-W1|sweep-W6] [--threads N]
 *                [--reps N]
 * (G1-G7: the GPU workloads, skipped without a CUDA device; bench/gpu.sh
 * runs them beside bench/torch_ref.py's. G5-G7 are W7, W5 and W6 on the
 * GPU at larger sizes.)
 * bench/compare runs it beside the PyTorch reference (bench/torch_ref.py)
 * and prints the ratios. Timings are medians after warm-up; peak RSS comes
 * from getrusage (run one workload per process for a meaningful figure). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"
#include "fma_peak.h"
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif
/* gad__cuda_bench_sgemm and gad__cuda_bench_copy: the GPU workloads' direct
 * calls, internal entries of the CUDA back end (in a build without CUDA,
 * src/cuda/none.c's versions fail with a message and the G workloads are
 * skipped) */
#include "cuda/cuda.h"

#ifdef GAD_HAVE_CBLAS
#include <cblas.h>
#endif

static int g_threads = 2, g_reps = 0;



/* Time fn(ctx) reps times after warm calls; per-call seconds sorted. */
typedef void (*bench_fn)(void *ctx);
static void run(bench_fn fn, void *ctx, int warm, int reps, double *t) {
    for (int i = 0; i < warm; i++) fn(ctx);
    for (int i = 0; i < reps; i++) {
        double t0 = now_s();
        fn(ctx);
        t[i] = now_s() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
}

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

/* Print the median/min/max of t (seconds) scaled by `scale`; for rates
 * (bytes or flops per call) pass the amount as `per_call` and get amount /
 * time, median of the rates. */
static void emit(const char *w, const char *metric, const double *t, int reps, double scale,
                 double per_call, const char *unit, const char *extra) {
    double med = t[reps / 2], lo = t[0], hi = t[reps - 1];
    double m, mn, mx;
    if (per_call > 0) {
        m = per_call / med * scale;
        mn = per_call / hi * scale; /* the slowest call is the lowest rate */
        mx = per_call / lo * scale;
    } else {
        m = med * scale;
        mn = lo * scale;
        mx = hi * scale;
    }
    printf("{\"workload\":\"%s\",\"metric\":\"%s\",\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,"
           "\"unit\":\"%s\",\"reps\":%d,\"threads\":%d,\"impl\":\"gad\"%s%s}\n",
           w, metric, m, mn, mx, unit, reps, g_threads, extra ? "," : "", extra ? extra : "");
    fflush(stdout);
}

static void check(const void *p, const char *what) {
    if (p) return;
    fprintf(stderr, "gad-bench: %s failed: %s\n", what,
            gad_last_error() ? gad_last_error()->text : "unknown error");
    exit(1);
}

/* --reps N, at most 64: the figures' arrays hold 64 timings */
static int reps_or(int r) { return g_reps > 0 ? (g_reps < 64 ? g_reps : 64) : r; }

/* ----------------------------------------------------------------- W1 */

typedef struct w1 {
    gad_tensor *x, *cm, *ca;
    int nops;
    int backward;
} w1_ctx;

static void w1_run(void *vc) {
    w1_ctx *c = vc;
    gad_scope_begin();
    gad_tensor *v = c->x;
    for (int i = 0; i < c->nops; i++) {
        int k = i % 3;
        v = k == 0 ? gad_mul(v, c->cm) : k == 1 ? gad_add(v, c->ca) : gad_tanh(v);
    }
    if (c->backward) {
        gad_tensor *g;
        gad_tensor *seed = gad_ones((int64_t[]){16}, 1, GAD_F32);
        check(gad_grad_ex(v, seed, &c->x, 1, &g, 0) == GAD_OK ? v : NULL, "W1 grad");
    }
    gad_scope_end();
}

/* The chain's input (16 elements that require grad) and its constants. */
static w1_ctx w1_make(int nops) {
    int64_t n = 16;
    gad_rng *r = gad_rng_new(0);
    w1_ctx c = {gad_requires_grad(gad_rng_normal_tensor(r, &n, 1, GAD_F32, 0, 1)),
                gad_full(&n, 1, GAD_F32, 0.9), gad_full(&n, 1, GAD_F32, 0.1), nops, 0};
    gad_rng_free(r);
    check(c.x && c.cm && c.ca ? c.x : NULL, "W1 inputs");
    return c;
}

/* W1's three figures (forward, forward+backward, no-grad forward) of the
 * chain c of nops ops, each call through fn (W1's, or G4's on the GPU), at
 * most 64 repetitions; the chain's tensors are released. */
static void w1_figures(const char *w, bench_fn fn, w1_ctx *c, int nops, int reps) {
    double t[64];
    if (reps > 64) reps = 64;
    run(fn, c, 20, reps, t);
    emit(w, "fwd_ns_per_op", t, reps, 1e9 / nops, 0, "ns", NULL);
    c->backward = 1;
    run(fn, c, 20, reps, t);
    emit(w, "fwd_bwd_ns_per_op", t, reps, 1e9 / nops, 0, "ns", NULL);
    c->backward = 0;
    gad_no_grad_begin();
    run(fn, c, 20, reps, t);
    gad_no_grad_end();
    emit(w, "fwd_nograd_ns_per_op", t, reps, 1e9 / nops, 0, "ns", NULL);
    gad_release(c->x), gad_release(c->cm), gad_release(c->ca);
}

static void bench_w1(void) {
    const int nops = 1000;
    w1_ctx c = w1_make(nops);
    w1_figures("W1", w1_run, &c, nops, reps_or(31));
}

/* ----------------------------------------------------------------- W2 */

typedef struct w2 {
    gad_tensor *a, *b;
    int64_t m, k, n;
    int direct;
    int inner; /* products per timed call */
} w2_ctx;

static void w2_one(w2_ctx *c) {
#ifdef GAD_HAVE_CBLAS
    if (c->direct) {
        static float *out;
        static size_t cap;
        size_t need = (size_t)(c->m * c->n);
        if (need > cap) {
            free(out);
            out = malloc(need * sizeof *out);
            cap = need;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c->m, (int)c->n, (int)c->k, 1,
                    gad_data(c->a), (int)c->k, gad_data(c->b), (int)c->n, 0, out, (int)c->n);
        return;
    }
#endif
    gad_scope_begin();
    check(gad_matmul(c->a, c->b), "W2 matmul");
    gad_scope_end();
}

/* A timed call: `inner` products, at least 2^24 multiply-adds, about 0.2 ms
 * (a single 64^3 product takes 3 us, and single calls of it spread by
 * +-30% on this host, more than the figures compared). */
static void w2_run(void *vc) {
    w2_ctx *c = vc;
    for (int i = 0; i < c->inner; i++) w2_one(c);
}

/* Size by size, the three implementations in turn, in seven blocks each
 * (built-in, gad through CBLAS, OpenBLAS called directly, built-in, ...),
 * so that the figures compared with each other see the same states of this
 * shared host (its speed moves by tens of percent over seconds, and three
 * blocks left two runs of the same OpenBLAS call 5-8% apart). Every block
 * follows warm-up calls (cores, worker threads, caches awake). After a
 * call, OpenBLAS's worker threads spin (sched_yield) for about 2^28 cycles
 * before they sleep, and a product timed in that window shares the second
 * core with them (gad's built-in kernel at 512^3 once ran at 100 GFLOP/s
 * instead of 190 right after OpenBLAS calls), so a block that follows
 * OpenBLAS calls warms up for 0.3 s, which outlasts their spin: each block
 * sees what a loop of its own product would. */
static void w2_block(w2_ctx *c, int impl, int reps, double *t, double warm_s) {
    gad_set_blas(impl == 1);
    c->direct = impl == 2;
    for (double t0 = now_s(); now_s() - t0 < warm_s;) w2_run(c);
    run(w2_run, c, 0, reps, t);
}

static void w2_emit(const w2_ctx *c, const char *impl, double *t, int reps) {
    char metric[96];
    double flops = 2.0 * (double)c->m * (double)c->n * (double)c->k * c->inner;
    snprintf(metric, sizeof metric, "gemm_%lldx%lldx%lld_gflops_%s", (long long)c->m,
             (long long)c->k, (long long)c->n, impl);
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    emit("W2", metric, t, reps, 1e-9, flops, "GFLOP/s", NULL);
}

/* The f32 multiply-add peak of this machine (fma_peak.h): W2's figures
 * over it are the fraction of peak the products reach (the issue asks for
 * it in the same run). */
#ifdef BENCH_FMA_PEAK
typedef struct {
    int lanes;
    int64_t iters;
    volatile float sink;
} peak_ctx;

static void peak_run(void *vc) {
    peak_ctx *c = vc;
#pragma omp parallel num_threads(g_threads)
    {
        float v = bench_fma_loop(c->lanes, c->iters);
        if (v == 1234.5f) c->sink = v; /* keeps the loop */
    }
}

static void bench_peak(void) {
    peak_ctx c = {bench_fma_lanes(), 1 << 21, 0};
    if (!c.lanes) return;
    double t[64];
    int reps = reps_or(21);
    if (reps > 64) reps = 64;
    run(peak_run, &c, 3, reps, t);
    int nt = 1;
#ifdef _OPENMP
    nt = g_threads;
#endif
    char extra[96];
    snprintf(extra, sizeof extra, "\"note\":\"register-only %d-lane FMA loop on %d thread(s)\"",
             c.lanes, nt);
    emit("W2", "fma_peak_GFLOPs", t, reps, 1e-9, 12.0 * 2.0 * c.lanes * (double)c.iters * nt,
         "GFLOP/s", extra);
}
#else
static void bench_peak(void) {}
#endif

static void bench_w2(void) {
    const int64_t shapes[][3] = {{64, 64, 64},     {128, 128, 128},   {256, 256, 256},
                                 {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048},
                                 {4096, 256, 256}, {256, 4096, 256}};
    enum { NSHAPES = sizeof shapes / sizeof shapes[0], BLOCKS = 7 };
    bench_peak();
    gad_rng *r = gad_rng_new(2);
    w2_ctx c[NSHAPES];
    int reps[NSHAPES];
    for (int s = 0; s < NSHAPES; s++) {
        int64_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        c[s] = (w2_ctx){gad_rng_normal_tensor(r, (int64_t[]){m, k}, 2, GAD_F32, 0, 1),
                        gad_rng_normal_tensor(r, (int64_t[]){k, n}, 2, GAD_F32, 0, 1), m, k, n,
                        0, 1};
        while ((double)c[s].inner * (double)(m * k * n) < 16777216.0) /* 2^24 */
            c[s].inner *= 2;
        reps[s] = reps_or(2.0 * (double)(m * k * n) > 4e9 ? 7 : 21);
        if (reps[s] > 60) reps[s] = 60;
    }
    const char *names[3] = {"builtin", "gad_blas", "openblas_direct"};
    int nimpl = gad_blas_available() ? 3 : 1;
    for (int s = 0; s < NSHAPES; s++) {
        double t[3][64 * BLOCKS];
        int per = (reps[s] + BLOCKS - 1) / BLOCKS;
        for (int b = 0; b < BLOCKS; b++)
            for (int impl = 0; impl < nimpl; impl++)
                w2_block(&c[s], impl, per, t[impl] + b * per,
                         nimpl > 1 && impl == 0 && (s > 0 || b > 0) ? 0.3 : 0.1);
        for (int impl = 0; impl < nimpl; impl++)
            w2_emit(&c[s], names[impl], t[impl], per * BLOCKS);
    }
    gad_set_blas(1);
    for (int s = 0; s < NSHAPES; s++) gad_release(c[s].a), gad_release(c[s].b);
    gad_rng_free(r);
}

/* ----------------------------------------------------------------- W3 */

typedef struct w3 {
    gad_tensor *a, *b;
    int op;
} w3_ctx;

static void w3_run(void *vc) {
    w3_ctx *c = vc;
    gad_tensor *y = c->op ? gad_gelu(c->a) : gad_add(c->a, c->b);
    check(y, "W3 op");
    gad_release(y); /* a fresh output every call, as the reference */
}

/* The memory-bandwidth ceiling of this machine for the same work: a plain
 * C loop c = a + b over preallocated arrays, on the same threads. */
typedef struct w3c {
    const float *a, *b;
    float *c;
    int64_t n;
} w3c_ctx;

static void w3c_run(void *vc) {
    w3c_ctx *c = vc;
    const float *restrict a = c->a, *restrict b = c->b;
    float *restrict out = c->c;
#pragma omp parallel for num_threads(g_threads) schedule(static)
    for (int64_t i = 0; i < c->n; i++) out[i] = a[i] + b[i];
}

/* The same add as STREAM's, with non-temporal stores (no read-for-ownership
 * of the output's lines: 12 bytes of traffic per element instead of 16):
 * the ceiling issue 31 measures gad's add against. Each thread's part is a
 * whole number of 64-byte lines; outputs 64-byte aligned. x86-64 only. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define W3_NT 1
__attribute__((target("avx512f"))) static void nt_add16(const float *a, const float *b,
                                                         float *c, int64_t n) {
    for (int64_t i = 0; i < n; i += 16)
        _mm512_stream_ps(c + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
}
__attribute__((target("avx"))) static void nt_add8(const float *a, const float *b, float *c,
                                                    int64_t n) {
    for (int64_t i = 0; i < n; i += 8)
        _mm256_stream_ps(c + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
}
static void nt_add4(const float *a, const float *b, float *c, int64_t n) {
    for (int64_t i = 0; i < n; i += 4)
        _mm_stream_ps(c + i, _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
}

static void w3n_run(void *vc) {
    w3c_ctx *c = vc;
    int64_t lines = c->n / 16;
    int w = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("avx") ? 8 : 4;
#pragma omp parallel num_threads(g_threads)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num(), nt = omp_get_num_threads();
#endif
        int64_t lo = lines * t / nt * 16, hi = lines * (t + 1) / nt * 16;
        if (w == 16) nt_add16(c->a + lo, c->b + lo, c->c + lo, hi - lo);
        else if (w == 8) nt_add8(c->a + lo, c->b + lo, c->c + lo, hi - lo);
        else nt_add4(c->a + lo, c->b + lo, c->c + lo, hi - lo);
        _mm_sfence();
    }
    for (int64_t i = lines * 16; i < c->n; i++) c->c[i] = c->a[i] + c->b[i];
}
#else
#define W3_NT 0
#endif

static void bench_w3(void) {
    int64_t n = 16 * 1024 * 1024;
    gad_rng *r = gad_rng_new(3);
    w3_ctx c = {gad_rng_uniform_tensor(r, &n, 1, GAD_F32, 0, 1),
                gad_rng_uniform_tensor(r, &n, 1, GAD_F32, 0, 1), 0};
    gad_rng_free(r);
    double t[64], tn[64];
    int reps = reps_or(20);
#if W3_NT
    /* gad's add and STREAM's add (non-temporal stores, preallocated output)
     * in turn, four blocks each, so that the two see the same states of a
     * shared host: the add is judged as a fraction of the other */
    float *nt = aligned_alloc(64, (size_t)n * sizeof *nt);
    if (nt) {
        w3c_ctx cn = {gad_data(c.a), gad_data(c.b), nt, n};
        int per = (reps + 3) / 4;
        if (per * 4 > 64) per = 16;
        for (int b = 0; b < 4; b++) {
            run(w3_run, &c, 2, per, t + b * per);
            run(w3n_run, &cn, 2, per, tn + b * per);
        }
        qsort(t, (size_t)(per * 4), sizeof *t, cmp_double);
        qsort(tn, (size_t)(per * 4), sizeof *tn, cmp_double);
        emit("W3", "add_alloc_16M_GBps", t, per * 4, 1e-9, 12.0 * (double)n, "GB/s", NULL);
        emit("W3", "stream_nt_add_16M_GBps", tn, per * 4, 1e-9, 12.0 * (double)n, "GB/s",
             "\"note\":\"c = a + b with non-temporal stores, the widest the CPU has, "
             "preallocated output: STREAM's add, timed in turn with add_alloc\"");
        free(nt);
    } else
#endif
    {
        run(w3_run, &c, 3, reps, t);
        emit("W3", "add_alloc_16M_GBps", t, reps, 1e-9, 12.0 * (double)n, "GB/s", NULL);
    }
    c.op = 1;
    run(w3_run, &c, 3, reps, t);
    emit("W3", "gelu_tanh_alloc_16M_GBps", t, reps, 1e-9, 8.0 * (double)n, "GB/s", NULL);
    float *out = malloc((size_t)n * sizeof *out);
    w3c_ctx cc = {gad_data(c.a), gad_data(c.b), out, n};
    run(w3c_run, &cc, 3, reps, t);
    emit("W3", "c_add_out_16M_GBps", t, reps, 1e-9, 12.0 * (double)n, "GB/s",
         "\"note\":\"plain C loop, preallocated output: the bandwidth ceiling\"");
    free(out);
    gad_release(c.a), gad_release(c.b);
}

/* ----------------------------------------------------------------- W4 */

typedef struct w4 {
    gad_tensor *p[6];
    gad_tensor *x[16], *y[16];
    gad_optim *opt;
    int it;
    double loss;
} w4_ctx;

static void w4_run(void *vc) {
    w4_ctx *c = vc;
    int k = c->it++ % 16;
    gad_scope_begin();
    gad_tensor *h = gad_linear_act(c->x[k], c->p[0], c->p[1], GAD_ACT_RELU);
    h = gad_linear_act(h, c->p[2], c->p[3], GAD_ACT_RELU);
    gad_tensor *loss = gad_cross_entropy(gad_linear(h, c->p[4], c->p[5]), c->y[k], GAD_REDUCE_MEAN);
    gad_tensor *g[6];
    check(gad_grad(loss, c->p, 6, g) == GAD_OK ? loss : NULL, "W4 grad");
    check(gad_optim_step(c->opt, g) == GAD_OK ? loss : NULL, "W4 step");
    c->loss = gad_item(loss);
    gad_scope_end();
}

static void bench_w4(void) {
    gad_rng *r = gad_rng_new(4);
    w4_ctx c = {0};
    const int64_t dims[4] = {784, 512, 512, 10};
    for (int l = 0; l < 3; l++) {
        c.p[2 * l] = gad_requires_grad(gad_init_kaiming_uniform(r, dims[l], dims[l + 1], 1.0));
        c.p[2 * l + 1] = gad_requires_grad(gad_zeros(&dims[l + 1], 1, GAD_F32));
    }
    for (int i = 0; i < 16; i++) {
        c.x[i] = gad_rng_normal_tensor(r, (int64_t[]){128, 784}, 2, GAD_F32, 0, 1);
        c.y[i] = gad_rng_int_tensor(r, (int64_t[]){128}, 1, 0, 10);
    }
    gad_rng_free(r);
    gad_sgd_opts o = {.lr = 0.01};
    c.opt = gad_sgd_new(c.p, 6, &o);
    check(c.opt, "W4 optimizer");
    double t[128];
    int reps = reps_or(100);
    run(w4_run, &c, 20, reps, t);
    char extra[64];
    snprintf(extra, sizeof extra, "\"loss_last\":%.4f", c.loss);
    emit("W4", "mlp_train_step_ms", t, reps, 1e3, 0, "ms", extra);
    double rss[1] = {peak_rss_mib()};
    emit("W4", "maxrss_MiB", rss, 1, 1, 0, "MiB", NULL);
    gad_optim_free(c.opt);
    for (int i = 0; i < 6; i++) gad_release(c.p[i]);
    for (int i = 0; i < 16; i++) gad_release(c.x[i]), gad_release(c.y[i]);
}

/* ------------------------------------------------------ HELIX pieces */

/* Weights of one block initialized as the reference does (randn /
 * sqrt(fan_in), gate-bias row +3, gains 1); leaves. */
static void helix_init(gad_rng *r, int64_t D, gad_helix_weights *w) {
    double s = 1.0 / sqrt((double)D), s2 = 1.0 / sqrt(2.0 * (double)D);
    w->wa = gad_rng_normal_tensor(r, (int64_t[]){D + 1, D}, 2, GAD_F32, 0, s);
    float *bias = (float *)gad_data_mut(w->wa) + D * D;
    for (int64_t j = 0; j < D; j++) bias[j] = 3.0f;
    w->wb = gad_rng_normal_tensor(r, (int64_t[]){D, D}, 2, GAD_F32, 0, s);
    w->wo = gad_rng_normal_tensor(r, (int64_t[]){D, D}, 2, GAD_F32, 0, s);
    w->wf1 = gad_rng_normal_tensor(r, (int64_t[]){D, 2 * D}, 2, GAD_F32, 0, s);
    w->wf2 = gad_rng_normal_tensor(r, (int64_t[]){2 * D, D}, 2, GAD_F32, 0, s2);
    w->g1 = gad_ones(&D, 1, GAD_F32);
    w->g2 = gad_ones(&D, 1, GAD_F32);
    w->g3 = gad_ones(&D, 1, GAD_F32);
    w->g4 = gad_ones(&D, 1, GAD_F32);
    gad_tensor **p = &w->wa;
    for (int i = 0; i < 9; i++) gad_requires_grad(p[i]);
}

/* ----------------------------------------------------------------- W5 */

typedef struct w5 {
    gad_tensor *x, *rr;
    gad_helix_weights w;
} w5_ctx;

static void w5_run(void *vc) {
    w5_ctx *c = vc;
    gad_scope_begin();
    gad_tensor *p[10] = {c->x, c->w.wa, c->w.wb, c->w.wo, c->w.wf1,
                         c->w.wf2, c->w.g1, c->w.g2, c->w.g3, c->w.g4};
    gad_tensor *loss = gad_sum_all(gad_mul(gad_helix_block(c->x, &c->w, 1e-5), c->rr));
    gad_tensor *g[10];
    check(gad_grad(loss, p, 10, g) == GAD_OK ? loss : NULL, "W5 grad");
    gad_scope_end();
}

static void bench_w5(void) {
    int64_t s[3] = {8, 256, 256};
    gad_rng *r = gad_rng_new(5);
    w5_ctx c;
    c.x = gad_requires_grad(gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1));
    c.rr = gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1);
    helix_init(r, 256, &c.w);
    gad_rng_free(r);
    double t[64];
    int reps = reps_or(15);
    run(w5_run, &c, 3, reps, t);
    emit("W5", "helix_block_fwd_bwd_ms", t, reps, 1e3, 0, "ms", NULL);
    gad_tensor **p = &c.w.wa;
    for (int i = 0; i < 9; i++) gad_release(p[i]);
    gad_release(c.x), gad_release(c.rr);
}

/* ----------------------------------------------------------------- W6 */

typedef struct w6 {
    int64_t D, L, B, T;
    gad_tensor *emb, *gain, *wout;
    gad_helix_weights w[8];
    gad_tensor *params[80];
    int np;
    gad_optim *opt;
    unsigned char *data;
    int64_t ndata;
    gad_rng *rng;
    double loss;
} w6_ctx;

static void w6_run(void *vc) {
    w6_ctx *c = vc;
    int64_t B = c->B, T = c->T;
    gad_scope_begin();
    gad_tensor *x = gad_zeros((int64_t[]){B, T}, 2, GAD_I64), *y = gad_zeros((int64_t[]){B * T}, 1, GAD_I64);
    int64_t *xp = gad_data_mut(x), *yp = gad_data_mut(y);
    for (int64_t b = 0; b < B; b++) {
        int64_t s = gad_rng_int(c->rng, 0, c->ndata - T - 1);
        for (int64_t t = 0; t < T; t++) {
            xp[b * T + t] = c->data[s + t];
            yp[b * T + t] = c->data[s + t + 1];
        }
    }
    gad_tensor *h = gad_embedding_fused(c->emb, x);
    for (int l = 0; l < c->L; l++) h = gad_helix_block(h, &c->w[l], 1e-5);
    h = gad_mul(gad_rms_norm(h, 1e-5), c->gain);
    gad_tensor *logits = gad_reshape(gad_matmul(h, c->wout), (int64_t[]){B * T, 256}, 2);
    gad_tensor *loss = gad_cross_entropy(logits, y, GAD_REDUCE_MEAN);
    gad_tensor *g[80];
    check(gad_grad(loss, c->params, c->np, g) == GAD_OK ? loss : NULL, "W6 grad");
    check(gad_optim_step(c->opt, g) == GAD_OK ? loss : NULL, "W6 step");
    c->loss = gad_item(loss);
    gad_scope_end();
}

/* Bytes of every regular (non-link) file in /usr/share/common-licenses,
 * sorted by name (as the reference), or seeded random text when there is
 * none. */
static unsigned char *load_text(int64_t *n) {
    const char *dir = "/usr/share/common-licenses";
    struct dirent **names = NULL;
    int k = scandir(dir, &names, NULL, alphasort);
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    for (int i = 0; i < k; i++) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            FILE *f = fopen(path, "rb");
            size_t got;
            while (f && (got = fread(buf + len, 1, cap - len, f)) > 0) {
                len += got;
                if (len == cap) buf = realloc(buf, cap *= 2);
            }
            if (f) fclose(f);
        }
        free(names[i]);
    }
    free(names);
    if (len < 100000) {
        gad_rng *r = gad_rng_new(6);
        len = 200000;
        buf = realloc(buf, len);
        for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)(32 + gad_rng_int(r, 0, 95));
        gad_rng_free(r);
    }
    *n = (int64_t)len;
    return buf;
}

static double bench_w6_config(int64_t D, int64_t T, int steps, int warm, int emit_rss) {
    w6_ctx c = {.D = D, .L = 4, .B = 16, .T = T};
    gad_rng *r = gad_rng_new(7);
    c.emb = gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){256, D}, 2, GAD_F32, 0, 0.02));
    c.gain = gad_requires_grad(gad_ones(&D, 1, GAD_F32));
    c.wout = gad_requires_grad(
        gad_rng_normal_tensor(r, (int64_t[]){D, 256}, 2, GAD_F32, 0, 1.0 / sqrt((double)D)));
    c.params[c.np++] = c.emb;
    c.params[c.np++] = c.gain;
    c.params[c.np++] = c.wout;
    for (int l = 0; l < c.L; l++) {
        helix_init(r, D, &c.w[l]);
        gad_tensor **p = &c.w[l].wa;
        for (int i = 0; i < 9; i++) c.params[c.np++] = p[i];
    }
    gad_rng_free(r);
    gad_adamw_opts o = {.lr = 3e-4, .weight_decay = 0.01};
    c.opt = gad_adamw_new(c.params, c.np, &o);
    check(c.opt, "W6 optimizer");
    c.data = load_text(&c.ndata);
    c.rng = gad_rng_new(1);
    double t[64];
    run(w6_run, &c, warm, steps, t);
    char metric[64], extra[64];
    snprintf(metric, sizeof metric, "helix_lm_tokens_per_s_D%lld_T%lld", (long long)D, (long long)T);
    snprintf(extra, sizeof extra, "\"loss_last\":%.4f", c.loss);
    emit("W6", D == 256 && T == 128 ? "helix_lm_tokens_per_s" : metric, t, steps, 1, 16.0 * (double)T,
         "tok/s", extra);
    double tok = 16.0 * (double)T / t[steps / 2];
    if (emit_rss) {
        double rss[1] = {peak_rss_mib()};
        emit("W6", "maxrss_MiB", rss, 1, 1, 0, "MiB", NULL);
    }
    gad_optim_free(c.opt);
    for (int i = 0; i < c.np; i++) gad_release(c.params[i]);
    gad_rng_free(c.rng);
    free(c.data);
    gad_cache_trim();
    return tok;
}

static void bench_w6(void) { bench_w6_config(256, 128, reps_or(20), 5, 1); }

/* ----------------------------------------------------------------- W7 */

typedef struct w7 {
    gad_tensor *a, *u, *gh;
} w7_ctx;

static void w7_run(void *vc) {
    w7_ctx *c = vc;
    gad_scope_begin();
    gad_tensor *g[2], *in[2] = {c->a, c->u};
    check(gad_grad_ex(gad_gated_scan(c->a, c->u), c->gh, in, 2, g, 0) == GAD_OK ? c : NULL,
          "W7 grad");
    gad_scope_end();
}

static void bench_w7(void) {
    int64_t s[3] = {8, 1024, 256};
    gad_rng *r = gad_rng_new(8);
    w7_ctx c;
    gad_no_grad_begin();
    c.a = gad_requires_grad(gad_sigmoid(gad_add_scalar(gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1), 3)));
    gad_no_grad_end();
    c.u = gad_requires_grad(gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1));
    c.gh = gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1);
    gad_rng_free(r);
    double t[64];
    int reps = reps_or(15);
    run(w7_run, &c, 3, reps, t);
    emit("W7", "scan_B8_T1024_D256_fwd_bwd_ms", t, reps, 1e3, 0, "ms", NULL);
    gad_release(c.a), gad_release(c.u), gad_release(c.gh);
}

/* ---------------------------------------------------------------- W10 */

/* W10: half precision (issue 29's workloads in the suite): square bf16
 * products at 256 and 1024 (gad_matmul, a new result each call, as
 * torch.matmul) and the tanh GELU and add on 16M bf16 elements with a new
 * output each call (GB/s: 2 bytes read and written per element per
 * operand). */
typedef struct w10 {
    gad_tensor *a, *b;
    int op; /* 0 matmul, 1 gelu, 2 add */
} w10_ctx;

static void w10_run(void *vc) {
    w10_ctx *c = vc;
    gad_tensor *y = c->op == 0 ? gad_matmul(c->a, c->b)
                    : c->op == 1 ? gad_gelu(c->a)
                                 : gad_add(c->a, c->b);
    check(y, "W10 op");
    gad_release(y);
}

/* A bf16 tensor of the given shape, uniform in [-1, 1). */
static gad_tensor *w10_input(gad_rng *r, const int64_t *shape, int rank) {
    gad_tensor *f = gad_rng_uniform_tensor(r, shape, rank, GAD_F32, -1, 1);
    gad_tensor *h = f ? gad_cast(f, GAD_BF16) : NULL;
    gad_release(f);
    return h;
}

static void bench_w10(void) {
    gad_rng *r = gad_rng_new(10);
    double t[64];
    for (int k = 0; k < 2; k++) {
        int64_t n = k ? 1024 : 256, sh[2] = {n, n};
        w10_ctx c = {w10_input(r, sh, 2), w10_input(r, sh, 2), 0};
        check(c.a && c.b ? c.a : NULL, "W10 inputs");
        int reps = reps_or(k ? 15 : 41);
        run(w10_run, &c, 3, reps, t);
        char metric[64];
        snprintf(metric, sizeof metric, "bf16_gemm_%lld_gflops", (long long)n);
        emit("W10", metric, t, reps, 1e-9, 2.0 * (double)n * (double)n * (double)n, "GFLOP/s",
             NULL);
        gad_release(c.a), gad_release(c.b);
    }
    int64_t n = 16 * 1024 * 1024;
    w10_ctx c = {w10_input(r, &n, 1), w10_input(r, &n, 1), 1};
    check(c.a && c.b ? c.a : NULL, "W10 inputs");
    int reps = reps_or(15);
    run(w10_run, &c, 3, reps, t);
    emit("W10", "bf16_gelu_tanh_16M_GBps", t, reps, 1e-9, 4.0 * (double)n, "GB/s", NULL);
    c.op = 2;
    run(w10_run, &c, 3, reps, t);
    emit("W10", "bf16_add_16M_GBps", t, reps, 1e-9, 6.0 * (double)n, "GB/s", NULL);
    gad_release(c.a), gad_release(c.b);
    gad_rng_free(r);
}

/* ------------------------------------------------------- GPU: G1-G4 */

/* The GPU workloads run on CUDA device 0 (choose the GPU with
 * CUDA_VISIBLE_DEVICES; bench/torch_ref.py's G workloads use the same
 * one). Without a CUDA device (a build without CUDA, no GPU or no driver)
 * each says why on stderr and is skipped: gad-bench still exits 0. Each
 * timed call queues its work and then waits for the device
 * (gad_device_sync), so the figures are what the GPU took, the host's
 * launches included where they do not keep up. */
static gad_device g_gpu = -1;

static int gpu_ready(const char *w) {
    if (g_gpu >= 0) return 1;
    gad_device d = gad_cuda(0); /* -1 and a device error saying why */
    if (d < 0) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "gad-bench: %s skipped: %s\n", w, e ? e->text : "no CUDA device");
        gad_clear_error();
        return 0;
    }
    g_gpu = d;
    return 1;
}

static void gpu_sync(const char *what) {
    if (gad_device_sync(g_gpu) == GAD_OK) return;
    check(NULL, what);
}

/* One of gad's entries into src/cuda for the direct calls (cuda.h). */
static void gpu_direct(int rc, const char *what, const char *msg) {
    if (rc == 0) return;
    fprintf(stderr, "gad-bench: %s failed: %s\n", what, msg);
    exit(1);
}

/* G1, G2: square f32 GEMM, N = 1024..8192, gad_matmul (a fresh output
 * each call, from the device's pool) and cuBLAS called directly (the same
 * SGEMM on the same handle into a preallocated output:
 * gad__cuda_bench_sgemm), strict f32 (G1) or TF32 (G2). */
typedef struct g_gemm {
    gad_tensor *a, *b, *c;
    int64_t n;
    int direct, inner;
} g_gemm_ctx;

static void g_gemm_run(void *vc) {
    g_gemm_ctx *c = vc;
    char msg[300];
    for (int i = 0; i < c->inner; i++) {
        if (c->direct) {
            gpu_direct(gad__cuda_bench_sgemm(g_gpu, c->n, c->n, c->n, gad_device_ptr(c->a),
                                             gad_device_ptr(c->b), gad_device_ptr(c->c), msg,
                                             sizeof msg),
                       "cuBLAS SGEMM", msg);
        } else {
            gad_scope_begin();
            check(gad_matmul(c->a, c->b), "GPU matmul");
            gad_scope_end();
        }
    }
    gpu_sync("GEMM");
}

static void bench_g_gemm(const char *w, int tf32) {
    if (!gpu_ready(w)) return;
    enum { BLOCKS = 3 };
    static const int64_t sizes[] = {1024, 2048, 4096, 8192};
    int old_tf32 = gad_set_tf32(tf32);
    gad_device old_dev = gad_set_default_device(g_gpu);
    gad_rng *r = gad_rng_new(21);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        g_gemm_ctx c = {gad_rng_normal_tensor(r, (int64_t[]){n, n}, 2, GAD_F32, 0, 1),
                        gad_rng_normal_tensor(r, (int64_t[]){n, n}, 2, GAD_F32, 0, 1),
                        gad_zeros((int64_t[]){n, n}, 2, GAD_F32), n, 0, 1};
        check(c.a && c.b && c.c ? c.a : NULL, "GEMM inputs");
        /* a timed call: products of at least 2^38 flops (4 ms at 67
         * TFLOP/s, under 1 ms in TF32; 128 products at N = 1024, one at
         * 8192), so that the wait at its end is a small part of it */
        double flops = 2.0 * (double)n * (double)n * (double)n;
        while ((double)c.inner * flops < 274877906944.0) c.inner *= 2;
        /* the two agree (the same cuBLAS call): their largest difference */
        c.direct = 1;
        g_gemm_run(&c);
        gad_scope_begin();
        gad_tensor *y = gad_matmul(c.a, c.b);
        gad_tensor *d = gad_reshape(gad_abs(gad_sub(y, c.c)), (int64_t[]){n * n}, 1);
        double diff = gad_item(gad_amax(d, 0, 0));
        gad_scope_end();
        int reps = reps_or(n >= 8192 ? 6 : 9);
        if (reps > 64) reps = 64;
        int per = (reps + BLOCKS - 1) / BLOCKS;
        double t[2][64 * BLOCKS];
        /* in turn, block by block, as W2: gad, direct, gad, ... */
        for (int b = 0; b < BLOCKS; b++)
            for (int impl = 0; impl < 2; impl++) {
                c.direct = impl;
                run(g_gemm_run, &c, 1, per, t[impl] + b * per);
            }
        char metric[96], extra[96];
        snprintf(extra, sizeof extra, "\"math\":\"%s\",\"max_abs_diff_gad_vs_direct\":%.3g",
                 tf32 ? "tf32" : "f32", diff);
        static const char *const impls[2] = {"gad", "cublas_direct"};
        for (int impl = 0; impl < 2; impl++) {
            qsort(t[impl], (size_t)(per * BLOCKS), sizeof(double), cmp_double);
            snprintf(metric, sizeof metric, "gemm_%lldx%lldx%lld_tflops_%s", (long long)n,
                     (long long)n, (long long)n, impls[impl]);
            emit(w, metric, t[impl], per * BLOCKS, 1e-12, flops * c.inner, "TFLOP/s", extra);
        }
        gad_release(c.a), gad_release(c.b), gad_release(c.c);
    }
    gad_rng_free(r);
    gad_set_default_device(old_dev);
    gad_set_tf32(old_tf32);
}

/* G3: elementwise add and gelu (tanh) on 2^26 f32 elements on the GPU,
 * a fresh output each call (as W3), beside a device-to-device copy of
 * the same 2^26 floats (cudaMemcpyAsync: gad__cuda_bench_copy), the
 * bandwidth the device gives a plain copy in this run. Bytes counted:
 * add 12 per element (two reads, a write), gelu and the copy 8. */
typedef struct g_ew {
    gad_tensor *a, *b, *out;
    int op; /* 0 add, 1 gelu, 2 copy */
    int inner;
} g_ew_ctx;

static void g_ew_run(void *vc) {
    g_ew_ctx *c = vc;
    char msg[300];
    for (int i = 0; i < c->inner; i++) {
        if (c->op == 2) {
            gpu_direct(gad__cuda_bench_copy(g_gpu, gad_device_ptr(c->out), gad_device_ptr(c->a),
                                            (size_t)gad_numel(c->a) * sizeof(float), msg,
                                            sizeof msg),
                       "device copy", msg);
            continue;
        }
        gad_tensor *y = c->op ? gad_gelu(c->a) : gad_add(c->a, c->b);
        check(y, "G3 op");
        gad_release(y);
    }
    gpu_sync("G3");
}

static void bench_g3(void) {
    if (!gpu_ready("G3")) return;
    int64_t n = (int64_t)1 << 26;
    gad_device old_dev = gad_set_default_device(g_gpu);
    gad_rng *r = gad_rng_new(23);
    g_ew_ctx c = {gad_rng_uniform_tensor(r, &n, 1, GAD_F32, 0, 1),
                  gad_rng_uniform_tensor(r, &n, 1, GAD_F32, 0, 1), gad_zeros(&n, 1, GAD_F32), 0,
                  10};
    gad_rng_free(r);
    check(c.a && c.b && c.out ? c.a : NULL, "G3 inputs");
    int reps = reps_or(20);
    if (reps > 64) reps = 64;
    double t[64];
    static const char *const metrics[3] = {"add_alloc_64M_GBps", "gelu_tanh_alloc_64M_GBps",
                                           "d2d_copy_64M_GBps"};
    static const double bytes[3] = {12.0, 8.0, 8.0};
    /* the copy first and last: the device's bandwidth before and after */
    static const int order[4] = {2, 0, 1, 2};
    double copy_t[2][64];
    for (int k = 0; k < 4; k++) {
        c.op = order[k];
        double *tt = c.op == 2 ? copy_t[k != 0] : t;
        run(g_ew_run, &c, 3, reps, tt);
        if (c.op != 2)
            emit("G3", metrics[c.op], tt, reps, 1e-9, bytes[c.op] * (double)n * c.inner, "GB/s",
                 NULL);
    }
    /* the copy's figure: both passes together */
    double all[128];
    memcpy(all, copy_t[0], (size_t)reps * sizeof(double));
    memcpy(all + reps, copy_t[1], (size_t)reps * sizeof(double));
    qsort(all, (size_t)(2 * reps), sizeof(double), cmp_double);
    emit("G3", metrics[2], all, 2 * reps, 1e-9, 8.0 * (double)n * c.inner, "GB/s",
         "\"note\":\"cudaMemcpyAsync device to device, before and after the ops\"");
    gad_release(c.a), gad_release(c.b), gad_release(c.out);
    gad_set_default_device(old_dev);
}

/* G4: W1's chain (1000 tracked ops on 16 elements: mul, add, tanh in
 * turn) on the GPU, forward, forward+backward and no-grad forward, each
 * call waiting for the device at its end: the cost per op of launching
 * tiny kernels, against torch's eager CUDA chain. */
static void g4_run(void *vc) {
    w1_run(vc);
    gpu_sync("G4");
}

static void bench_g4(void) {
    if (!gpu_ready("G4")) return;
    const int nops = 1000;
    gad_device old_dev = gad_set_default_device(g_gpu); /* w1_make's tensors, the seed */
    w1_ctx c = w1_make(nops);
    check(gad_device_of(c.x) == g_gpu ? c.x : NULL, "G4 inputs on the GPU");
    w1_figures("G4", g4_run, &c, nops, reps_or(31));
    gad_set_default_device(old_dev);
}

/* ----------------------------------------------- GPU: G5-G7 (HELIX) */

/* G6 and G7 in TF32 when the environment variable GAD_BENCH_TF32 is 1
 * (bench/torch_ref.py reads the same one): their metrics then end in
 * "_tf32" and their lines say "math":"tf32". Strict f32 otherwise, set
 * explicitly (as G1 does), whatever GAD_CUDA_TF32 said at start. */
static int gpu_tf32_asked(void) {
    const char *e = getenv("GAD_BENCH_TF32");
    return e && !strcmp(e, "1");
}

/* A leaf on the GPU with t's values (t is released): the HELIX weights
 * are made on the CPU by helix_init (which writes the gate-bias row in
 * host memory) and moved, so that both devices start from the same
 * weights. */
static gad_tensor *gpu_leaf(gad_tensor *t) {
    gad_no_grad_begin();
    gad_tensor *d = gad_to_device(t, g_gpu);
    gad_tensor *l = d ? gad_detach(d) : NULL;
    gad_no_grad_end();
    check(l, "moving a weight to the GPU");
    gad_release(d);
    gad_release(t);
    return gad_requires_grad(l);
}

static void helix_init_gpu(gad_rng *r, int64_t D, gad_helix_weights *w) {
    gad_device old = gad_set_default_device(GAD_CPU);
    helix_init(r, D, w);
    gad_set_default_device(old);
    gad_tensor **p = &w->wa;
    for (int i = 0; i < 9; i++) p[i] = gpu_leaf(p[i]);
}

/* Multiply-add flops of one HELIX block per token, forward and backward:
 * its five matrix products (x [D+1] @ wa, @ wb, @ wo, @ wf1 [D, 2D],
 * @ wf2 [2D, D]) are 2 (D+1) D + 12 D^2 forward, and the backward pass
 * twice that (the gradients of both operands): 3 (14 D^2 + 2 D). The
 * elementwise work, the norms and the scan (O(D) a token) are not
 * counted. At W5's size this gives docs/workloads.md's 5.6 GFLOP. */
static double helix_block_flops_per_token(int64_t D) {
    double d = (double)D;
    return 3.0 * (14.0 * d * d + 2.0 * d);
}

/* G5: W7's gated scan on the GPU at B=64 T=4096 D=1024 (f32, 2^28
 * elements, 1 GiB a tensor), forward and backward (gad_grad_ex with a
 * given output gradient, as W7), beside a device-to-device copy of one
 * such tensor (gad__cuda_bench_copy, as G3's), timed before and after
 * the scan. Bytes counted per element: the forward pass reads a and u
 * and writes h, the backward pass reads a, h and the output gradient and
 * writes both input gradients: 8 floats, 32 bytes (what the two kernels
 * of src/cuda/fused.cu move at the least; the autodiff's own allocations
 * and fills are not counted). The copy counts 8 bytes per element. */
typedef struct g5 {
    w7_ctx s;
    gad_tensor *out;
    int copy;
} g5_ctx;

static void g5_run(void *vc) {
    g5_ctx *c = vc;
    char msg[300];
    if (c->copy)
        gpu_direct(gad__cuda_bench_copy(g_gpu, gad_device_ptr(c->out), gad_device_ptr(c->s.u),
                                        (size_t)gad_numel(c->s.u) * sizeof(float), msg,
                                        sizeof msg),
                   "device copy", msg);
    else
        w7_run(&c->s);
    gpu_sync("G5");
}

static void bench_g5(void) {
    if (!gpu_ready("G5")) return;
    int64_t s[3] = {64, 4096, 1024};
    double n = 64.0 * 4096.0 * 1024.0;
    gad_device old_dev = gad_set_default_device(g_gpu);
    gad_rng *r = gad_rng_new(25);
    g5_ctx c = {{0}, NULL, 0};
    gad_no_grad_begin();
    gad_scope_begin(); /* the intermediates (2 GiB) go at its end */
    c.s.a = gad_keep(gad_requires_grad(
        gad_sigmoid(gad_add_scalar(gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1), 3))));
    gad_scope_end();
    gad_no_grad_end();
    c.s.u = gad_requires_grad(gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1));
    c.s.gh = gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1);
    c.out = gad_zeros(s, 3, GAD_F32);
    gad_rng_free(r);
    check(c.s.a && c.s.u && c.s.gh && c.out ? c.out : NULL, "G5 inputs");
    int reps = reps_or(15);
    if (reps > 64) reps = 64;
    double t[64], copy_t[128];
    c.copy = 1;
    run(g5_run, &c, 3, reps, copy_t);
    c.copy = 0;
    run(g5_run, &c, 3, reps, t);
    c.copy = 1;
    run(g5_run, &c, 0, reps, copy_t + reps);
    qsort(copy_t, (size_t)(2 * reps), sizeof(double), cmp_double);
    emit("G5", "scan_B64_T4096_D1024_fwd_bwd_ms", t, reps, 1e3, 0, "ms", NULL);
    emit("G5", "scan_B64_T4096_D1024_fwd_bwd_GBps", t, reps, 1e-9, 32.0 * n, "GB/s",
         "\"note\":\"32 bytes per element: a, u, h forward; a, h, gh, ga, gu backward\"");
    emit("G5", "d2d_copy_1G_GBps", copy_t, 2 * reps, 1e-9, 8.0 * n, "GB/s",
         "\"note\":\"cudaMemcpyAsync device to device of one 2^28-float tensor, before and "
         "after the scan\"");
    gad_release(c.s.a), gad_release(c.s.u), gad_release(c.s.gh), gad_release(c.out);
    gad_set_default_device(old_dev);
}

/* The two model sizes of G6 and G7 (issue 19): D, layers, batch, sequence length. */
static const int64_t g_helix_cfg[2][4] = {{256, 4, 64, 512}, {1024, 12, 32, 512}};
enum { G_MAX_L = 12 };

/* G6: W5 on the GPU, a stack of L HELIX blocks (W5 is one) forward and
 * backward, loss sum(y * r) with gradients of the input and every weight
 * (as W5), at g_helix_cfg's two sizes: tokens (B T) per second, the
 * model's flops per token (helix_block_flops_per_token times L) and the
 * TFLOP/s that make. */
typedef struct g6 {
    gad_tensor *x, *rr;
    gad_helix_weights w[G_MAX_L];
    int L;
} g6_ctx;

static void g6_run(void *vc) {
    g6_ctx *c = vc;
    gad_scope_begin();
    gad_tensor *p[1 + 9 * G_MAX_L], *g[1 + 9 * G_MAX_L];
    int np = 0;
    p[np++] = c->x;
    gad_tensor *h = c->x;
    for (int l = 0; l < c->L; l++) {
        gad_tensor **wp = &c->w[l].wa;
        for (int i = 0; i < 9; i++) p[np++] = wp[i];
        h = gad_helix_block(h, &c->w[l], 1e-5);
    }
    gad_tensor *loss = gad_sum_all(gad_mul(h, c->rr));
    check(gad_grad(loss, p, np, g) == GAD_OK ? loss : NULL, "G6 grad");
    gad_scope_end();
    gpu_sync("G6");
}

static void bench_g6(void) {
    if (!gpu_ready("G6")) return;
    int tf32 = gpu_tf32_asked();
    int old_tf32 = gad_set_tf32(tf32);
    gad_device old_dev = gad_set_default_device(g_gpu);
    for (int k = 0; k < 2; k++) {
        int64_t D = g_helix_cfg[k][0], L = g_helix_cfg[k][1], B = g_helix_cfg[k][2],
                T = g_helix_cfg[k][3];
        int64_t s[3] = {B, T, D};
        gad_rng *r = gad_rng_new(26);
        g6_ctx c = {0};
        c.L = (int)L;
        c.x = gad_requires_grad(gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1));
        c.rr = gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1);
        check(c.x && c.rr ? c.x : NULL, "G6 inputs");
        for (int l = 0; l < c.L; l++) helix_init_gpu(r, D, &c.w[l]);
        gad_rng_free(r);
        int reps = reps_or(k == 0 ? 11 : 7);
        if (reps > 64) reps = 64;
        double t[64], tok = (double)(B * T), fpt = (double)L * helix_block_flops_per_token(D);
        run(g6_run, &c, 2, reps, t);
        char metric[96], extra[128];
        const char *sfx = tf32 ? "_tf32" : "";
        snprintf(extra, sizeof extra, "\"math\":\"%s\",\"flop_per_token\":%.6g",
                 tf32 ? "tf32" : "f32", fpt);
        snprintf(metric, sizeof metric, "helix_stack_D%lld_L%lld_B%lld_T%lld_tokens_per_s%s",
                 (long long)D, (long long)L, (long long)B, (long long)T, sfx);
        emit("G6", metric, t, reps, 1, tok, "tok/s", extra);
        snprintf(metric, sizeof metric, "helix_stack_D%lld_L%lld_B%lld_T%lld_tflops%s",
                 (long long)D, (long long)L, (long long)B, (long long)T, sfx);
        emit("G6", metric, t, reps, 1e-12, tok * fpt, "TFLOP/s", extra);
        for (int l = 0; l < c.L; l++) {
            gad_tensor **wp = &c.w[l].wa;
            for (int i = 0; i < 9; i++) gad_release(wp[i]);
        }
        gad_release(c.x), gad_release(c.rr);
        gad_cache_trim();
    }
    gad_set_default_device(old_dev);
    gad_set_tf32(old_tf32);
}

/* G7: W6 on the GPU, helix_lm's training step (byte embedding, L blocks,
 * final rms_norm times gain, logits over 256 bytes, mean cross-entropy,
 * backward, AdamW lr 3e-4 weight decay 0.01, the loss read back), at
 * W6's own size (D=256, 4 blocks, B=16, T=128: the metric is W6's, so
 * that gpu_report.py can set the GPU beside the CPU) and at
 * g_helix_cfg's two: tokens per second. Each step draws its B windows
 * of the text on the host (as W6) and writes them into the same two
 * device tensors (gad_write_i64 from gad_host_alloc's memory, as
 * helix_lm's --device cuda). */
typedef struct g7 {
    int64_t D, L, B, T;
    gad_tensor *emb, *gain, *wout, *x, *y;
    gad_helix_weights w[G_MAX_L];
    gad_tensor *params[3 + 9 * G_MAX_L];
    int np;
    gad_optim *opt;
    unsigned char *data;
    int64_t ndata, *xin, *yin;
    int host_pinned;
    gad_rng *rng;
    double loss;
} g7_ctx;

static void g7_run(void *vc) {
    g7_ctx *c = vc;
    int64_t B = c->B, T = c->T;
    for (int64_t b = 0; b < B; b++) {
        int64_t s = gad_rng_int(c->rng, 0, c->ndata - T - 1);
        for (int64_t t = 0; t < T; t++) {
            c->xin[b * T + t] = c->data[s + t];
            c->yin[b * T + t] = c->data[s + t + 1];
        }
    }
    check(gad_write_i64(c->x, c->xin, (size_t)(B * T)) == GAD_OK &&
                  gad_write_i64(c->y, c->yin, (size_t)(B * T)) == GAD_OK
              ? c->x
              : NULL,
          "G7 batch");
    gad_scope_begin();
    gad_tensor *h = gad_embedding_fused(c->emb, c->x);
    for (int l = 0; l < c->L; l++) h = gad_helix_block(h, &c->w[l], 1e-5);
    h = gad_mul(gad_rms_norm(h, 1e-5), c->gain);
    gad_tensor *logits = gad_reshape(gad_matmul(h, c->wout), (int64_t[]){B * T, 256}, 2);
    gad_tensor *loss = gad_cross_entropy(logits, c->y, GAD_REDUCE_MEAN);
    gad_tensor *g[3 + 9 * G_MAX_L];
    check(gad_grad(loss, c->params, c->np, g) == GAD_OK ? loss : NULL, "G7 grad");
    check(gad_optim_step(c->opt, g) == GAD_OK ? loss : NULL, "G7 step");
    c->loss = gad_item(loss); /* waits for the step, as helix_lm's read of the loss */
    gad_scope_end();
    gpu_sync("G7");
}

static void g7_config(int64_t D, int64_t L, int64_t B, int64_t T, int steps, int warm,
                      int tf32) {
    g7_ctx c = {.D = D, .L = L, .B = B, .T = T};
    gad_rng *r = gad_rng_new(7);
    gad_device old = gad_set_default_device(GAD_CPU);
    c.emb = gad_rng_normal_tensor(r, (int64_t[]){256, D}, 2, GAD_F32, 0, 0.02);
    c.gain = gad_ones(&D, 1, GAD_F32);
    c.wout = gad_rng_normal_tensor(r, (int64_t[]){D, 256}, 2, GAD_F32, 0, 1.0 / sqrt((double)D));
    gad_set_default_device(old);
    check(c.emb && c.gain && c.wout ? c.emb : NULL, "G7 weights");
    c.emb = gpu_leaf(c.emb), c.gain = gpu_leaf(c.gain), c.wout = gpu_leaf(c.wout);
    c.params[c.np++] = c.emb;
    c.params[c.np++] = c.gain;
    c.params[c.np++] = c.wout;
    for (int l = 0; l < c.L; l++) {
        helix_init_gpu(r, D, &c.w[l]);
        gad_tensor **p = &c.w[l].wa;
        for (int i = 0; i < 9; i++) c.params[c.np++] = p[i];
    }
    gad_rng_free(r);
    gad_adamw_opts o = {.lr = 3e-4, .weight_decay = 0.01};
    c.opt = gad_adamw_new(c.params, c.np, &o);
    check(c.opt, "G7 optimizer");
    c.x = gad_zeros((int64_t[]){B, T}, 2, GAD_I64);
    c.y = gad_zeros((int64_t[]){B * T}, 1, GAD_I64);
    check(c.x && c.y ? c.x : NULL, "G7 batch tensors");
    size_t nb = (size_t)(B * T) * sizeof(int64_t);
    c.xin = gad_host_alloc(nb);
    c.yin = gad_host_alloc(nb);
    c.host_pinned = c.xin && c.yin;
    if (!c.host_pinned) { /* pageable memory works too, more slowly */
        gad_host_free(c.xin), gad_host_free(c.yin);
        gad_clear_error();
        c.xin = malloc(nb);
        c.yin = malloc(nb);
        check(c.xin && c.yin ? c.x : NULL, "G7 host batch");
    }
    c.data = load_text(&c.ndata);
    c.rng = gad_rng_new(1);
    double t[64];
    if (steps > 64) steps = 64;
    run(g7_run, &c, warm, steps, t);
    char metric[96], extra[128];
    if (D == 256 && L == 4 && B == 16 && T == 128)
        snprintf(metric, sizeof metric, "helix_lm_tokens_per_s%s", tf32 ? "_tf32" : "");
    else
        snprintf(metric, sizeof metric, "helix_lm_tokens_per_s_D%lld_L%lld_B%lld_T%lld%s",
                 (long long)D, (long long)L, (long long)B, (long long)T, tf32 ? "_tf32" : "");
    snprintf(extra, sizeof extra, "\"math\":\"%s\",\"loss_last\":%.4f", tf32 ? "tf32" : "f32",
             c.loss);
    emit("G7", metric, t, steps, 1, (double)(B * T), "tok/s", extra);
    gad_optim_free(c.opt);
    for (int i = 0; i < c.np; i++) gad_release(c.params[i]);
    gad_release(c.x), gad_release(c.y);
    if (c.host_pinned) gad_host_free(c.xin), gad_host_free(c.yin);
    else free(c.xin), free(c.yin);
    gad_rng_free(c.rng);
    free(c.data);
    gad_cache_trim();
}

static void bench_g7(void) {
    if (!gpu_ready("G7")) return;
    int tf32 = gpu_tf32_asked();
    int old_tf32 = gad_set_tf32(tf32);
    gad_device old_dev = gad_set_default_device(g_gpu);
    g7_config(256, 4, 16, 128, reps_or(20), 5, tf32); /* W6's size */
    for (int k = 0; k < 2; k++)
        g7_config(g_helix_cfg[k][0], g_helix_cfg[k][1], g_helix_cfg[k][2], g_helix_cfg[k][3],
                  reps_or(k == 0 ? 11 : 7), 2, tf32);
    gad_set_default_device(old_dev);
    gad_set_tf32(old_tf32);
}

/* ---------------------------------------------------------- the sweep */

/* W1's chain at 10^3, 10^4, 10^5 and 10^6 ops in alternation: five blocks,
 * each with eleven calls of the shortest, five, two and one of the longer
 * ones, forward and then forward+backward. The host's speed drifts by tens
 * of percent over seconds, and figures taken a minute apart would compare
 * its states, not the chains. The middle lengths show where the cost per
 * op changes: it steps up where the graph (about 670 bytes per op) leaves
 * the caches, and is flat past that. */
static void bench_w1_scaling(void) {
    enum { BLOCKS = 5, NLEN = 4, MAXCALLS = 11 };
    static const int len[NLEN] = {1000, 10000, 100000, 1000000};
    static const char *const sfx[NLEN] = {"", "_1e4", "_1e5", "_1e6"};
    static const int calls[NLEN] = {MAXCALLS, 5, 2, 1}, warm[NLEN] = {5, 2, 1, 1};
    w1_ctx c = w1_make(0);
    double t[2][NLEN][BLOCKS * MAXCALLS];
    for (int b = 0; b < BLOCKS; b++)
        for (int bw = 0; bw < 2; bw++)
            for (int k = 0; k < NLEN; k++) {
                c.backward = bw;
                c.nops = len[k];
                run(w1_run, &c, b == 0 ? warm[k] : 0, calls[k], t[bw][k] + b * calls[k]);
            }
    const char *names[2] = {"fwd_ns_per_op", "fwd_bwd_ns_per_op"};
    char metric[64];
    for (int bw = 0; bw < 2; bw++)
        for (int k = 0; k < NLEN; k++) {
            int n = BLOCKS * calls[k];
            qsort(t[bw][k], (size_t)n, sizeof(double), cmp_double);
            snprintf(metric, sizeof metric, "%s%s", names[bw], sfx[k]);
            emit("W1", metric, t[bw][k], n, 1e9 / len[k], 0, "ns", NULL);
        }
    gad_release(c.x), gad_release(c.cm), gad_release(c.ca);
}

static void bench_w6_scaling(void) {
    const int64_t Ds[3] = {128, 256, 512}, Ts[3] = {128, 512, 2048};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) bench_w6_config(Ds[i], Ts[j], reps_or(5), 2, 0);
}

int main(int argc, char **argv) {
    const char *what = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) g_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--help")) {
            printf("usage: gad-bench [W1..W7|W10|all|G1..G7|gpu|sweep|sweep-W1|sweep-W6] [--threads N] "
                   "[--reps N]\n"
                   "  all: W1-W7 (the CPU; W8 and W9 are gpt-bench's and the cnn example's, W10\n"
                   "  half precision, bench/compare runs them); gpu: G1-G7 on CUDA device 0 (skipped without one);\n"
                   "  GAD_BENCH_TF32=1: G6 and G7 in TF32\n");
            return 0;
        } else what = argv[i];
    }
    gad_set_num_threads(g_threads);
    int all = !strcmp(what, "all");
    if (all || !strcmp(what, "W1")) bench_w1();
    if (all || !strcmp(what, "W2")) bench_w2();
    if (all || !strcmp(what, "W3")) bench_w3();
    if (all || !strcmp(what, "W4")) bench_w4();
    if (all || !strcmp(what, "W5")) bench_w5();
    if (all || !strcmp(what, "W6")) bench_w6();
    if (all || !strcmp(what, "W7")) bench_w7();
    if (!strcmp(what, "W10")) bench_w10();
    /* the GPU's workloads: not in "all", which is the CPU's suite */
    int gpu = !strcmp(what, "gpu");
    if (gpu || !strcmp(what, "G1")) bench_g_gemm("G1", 0);
    if (gpu || !strcmp(what, "G2")) bench_g_gemm("G2", 1);
    if (gpu || !strcmp(what, "G3")) bench_g3();
    if (gpu || !strcmp(what, "G4")) bench_g4();
    if (gpu || !strcmp(what, "G5")) bench_g5();
    if (gpu || !strcmp(what, "G6")) bench_g6();
    if (gpu || !strcmp(what, "G7")) bench_g7();
    /* the sweep, whole or in its two parts */
    if (!strcmp(what, "sweep") || !strcmp(what, "sweep-W6")) bench_w6_scaling();
    if (!strcmp(what, "sweep") || !strcmp(what, "sweep-W1")) bench_w1_scaling();
    return 0;
}
