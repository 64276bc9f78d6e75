/* test_cuda.c: the CUDA back end on a GPU (built only with GAD_CUDA; run by
 * tests/cuda/check.sh on a GPU machine, and by ctest everywhere, where it
 * skips with exit code 77 when no CUDA device is present).
 *
 * What it checks, against the CPU as the reference:
 * - every op of the registry (src/ops/ops.def), forward and backward, on
 *   every gradcheck sample, on the CUDA device: values and gradients equal
 *   the CPU's within 1e-10 relative (f64) or 1e-5 (f32), results and
 *   gradients stay on the device; the same with every input made a
 *   strided (transposed-storage) view; f64 samples pass gradcheck there,
 *   and gradgradcheck where the sample is smooth;
 * - broadcasts, transposed and batched matrix products, empty tensors;
 * - two runs of the same work give the same bits (deterministic kernels);
 * - gad_host_alloc gives pinned memory, gad_write_f32 fills a GPU tensor;
 * - an allocation larger than the GPU reports a memory error and the
 *   device works after it; an out-of-range index (checked on the device,
 *   deferred) lets its op return, gives 0 where it was (adds nothing in a
 *   scatter), and is reported as an index error naming the op and the
 *   value at the next synchronising call, the first of several only, even
 *   for a result never read, beside a pending fault when there is one;
 *   the device is usable after it;
 * - a storage made by one thread and freed by another while the first
 *   thread's kernels still write it: its memory is not handed out again
 *   before they end;
 * - GEMM timing of gad_matmul beside cuBLAS called directly (figures
 *   printed, never asserted);
 * - last, as it ends the device's CUDA context: a real fault in a kernel
 *   (an illegal address) is reported, and every later call on the device
 *   fails with a device error naming it.
 * The tests are listed in TESTS below: the program prints the list first
 * ("plan: N tests: ..."; `test_cuda --list` prints it alone, without a
 * GPU), so that tests/cuda/check.sh counts a test that never reported (a
 * crash, a time-out) as failed. The two tests added for issue 32 (the
 * free across threads, the final fault) are compiled, not yet run on a
 * GPU. */
#include "test.h"

#include "backend/backend.h"
#include "cuda/cuda.h"
#include "cuda/cuda_abi.h"
#include "gad_int.h"
#include "ops/ops_int.h"
#include "test_registry.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <time.h>

static int CU = -1; /* gad's device number of CUDA device 0 */

/* A copy of t on the GPU (a leaf again if t was one), scope-owned. */
static gad_tensor *to_cu(gad_tensor *t) {
    if (!t) return NULL;
    gad_tensor *d = gad__own(gad__to_dev("cuda", t, CU));
    return d && gad_is_leaf(t) ? gad_requires_grad(d) : d;
}

/* The same values as t (on t's device) in a strided layout: rank >= 2
 * tensors are stored transposed in their last two axes and viewed back;
 * rank 1 tensors of two or more elements are every other element of a
 * buffer twice as long. A leaf stays the leaf behind the view, so
 * gradients reach it. */
static gad_tensor *strided(gad_tensor *t) {
    if (!t || gad_numel(t) < 2 || gad_dtype(t) == GAD_I64) return t;
    int r = gad_rank(t);
    if (r >= 2) {
        int ax[GAD_MAX_RANK];
        for (int i = 0; i < r; i++) ax[i] = i;
        ax[r - 2] = r - 1;
        ax[r - 1] = r - 2;
        return gad_permute(gad_contiguous(gad_permute(t, ax, r)), ax, r);
    }
    if (r == 1) {
        int64_t n = gad_shape(t)[0], col[2] = {n, 1};
        gad_tensor *pair = gad_cat((gad_tensor *[]){gad_reshape(t, col, 2),
                                                    gad_reshape(gad_zeros_like(t), col, 2)},
                                   2, 1);
        return gad_select(pair, 1, 0); /* stride 2 */
    }
    return t;
}

#define MAXEL (1 << 20)

/* a's values within tol of b's, relative to max(1, |b|); NaN equal to NaN.
 * Shapes and dtypes must agree. */
static int close_to(gad_tensor *a, gad_tensor *b, double tol, double *worst) {
    static double va[MAXEL], vb[MAXEL];
    *worst = 0;
    if (!a || !b || gad_dtype(a) != gad_dtype(b) || gad_rank(a) != gad_rank(b)) return 0;
    for (int i = 0; i < gad_rank(a); i++)
        if (gad_shape(a)[i] != gad_shape(b)[i]) return 0;
    int64_t n = gad_numel(a);
    if (n > MAXEL || gad_read_f64(a, va, MAXEL) != GAD_OK || gad_read_f64(b, vb, MAXEL) != GAD_OK)
        return 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(va[i]) || isnan(vb[i])) {
            if (!(isnan(va[i]) && isnan(vb[i]))) return 0;
            continue;
        }
        if (isinf(va[i]) || isinf(vb[i])) {
            if (va[i] != vb[i]) return 0;
            continue;
        }
        double s = fabs(vb[i]) > 1 ? fabs(vb[i]) : 1, e = fabs(va[i] - vb[i]) / s;
        if (e > *worst) *worst = e;
    }
    return *worst <= tol;
}

static double tol_of(gad_tensor *t) { return gad_dtype(t) == GAD_F64 ? 1e-10 : 1e-5; }

/* Same bits (both on any device). */
static int same_bits(gad_tensor *a, gad_tensor *b) {
    double w;
    return close_to(a, b, 0, &w) && w == 0;
}

/* sum(y * w) with fixed weights w on y's device. */
static gad_tensor *project(gad_tensor *y, gad_rng *r) {
    gad_tensor *w = gad_rng_uniform_tensor(r, gad_shape(y), gad_rank(y), gad_dtype(y), 0.5, 1.5);
    if (y->dev != GAD_DEV_HOST) w = gad__own(gad__to_dev("cuda", w, y->dev));
    return gad_sum_all(gad_mul(y, w));
}

static int dev_sync(void) { return gad__devmem[CU]->sync("test_cuda", CU); }

static const char *err_text(void) {
    return gad_last_error() ? gad_last_error()->text : "";
}

/* ---------------------------------------------------------- the registry */

/* Every op on every sample, on the GPU against the CPU; with `layout` 1
 * every GPU input is first made a strided view of the same values. */
static void registry_run(int layout, int *ops_out, int *cases_out) {
    gad_rng *rng = gad_rng_new(91 + (uint64_t)layout);
    int ops = 0, cases = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        const gad_op_entry *e = &gad__ops[op];
        int mine = 0;
        for (int v = 0;; v++) {
            gad_op_sample s;
            if (!test_sample(op, rng, v, &s)) break;
            mine++;
            gad_tensor *y = s.apply(&s, s.in, s.n);
            gad_tensor *leaves[12], *dleaves[12], *g[12], *dg[12], *din[12];
            int nl = 0;
            for (int i = 0; i < s.n; i++) {
                gad_tensor *d = to_cu(s.in[i]);
                din[i] = layout ? strided(d) : d;
                if (s.in[i] && gad_is_leaf(s.in[i])) {
                    leaves[nl] = s.in[i];
                    dleaves[nl++] = d;
                }
            }
            gad_tensor *dy = s.apply(&s, din, s.n);
            CHECK_MSG(dy != NULL, "%s %s on cuda (layout %d): %s", e->info.name, s.what, layout,
                      err_text());
            if (!y || !dy) {
                gad_clear_error();
                gad_scope_end();
                continue;
            }
            /* (an op of no tensor input, sinusoidal_positions, makes its
             * result on the CPU) */
            int inputs = 0;
            for (int i = 0; i < s.n; i++) inputs += s.in[i] != NULL;
            CHECK_MSG(dy->dev == CU || !inputs, "%s %s: the result is on %s", e->info.name,
                      s.what, gad__device_name(dy->dev));
            double worst;
            CHECK_MSG(close_to(dy, y, tol_of(y), &worst), "%s %s (layout %d): values differ "
                      "from the CPU's (worst %.3g)", e->info.name, s.what, layout, worst);
            gad_rng *r1 = gad_rng_new(5 + (uint64_t)v), *r2 = gad_rng_new(5 + (uint64_t)v);
            gad_tensor *L = gad_is_tracked(y) ? project(y, r1) : NULL;
            gad_tensor *dL = gad_is_tracked(dy) ? project(dy, r2) : NULL;
            gad_rng_free(r1);
            gad_rng_free(r2);
            int gok = L && dL && gad_grad(L, leaves, nl, g) == GAD_OK &&
                      gad_grad(dL, dleaves, nl, dg) == GAD_OK;
            CHECK_MSG(gok || nl == 0 || !gad_is_tracked(y), "%s %s: grad failed: %s",
                      e->info.name, s.what, err_text());
            for (int q = 0; gok && q < nl; q++) {
                CHECK_MSG(dg[q]->dev == CU, "%s %s: gradient %d is on %s", e->info.name, s.what,
                          q, gad__device_name(dg[q]->dev));
                CHECK_MSG(close_to(dg[q], g[q], tol_of(g[q]), &worst),
                          "%s %s (layout %d): gradient %d differs from the CPU's (worst %.3g)",
                          e->info.name, s.what, layout, q, worst);
            }
            int f64 = 1;
            for (int i = 0; i < s.n; i++)
                if (din[i] && gad_is_leaf(din[i]) && gad_dtype(din[i]) != GAD_F64) f64 = 0;
            if (layout == 0 && f64 && nl > 0) {
                gad_gradcheck_result res;
                gad_status st = gad_gradcheck(s.apply, &s, din, s.n, NULL, &res);
                CHECK_MSG(st == GAD_OK && res.passed, "%s %s: gradcheck on cuda: %s (rel %.3g)",
                          e->info.name, s.what, st != GAD_OK ? err_text() : "", res.rel_err);
                if (s.smooth) {
                    st = gad_gradgradcheck(s.apply, &s, din, s.n, NULL, &res);
                    CHECK_MSG(st == GAD_OK && res.passed,
                              "%s %s: gradgradcheck on cuda: %s (rel %.3g)", e->info.name,
                              s.what, st != GAD_OK ? err_text() : "", res.rel_err);
                }
            }
            CHECK_MSG(dev_sync() == 0, "%s %s: a device fault: %s", e->info.name, s.what,
                      err_text());
            gad_clear_error();
            gad_scope_end();
            cases++;
        }
        if (mine) ops++;
    }
    gad_rng_free(rng);
    *ops_out = ops;
    *cases_out = cases;
}

TEST(every_op_on_cuda) {
    int ops, cases;
    registry_run(0, &ops, &cases);
    printf("  %d ops, %d cases on cuda within 1e-10 (f64) / 1e-5 (f32) of the CPU\n", ops, cases);
    CHECK(ops >= 40);
}

TEST(every_op_on_strided_inputs) {
    int ops, cases;
    registry_run(1, &ops, &cases);
    printf("  %d ops, %d cases on strided views\n", ops, cases);
    CHECK(ops >= 40);
}

/* --------------------------------------------------- broadcast, empty */

typedef gad_tensor *(*bin_fn)(gad_tensor *, gad_tensor *);

/* f(a, b) and its gradients on both devices, compared. */
static void both(const char *what, bin_fn f, gad_tensor *a, gad_tensor *b) {
    gad_scope_begin();
    a = gad_requires_grad(a);
    b = gad_requires_grad(b);
    gad_tensor *da = to_cu(a), *db = to_cu(b);
    gad_tensor *y = f(a, b), *dy = f(da, db);
    double w;
    CHECK_MSG(y && dy && dy->dev == CU && close_to(dy, y, tol_of(y), &w), "%s: %s (worst %g)",
              what, err_text(), y && dy ? w : -1);
    gad_tensor *in[2] = {a, b}, *din[2] = {da, db}, *g[2], *dg[2];
    gad_rng *r1 = gad_rng_new(3), *r2 = gad_rng_new(3);
    int ok = y && dy && gad_grad(project(y, r1), in, 2, g) == GAD_OK &&
             gad_grad(project(dy, r2), din, 2, dg) == GAD_OK;
    gad_rng_free(r1);
    gad_rng_free(r2);
    CHECK_MSG(ok, "%s: grad: %s", what, err_text());
    for (int i = 0; ok && i < 2; i++)
        CHECK_MSG(close_to(dg[i], g[i], tol_of(g[i]), &w), "%s: gradient %d (worst %g)", what, i,
                  w);
    gad_clear_error();
    gad_scope_end();
}

static gad_tensor *mm(gad_tensor *a, gad_tensor *b) { return gad_matmul(a, b); }
static gad_tensor *mm_tt(gad_tensor *a, gad_tensor *b) {
    return gad_matmul(gad_transpose(a), gad_transpose(b));
}

TEST(broadcasts_and_products) {
    gad_rng *r = gad_rng_new(17);
    static const bin_fn fns[] = {gad_add, gad_sub, gad_mul, gad_div, gad_maximum, gad_minimum};
    static const char *names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
    for (int dt = 0; dt < 2; dt++) {
        gad_dtype_t t = dt ? GAD_F64 : GAD_F32;
        for (int i = 0; i < 6; i++) {
            gad_scope_begin();
            both(names[i], fns[i], gad_rng_uniform_tensor(r, (int64_t[]){3, 1, 4}, 3, t, 0.5, 2),
                 gad_rng_uniform_tensor(r, (int64_t[]){5, 1}, 2, t, 0.5, 2));
            both(names[i], fns[i], gad_rng_uniform_tensor(r, (int64_t[]){1}, 1, t, 0.5, 2),
                 gad_rng_uniform_tensor(r, (int64_t[]){2, 3, 7}, 3, t, 0.5, 2));
            gad_scope_end();
        }
        gad_scope_begin();
        /* batched with a broadcast batch, 1-D operands, transposed views */
        both("matmul batch", mm, gad_rng_normal_tensor(r, (int64_t[]){2, 1, 3, 4}, 4, t, 0, 1),
             gad_rng_normal_tensor(r, (int64_t[]){5, 4, 6}, 3, t, 0, 1));
        both("matmul shared b", mm, gad_rng_normal_tensor(r, (int64_t[]){4, 7, 5}, 3, t, 0, 1),
             gad_rng_normal_tensor(r, (int64_t[]){5, 3}, 2, t, 0, 1));
        both("matmul 1-D a", mm, gad_rng_normal_tensor(r, (int64_t[]){5}, 1, t, 0, 1),
             gad_rng_normal_tensor(r, (int64_t[]){3, 5, 2}, 3, t, 0, 1));
        both("matmul 1-D b", mm, gad_rng_normal_tensor(r, (int64_t[]){3, 4, 5}, 3, t, 0, 1),
             gad_rng_normal_tensor(r, (int64_t[]){5}, 1, t, 0, 1));
        both("matmul transposed", mm_tt, gad_rng_normal_tensor(r, (int64_t[]){33, 17}, 2, t, 0, 1),
             gad_rng_normal_tensor(r, (int64_t[]){9, 33}, 2, t, 0, 1));
        both("matmul large", mm, gad_rng_normal_tensor(r, (int64_t[]){64, 200}, 2, t, 0, 1),
             gad_rng_normal_tensor(r, (int64_t[]){200, 48}, 2, t, 0, 1));
        gad_scope_end();
    }
    gad_rng_free(r);
}

TEST(empty_tensors) {
    gad_scope_begin();
    gad_tensor *e = to_cu(gad_zeros((int64_t[]){0, 3}, 2, GAD_F32));
    gad_tensor *s = gad_sum(e, (int[]){0}, 1, 0);
    double v[3] = {1, 1, 1};
    CHECK(s && s->dev == CU && gad_read_f64(s, v, 3) == GAD_OK && v[0] == 0 && v[2] == 0);
    gad_tensor *a = gad_add(e, e), *x = gad_exp(e), *sm = gad_softmax(e, 1);
    CHECK(a && x && sm && gad_numel(a) == 0 && gad_numel(sm) == 0 && a->dev == CU);
    gad_tensor *p = gad_matmul(to_cu(gad_ones((int64_t[]){2, 0}, 2, GAD_F64)),
                               to_cu(gad_ones((int64_t[]){0, 3}, 2, GAD_F64)));
    double pv[6] = {1, 1, 1, 1, 1, 1};
    CHECK(p && gad_read_f64(p, pv, 6) == GAD_OK && pv[0] == 0 && pv[5] == 0);
    gad_tensor *cat = gad_cat((gad_tensor *[]){e, to_cu(gad_ones((int64_t[]){2, 3}, 2, GAD_F32))},
                              2, 0);
    CHECK(cat && gad_shape(cat)[0] == 2 && gad_item(gad_sum_all(cat)) == 6);
    CHECK(dev_sync() == 0);
    gad_clear_error();
    gad_scope_end();
}

/* Reductions and softmax on shapes that take the back end's other paths
 * (the registry's samples are small): many rows or many outputs, the
 * innermost axis kept or reduced, rows longer than a block. */
TEST(large_reductions) {
    gad_rng *r = gad_rng_new(23);
    static const int64_t shapes[][3] = {{3000, 40, 1}, {40, 3000, 1}, {7, 500, 9},
                                        {300000, 3, 1}, {2, 3, 70000}};
    for (int dt = 0; dt < 2; dt++) {
        gad_dtype_t t = dt ? GAD_F64 : GAD_F32;
        for (int k = 0; k < 5; k++) {
            gad_scope_begin();
            int rank = shapes[k][2] == 1 ? 2 : 3;
            gad_tensor *x = gad_rng_normal_tensor(r, shapes[k], rank, t, 0, 1);
            gad_tensor *dx = to_cu(x);
            double w;
            for (int ax = 0; ax < rank; ax++) {
                int axes[2] = {ax, (ax + 2) % rank};
                int na = rank == 3 && ax != 1 ? 2 : 1;
                gad_tensor *y = gad_sum(x, axes, na, 0), *dy = gad_sum(dx, axes, na, 0);
                CHECK_MSG(close_to(dy, y, tol_of(y), &w), "sum %d axis %d: worst %g", k, ax, w);
                y = gad_amax(x, ax, 0);
                dy = gad_amax(dx, ax, 0);
                CHECK_MSG(close_to(dy, y, 0, &w), "amax %d axis %d", k, ax);
                y = gad_argmax(x, ax, 0);
                dy = gad_argmax(dx, ax, 0);
                CHECK_MSG(close_to(dy, y, 0, &w), "argmax %d axis %d", k, ax);
                y = gad_softmax(x, ax);
                dy = gad_softmax(dx, ax);
                CHECK_MSG(close_to(dy, y, tol_of(y), &w), "softmax %d axis %d: worst %g", k, ax,
                          w);
                y = gad_log_softmax(x, ax);
                dy = gad_log_softmax(dx, ax);
                CHECK_MSG(close_to(dy, y, tol_of(y), &w), "log_softmax %d axis %d: worst %g", k,
                          ax, w);
            }
            gad_tensor *y = gad_sum_all(x), *dy = gad_sum_all(dx);
            CHECK_MSG(close_to(dy, y, tol_of(y), &w), "sum_all %d: worst %g", k, w);
            CHECK(dev_sync() == 0);
            gad_clear_error();
            gad_scope_end();
        }
    }
    gad_rng_free(r);
}

/* -------------------------------------------------------- determinism */

/* A loss over large reductions, softmax, products, gathers and scatters;
 * its value and gradients as host tensors. */
static void det_run(gad_tensor **out) {
    gad_rng *r = gad_rng_new(1234);
    gad_tensor *x = to_cu(gad_requires_grad(
        gad_rng_normal_tensor(r, (int64_t[]){256, 1000}, 2, GAD_F32, 0, 1)));
    gad_tensor *w = to_cu(gad_requires_grad(
        gad_rng_normal_tensor(r, (int64_t[]){1000, 333}, 2, GAD_F32, 0, 0.05)));
    gad_tensor *idx = to_cu(gad_rng_int_tensor(r, (int64_t[]){512, 333}, 2, 0, 256));
    gad_rng_free(r);
    gad_tensor *h = gad_log_softmax(gad_matmul(x, w), 1);
    gad_tensor *gth = gad_gather(h, 0, idx); /* its VJP scatters with duplicates */
    gad_tensor *L = gad_add(gad_sum_all(gad_mul(gth, gth)), gad_sum_all(gad_exp(x)));
    gad_tensor *in[2] = {x, w}, *g[2];
    CHECK(gad_grad(L, in, 2, g) == GAD_OK);
    out[0] = gad__own(gad__to_dev("test", L, GAD_DEV_HOST));
    out[1] = gad__own(gad__to_dev("test", g[0], GAD_DEV_HOST));
    out[2] = gad__own(gad__to_dev("test", g[1], GAD_DEV_HOST));
}

TEST(two_runs_same_bits) {
    gad_scope_begin();
    gad_tensor *a[3], *b[3];
    det_run(a);
    det_run(b);
    for (int i = 0; i < 3; i++)
        CHECK_MSG(a[i] && b[i] && gad_numel(a[i]) == gad_numel(b[i]) &&
                      memcmp(gad_data(a[i]), gad_data(b[i]),
                             (size_t)gad_numel(a[i]) * gad__dsize(a[i]->dtype)) == 0,
                  "result %d differs between two runs", i);
    gad_clear_error();
    gad_scope_end();
}

/* gad_host_alloc gives page-locked memory when there is a GPU, and
 * gad_write_* fills a GPU tensor from it in place (issue 19's batches). */
TEST(pinned_memory_and_writes) {
    gad_scope_begin();
    float *src = gad_host_alloc(1000 * sizeof *src), got[1000];
    CHECK_MSG(src && gad_host_is_pinned(src), "gad_host_alloc did not give pinned memory");
    for (int i = 0; src && i < 1000; i++) src[i] = (float)i * 0.25f;
    gad_tensor *d = to_cu(gad_zeros((int64_t[]){10, 100}, 2, GAD_F32));
    gad_tensor *old = gad_detach(d), *keep = d;
    CHECK(src && gad_write_f32(d, src, 1000) == GAD_OK && d == keep && gad_device_of(d) == CU);
    CHECK(gad_read_f32(d, got, 1000) == GAD_OK && got[0] == 0 && got[999] == 999 * 0.25f);
    CHECK(gad_read_f32(old, got, 1000) == GAD_OK && got[999] == 0); /* copy-on-write */
    gad_host_free(src);
    gad_clear_error();
    gad_scope_end();
}

/* gad_mem_stats and gad_device_mem_stats on the GPU: a storage's bytes
 * are in device_live_bytes (not in the CPU's live_bytes) while it lives,
 * and in the pool's cache once its free is reached. */
TEST(device_memory_is_counted) {
    CHECK(gad_device_sync(CU) == GAD_OK);
    gad_mem_stats m0, m1, m2;
    int64_t l0 = -1, c0 = -1, l1 = -1, l2 = -1, c2 = -1;
    gad_mem_stats_get(&m0);
    CHECK(gad_device_mem_stats(CU, &l0, &c0) == GAD_OK && l0 >= 0 && c0 >= 0);
    int64_t n = (int64_t)1 << 20;
    gad_tensor *t = gad__tensor_new("mem", CU, GAD_F32, &n, 1);
    CHECK(t != NULL);
    gad_mem_stats_get(&m1);
    CHECK(gad_device_mem_stats(CU, &l1, NULL) == GAD_OK);
    CHECK_MSG(l1 == l0 + 4 * n && m1.device_live_bytes == m0.device_live_bytes + 4 * n,
              "live %lld -> %lld, device_live_bytes %lld -> %lld", (long long)l0,
              (long long)l1, (long long)m0.device_live_bytes, (long long)m1.device_live_bytes);
    CHECK(m1.live_bytes == m0.live_bytes);
    gad_release(t);
    CHECK(gad_device_sync(CU) == GAD_OK);
    gad_mem_stats_get(&m2);
    CHECK(gad_device_mem_stats(CU, &l2, &c2) == GAD_OK);
    CHECK(l2 == l0 && m2.device_live_bytes == m0.device_live_bytes);
    CHECK_MSG(c2 >= 4 * n && m2.device_cached_bytes >= c2, "cached %lld after the free",
              (long long)c2);
    printf("  pool: %.1f MiB cached after freeing 4 MiB\n", (double)c2 / (1 << 20));
}

/* ---------------------------------------------------- errors, recovery */

TEST(out_of_memory_reports_and_recovers) {
    size_t total = 0, free_ = 0;
    long long pool = 0;
    char name[128] = "";
    CHECK(gad__cuda_info(CU, name, sizeof name, &total, &free_, &pool) == 0);
    printf("  %s: %.1f GiB, %.1f GiB free, pool %.1f MiB\n", name, (double)total / (1 << 30),
           (double)free_ / (1 << 30), (double)pool / (1 << 20));
    gad_scope_begin();
    int64_t n = (int64_t)(total / 4) * 2; /* twice the GPU's memory, in floats */
    gad_tensor *big = gad__tensor_new("oom", CU, GAD_F32, &n, 1);
    CHECK(big == NULL);
    const gad_error *e = gad_last_error();
    CHECK_MSG(e && e->kind == GAD_ERR_MEMORY, "want a memory error, got %s", err_text());
    gad_clear_error();
    /* the cache is given back when the pool cannot grow: 40% then 70% of
     * the memory, the first freed (cached) before the second */
    int64_t n40 = (int64_t)(free_ / 4) * 2 / 5, n70 = (int64_t)(free_ / 4) * 7 / 10;
    gad_tensor *t40 = gad__tensor_new("oom", CU, GAD_F32, &n40, 1);
    CHECK_MSG(t40 != NULL, "40%%: %s", err_text());
    gad_release(t40);
    gad_tensor *t70 = gad__tensor_new("oom", CU, GAD_F32, &n70, 1);
    CHECK_MSG(t70 != NULL, "70%% after 40%% freed: %s", err_text());
    gad_release(t70);
    gad_clear_error();
    /* and the device works */
    gad_tensor *x = to_cu(gad_ones((int64_t[]){1000}, 1, GAD_F64));
    CHECK(x && gad_item(gad_sum_all(gad_mul_scalar(x, 3))) == 3000);
    CHECK(dev_sync() == 0);
    gad_scope_end();
}

/* The pending error is of this kind, from op, with needle in its text. */
#define CHECK_IDX_ERR(kind_, op_, needle_)                                         \
    do {                                                                       \
        const gad_error *e_ = gad_last_error();                                \
        CHECK_MSG(e_ && e_->kind == (kind_) && !strcmp(e_->op, (op_)) &&       \
                      strstr(e_->text, (needle_)),                             \
                  "want %s error in %s (\"%s\"), got: %s", gad_status_str(kind_), (op_), \
                  (needle_), err_text());                                      \
    } while (0)

/* Index checks on the GPU are deferred (backend.h's index_check): the op
 * returns, its kernels stay in bounds (0 where the index was bad, nothing
 * added by a bad one), and the next synchronising call reports the first
 * bad index as an index error naming the op, the value and the device. */
TEST(bad_index_reported_at_the_next_sync) {
    int ord = gad__cuda_ordinal(CU);
    char where[32];
    snprintf(where, sizeof where, "found on %s", gad__device_name(CU));
    gad_scope_begin();
    /* every input there first: a copy from the host is a synchronising call */
    gad_tensor *x = to_cu(gad_requires_grad(gad_from_f64((double[]){1, 2, 3}, (int64_t[]){3}, 1)));
    gad_tensor *idx = to_cu(gad_from_i64((int64_t[]){0, 2, 3, 1, -7}, (int64_t[]){5}, 1));
    gad_tensor *neg = to_cu(gad_from_i64((int64_t[]){1, -4}, (int64_t[]){2}, 1));
    gad_tensor *ok = to_cu(gad_from_i64((int64_t[]){2, 0, -1}, (int64_t[]){3}, 1));
    gad_tensor *src = to_cu(gad_from_f64((double[]){10, 20}, (int64_t[]){2}, 1));
    gad_tensor *table = to_cu(gad_requires_grad(
        gad_from_f32((float[]){1, 2, 3, 4, 5, 6, 7, 8}, (int64_t[]){4, 2}, 2)));
    gad_tensor *eidx = to_cu(gad_from_i64((int64_t[]){1, 7, 1, -1, 2}, (int64_t[]){5}, 1));
    gad_tensor *logits = to_cu(gad_requires_grad(gad_from_f64(
        (double[]){0, 1, 2, 3, 3, 2, 1, 0, 1, 1, 1, 1}, (int64_t[]){3, 4}, 2)));
    gad_tensor *targets = to_cu(gad_from_i64((int64_t[]){1, 9, -2}, (int64_t[]){3}, 1));
    gad_tensor *mask = to_cu(gad_from_f64((double[]){1, 0, 1}, (int64_t[]){3}, 1));
    CHECK_MSG(!gad_last_error(), "setup: %s", err_text());
    double v[5];
    float f[10];

    /* gather: returns; gad_item reports; the values read again afterwards
     * hold 0 where the index was bad */
    gad_tensor *y = gad_gather(x, 0, idx);
    CHECK(y && !gad_last_error());
    CHECK(isnan(gad_item(gad_sum_all(y))));
    CHECK_IDX_ERR(GAD_ERR_INDEX, "gather", "index 3 out of bounds for size 3 at position 2");
    CHECK_IDX_ERR(GAD_ERR_INDEX, "gather", where);
    printf("  %s\n", err_text());
    gad_clear_error();
    CHECK(gad_read_f64(y, v, 5) == GAD_OK && v[0] == 1 && v[1] == 3 && v[2] == 0 &&
          v[3] == 2 && v[4] == 0);
    /* the device works after it */
    y = gad_gather(gad_mul_scalar(x, 2), 0, ok);
    CHECK(y && gad_item(gad_sum_all(y)) == 6 + 2 + 6);
    CHECK(dev_sync() == 0);

    /* take and scatter_add with a negative one, reported by a sync; the
     * scatter skips the bad entry */
    CHECK(gad_take(gad_reshape(x, (int64_t[]){1, 3}, 2), 1, gad_slice(neg, (gad_range[]){GAD_RANGE(1, 2)}, 1)));
    CHECK(dev_sync() == -1);
    CHECK_IDX_ERR(GAD_ERR_INDEX, "take", "index -4 out of bounds for size 3 at position 0");
    gad_clear_error();
    y = gad_scatter_add(x, 0, neg, src);
    CHECK(y && gad_device_sync(CU) == GAD_ERR_INDEX);
    CHECK_IDX_ERR(GAD_ERR_INDEX, "scatter_add", "index -4 out of bounds for size 3 at position 1");
    gad_clear_error();
    CHECK(gad_read_f64(y, v, 3) == GAD_OK && v[0] == 1 && v[1] == 12 && v[2] == 3);

    /* the embedding, forward and backward (CUB's sort path): good rows are
     * right, bad ones give 0 and add nothing */
    gad_tensor *e = gad_embedding_fused(table, eidx), *g = NULL;
    CHECK(e && !gad_last_error());
    CHECK(gad_grad(gad_sum_all(e), &table, 1, &g) == GAD_OK && g);
    CHECK(g && gad_read_f32(g, f, 8) == GAD_ERR_INDEX);
    CHECK_IDX_ERR(GAD_ERR_INDEX, "embedding_fused", "index 7 out of bounds [0, 4) at position 1");
    gad_clear_error();
    CHECK(g && gad_read_f32(g, f, 8) == GAD_OK && f[0] == 0 && f[1] == 0 && f[2] == 2 &&
          f[3] == 2 && f[4] == 1 && f[5] == 1 && f[6] == 0 && f[7] == 0);
    CHECK(gad_read_f32(e, f, 10) == GAD_OK && f[0] == 3 && f[1] == 4 && f[2] == 0 && f[3] == 0 &&
          f[4] == 3 && f[6] == 0 && f[7] == 0 && f[8] == 5 && f[9] == 6);

    /* masked_ce: the first weighted row's bad target (row 1 is not weighted) */
    gad_tensor *l = gad_masked_ce(logits, targets, mask);
    CHECK(l && !gad_last_error());
    CHECK(gad_grad(l, &logits, 1, &g) == GAD_OK);
    CHECK(isnan(gad_item(l)));
    CHECK_IDX_ERR(GAD_ERR_INDEX, "masked_ce", "target -2 of row 2 out of bounds for 4 classes");
    gad_clear_error();
    CHECK(dev_sync() == 0);

    /* only the first of several, and a result never read */
    gad_scope_begin();
    gad_gather(x, 0, ok);
    gad_gather(x, 0, idx);
    gad_scatter_add(x, 0, neg, src);
    gad_scope_end();
    CHECK(!gad_last_error() && dev_sync() == -1);
    CHECK_IDX_ERR(GAD_ERR_INDEX, "gather", "index 3 out of bounds for size 3 at position 2");
    gad_clear_error();
    CHECK(dev_sync() == 0);

    /* a pending fault beside an index error: one device error that names both */
    CHECK(gad_gather(x, 0, idx));
    gcu_fault_set(ord, "an injected launch");
    CHECK(gad_device_sync(CU) == GAD_ERR_DEVICE);
    CHECK_IDX_ERR(GAD_ERR_DEVICE, "device_sync", "injected");
    CHECK_IDX_ERR(GAD_ERR_DEVICE, "device_sync", "index error in gather: index 3 out of bounds");
    gad_clear_error();
    CHECK(dev_sync() == 0);

    /* and the device works */
    y = gad_gather(gad_mul_scalar(x, 2), 0, ok);
    CHECK(y && gad_item(gad_sum_all(y)) == 6 + 2 + 6);
    CHECK(dev_sync() == 0 && !gad_last_error());
    gad_scope_end();
}

/* --------------------------------------------------- the other entries */

/* Host and device copies of one random tensor (scope-owned). */
static void pair_of(gad_rng *r, int64_t n, gad_dtype_t t, double lo, double hi, gad_tensor **h,
                    gad_tensor **d) {
    *h = gad_rng_uniform_tensor(r, &n, 1, t, lo, hi);
    *d = gad__own(gad__to_dev("test", *h, CU));
}

/* The optimizers' entries give the CPU's bits (optim.cu rounds every
 * operation as src/cpu/optim.c does); sumsq too (the same order). */
TEST(optimizers_match_the_cpu_bitwise) {
    const gad_backend *cpu = &gad__cpu_backend, *cu = gad__backends[CU];
    gad_rng *r = gad_rng_new(8);
    for (int dt = 0; dt < 2; dt++) {
        gad_dtype_t t = dt ? GAD_F64 : GAD_F32;
        gad_scope_begin();
        int64_t n = 100003; /* several of the CPU's threaded blocks, and a tail */
        gad_tensor *p, *dp, *m, *dm, *v, *dv, *g, *dg;
        pair_of(r, n, t, -1, 1, &p, &dp);
        pair_of(r, n, t, -0.1, 0.1, &m, &dm);
        pair_of(r, n, t, 0, 0.01, &v, &dv);
        pair_of(r, n, t, -2, 2, &g, &dg);
        gad_adamw_coef c = {0.9, 0.1, 0.999, 0.001, 1 - pow(0.9, 3), 1 - pow(0.999, 3),
                            1e-3, 1e-8, 1 - 1e-3 * 0.01};
        for (int step = 0; step < 3; step++) {
            gad_optim_item a = {.p = p, .old = gad__ptr(p), .s1 = m, .s2 = v, .g = g,
                            .c.adamw = c};
            gad_optim_item b = {.p = dp, .old = gad__ptr(dp), .s1 = dm, .s2 = dv, .g = dg,
                            .c.adamw = c};
            cpu->adamw_step(&a, 1);
            cu->adamw_step(&b, 1);
        }
        CHECK_MSG(same_bits(dp, p) && same_bits(dm, m) && same_bits(dv, v),
                  "adamw %s differs from the CPU", dt ? "f64" : "f32");
        gad_tensor *b, *db;
        pair_of(r, n, t, -1, 1, &b, &db);
        for (int k = 0; k < 4; k++) {
            gad_sgd_coef sc = {0.01, k & 1 ? 0.001 : 0, 0.9, k == 0, k >= 2};
            gad_optim_item x = {.p = p, .old = gad__ptr(p), .s1 = k < 3 ? b : NULL, .g = g,
                            .c.sgd = sc};
            gad_optim_item y = {.p = dp, .old = gad__ptr(dp), .s1 = k < 3 ? db : NULL,
                            .g = dg, .c.sgd = sc};
            cpu->sgd_step(&x, 1);
            cu->sgd_step(&y, 1);
        }
        CHECK_MSG(same_bits(dp, p) && same_bits(db, b), "sgd %s differs from the CPU",
                  dt ? "f64" : "f32");
        /* a multi-tensor call: 20 parameters (past one launch's 16), every
         * third read out of place from another array */
        enum { NI = 20 };
        gad_optim_item hi[NI], di[NI];
        gad_tensor *hp[NI], *dpp[NI];
        for (int k = 0; k < NI; k++) {
            int64_t nk = 1 + k * 517;
            gad_tensor *hm, *dm2, *hv, *dv2, *hg, *dg2, *ho, *dpo;
            pair_of(r, nk, t, -1, 1, &hp[k], &dpp[k]);
            pair_of(r, nk, t, -0.1, 0.1, &hm, &dm2);
            pair_of(r, nk, t, 0, 0.01, &hv, &dv2);
            pair_of(r, nk, t, -2, 2, &hg, &dg2);
            pair_of(r, nk, t, -1, 1, &ho, &dpo);
            hi[k] = (gad_optim_item){.p = hp[k], .old = gad__ptr(k % 3 ? hp[k] : ho),
                                     .s1 = hm, .s2 = hv, .g = hg, .c.adamw = c};
            di[k] = (gad_optim_item){.p = dpp[k], .old = gad__ptr(k % 3 ? dpp[k] : dpo),
                                     .s1 = dm2, .s2 = dv2, .g = dg2, .c.adamw = c};
            hi[k].c.adamw.lr = di[k].c.adamw.lr = 1e-3 * (k + 1);
        }
        cpu->adamw_step(hi, NI);
        cu->adamw_step(di, NI);
        for (int k = 0; k < NI; k++)
            CHECK_MSG(same_bits(dpp[k], hp[k]) && same_bits(di[k].s1, hi[k].s1) &&
                          same_bits(di[k].s2, hi[k].s2),
                      "adamw %s item %d differs from the CPU", dt ? "f64" : "f32", k);
        for (int k = 0; k < NI; k++) {
            hi[k].s2 = di[k].s2 = NULL;
            hi[k].c.sgd = di[k].c.sgd = (gad_sgd_coef){0.01, 0.001, 0.9, 0, k % 2};
            if (k % 4 == 1) hi[k].s1 = di[k].s1 = NULL; /* plain SGD */
        }
        cpu->sgd_step(hi, NI);
        cu->sgd_step(di, NI);
        for (int k = 0; k < NI; k++)
            CHECK_MSG(same_bits(dpp[k], hp[k]) &&
                          (!hi[k].s1 || same_bits(di[k].s1, hi[k].s1)),
                      "sgd %s item %d differs from the CPU", dt ? "f64" : "f32", k);
        double s0 = cpu->sumsq(g), s1 = cu->sumsq(dg);
        CHECK_MSG(memcmp(&s0, &s1, sizeof s0) == 0, "sumsq %s: %.17g vs the CPU's %.17g",
                  dt ? "f64" : "f32", s1, s0);
        cpu->scale(g, 0.37);
        cu->scale(dg, 0.37);
        CHECK(same_bits(dg, g));
        /* all_finite and index_check, called as the ops call them */
        CHECK(cu->all_finite(dg) == true);
        gad_tensor *bad = to_cu(gad_div(gad_ones((int64_t[]){7}, 1, t),
                                        gad_cast(gad_from_f64((double[]){1, 1, 0, 1, 1, 1, 1},
                                                              (int64_t[]){7}, 1), t)));
        CHECK(bad && cu->all_finite(bad) == false);
        gad_tensor *ix = to_cu(gad_from_i64((int64_t[]){0, 4, 9, -3, 12, 2}, (int64_t[]){6}, 1));
        int64_t badv = 0; /* deferred: no answer now, the error at the sync */
        CHECK(cu->index_check("check", ix, -5, 10, &badv) == -1 && dev_sync() == -1);
        const gad_error *e = gad_last_error();
        CHECK_MSG(e && e->kind == GAD_ERR_INDEX && !strcmp(e->op, "check") &&
                      strstr(e->text, "index 12 out of bounds [-5, 10) at position 4"),
                  "got: %s", err_text());
        gad_clear_error();
        CHECK(cu->index_check("check", ix, -5, 13, &badv) == -1);
        CHECK(dev_sync() == 0);
        gad_clear_error();
        gad_scope_end();
    }
    gad_rng_free(r);
}

/* A fault the back end records (as a failed launch or a kernel's error
 * would be) is reported by the next synchronising call, a read-back or a
 * sync, as a device error with its text, once; the device then works. */
TEST(a_fault_surfaces_at_the_next_sync) {
    int ord = gad__cuda_ordinal(CU);
    CHECK(ord >= 0);
    gad_scope_begin();
    gad_tensor *x = to_cu(gad_ones((int64_t[]){4}, 1, GAD_F64));
    double v[4] = {0};
    gcu_fault_set(ord, "an injected launch");
    CHECK(gad_read_f64(x, v, 4) != GAD_OK);
    const gad_error *e = gad_last_error();
    CHECK_MSG(e && e->kind == GAD_ERR_DEVICE && strstr(e->text, "injected"), "got: %s",
              err_text());
    gad_clear_error();
    CHECK(gad_read_f64(x, v, 4) == GAD_OK && v[3] == 1);
    gcu_fault_set(ord, "an injected launch");
    CHECK(dev_sync() == -1);
    e = gad_last_error();
    CHECK_MSG(e && e->kind == GAD_ERR_DEVICE && strstr(e->text, "injected"), "got: %s",
              err_text());
    gad_clear_error();
    CHECK(dev_sync() == 0);
    CHECK(gad_item(gad_sum_all(x)) == 4);
    gad_scope_end();
}

/* ------------------------------------------- a free from another thread */

/* Thread A makes a storage and queues work that writes it last after a
 * long wait (large products, then a fill with 7), and hands it over;
 * thread B (the caller) drops the last reference at once, makes a storage
 * of the same size (the pool's freed block, as a rule) and fills it with
 * 1. The free must wait for A's queued work: without that, B's fill runs
 * at once and A's later fill of 7 lands in B's storage. */
typedef struct handoff {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gad_tensor *x;  /* A's storage, handed to B */
    int a_done;     /* A waited for its stream */
    int a_ok;
} handoff;

enum { HAND_N = 1 << 24 }; /* 64 MiB of f32 */

static void *maker(void *arg) {
    handoff *h = arg;
    int64_t n = HAND_N, sh[2] = {4096, 4096};
    gad_tensor *x = gad__tensor_new("handoff", CU, GAD_F32, &n, 1);
    gad_tensor *a = gad__tensor_zeros("handoff", CU, GAD_F32, sh, 2);
    gad_tensor *b = gad__tensor_zeros("handoff", CU, GAD_F32, sh, 2);
    int ok = x && a && b && gad_device_sync(CU) == GAD_OK;
    /* about 5.5 TFLOP of strict f32: tens of milliseconds on any GPU */
    for (int i = 0; ok && i < 40; i++) gad_release(gad_matmul(a, b));
    if (ok) gad__devmem[CU]->fill(gad_device_ptr(x), GAD_F32, n, 7.0);
    pthread_mutex_lock(&h->mu);
    h->x = x;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    ok = ok && gad_device_sync(CU) == GAD_OK;
    gad_release(a);
    gad_release(b);
    pthread_mutex_lock(&h->mu);
    h->a_ok = ok && !gad_last_error();
    h->a_done = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

TEST(a_free_waits_for_the_maker) {
    handoff h = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    pthread_t th;
    CHECK(gad_device_sync(CU) == GAD_OK);
    if (pthread_create(&th, NULL, maker, &h) != 0) {
        CHECK_MSG(0, "no thread");
        return;
    }
    pthread_mutex_lock(&h.mu);
    while (!h.x && !h.a_done) pthread_cond_wait(&h.cv, &h.mu);
    gad_tensor *x = h.x;
    pthread_mutex_unlock(&h.mu);
    CHECK_MSG(x != NULL, "thread A: %s", err_text());
    void *old = x ? gad_device_ptr(x) : NULL;
    gad_release(x); /* the last reference: freed from this thread */
    int64_t n = HAND_N;
    gad_tensor *y = gad__tensor_new("handoff", CU, GAD_F32, &n, 1);
    CHECK_MSG(y != NULL, "%s", err_text());
    int reused = y && gad_device_ptr(y) == old;
    if (y) gad__devmem[CU]->fill(gad_device_ptr(y), GAD_F32, n, 1.0);
    pthread_mutex_lock(&h.mu);
    while (!h.a_done) pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    pthread_join(th, NULL);
    CHECK_MSG(h.a_ok, "thread A's work failed");
    CHECK(dev_sync() == 0);
    /* every element 1 (a 7 anywhere: A's fill landed in y's memory) */
    double s = y ? gad_item(gad_sum_all(y)) : -1;
    printf("  the freed block %s handed out again to the new storage; its sum %.0f (want %d)\n",
           reused ? "was" : "was not", s, HAND_N);
    if (!reused) printf("  (not reused: this run does not test the ordering)\n");
    CHECK_MSG(s == (double)HAND_N, "the new storage holds %.0f, not %d: the free did not wait for "
              "the making thread's work", s, HAND_N);
    gad_release(y);
    /* a storage whose thread has ended (its stream kept until this free) */
    pthread_t t2;
    handoff h2 = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    CHECK(pthread_create(&t2, NULL, maker, &h2) == 0 && pthread_join(t2, NULL) == 0);
    CHECK(h2.a_ok && h2.x);
    gad_release(h2.x);
    CHECK(dev_sync() == 0);
    gad_clear_error();
}

/* ------------------------------------------------------------- timing */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* cuBLAS called directly on the same sizes: ms per product. */
static double cublas_ms(int n, int tf32) {
    float *a, *b, *c;
    size_t bytes = (size_t)n * (size_t)n * sizeof(float);
    if (cudaMalloc((void **)&a, bytes) != cudaSuccess) return -1;
    if (cudaMalloc((void **)&b, bytes) != cudaSuccess) return cudaFree(a), -1;
    if (cudaMalloc((void **)&c, bytes) != cudaSuccess) return cudaFree(a), cudaFree(b), -1;
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    cublasHandle_t h;
    double ms = -1;
    if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
        cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
        const float one = 1, zero = 0;
        int reps = n >= 4096 ? 5 : 20;
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n);
        cudaDeviceSynchronize();
        double t0 = now();
        for (int i = 0; i < reps; i++)
            cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n);
        cudaDeviceSynchronize();
        ms = (now() - t0) * 1e3 / reps;
        cublasDestroy(h);
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return ms;
}

static double gad_ms(int n) {
    gad_scope_begin();
    int64_t sh[2] = {n, n};
    gad_tensor *a = gad__own(gad__tensor_zeros("bench", CU, GAD_F32, sh, 2));
    gad_tensor *b = gad__own(gad__tensor_zeros("bench", CU, GAD_F32, sh, 2));
    int reps = n >= 4096 ? 5 : 20;
    gad_release(gad_matmul(a, b));
    dev_sync();
    double t0 = now();
    for (int i = 0; i < reps; i++) {
        gad_scope_begin();
        gad_matmul(a, b);
        gad_scope_end();
    }
    dev_sync();
    double ms = (now() - t0) * 1e3 / reps;
    gad_scope_end();
    return ms;
}

TEST(gemm_timing) {
    for (int tf32 = 0; tf32 < 2; tf32++) {
        gad__cuda_set_tf32(tf32);
        for (int n = 1024; n <= 8192; n *= 2) {
            double g = gad_ms(n), c = cublas_ms(n, tf32);
            double flop = 2.0 * n * (double)n * n;
            printf("  sgemm %s n=%d: gad %.3f ms (%.1f TFLOP/s), cuBLAS %.3f ms (%.1f TFLOP/s), "
                   "ratio %.3f\n",
                   tf32 ? "tf32  " : "strict", n, g, flop / g / 1e9, c, flop / c / 1e9,
                   g > 0 ? c / g : 0);
        }
    }
    gad__cuda_set_tf32(0);
    CHECK(dev_sync() == 0);
}

/* ------------------------------------------------------ the final fault */

/* A kernel that writes through a bad address (a fill of 1 MiB at 4 KiB, no
 * device memory) faults; CUDA then fails every call on the device for the
 * rest of the process. The wait that finds it is a device error naming
 * it; every later call on the device is a device error naming that first
 * fault, each time, from any op. Last of the tests: nothing runs on the
 * device after it. */
TEST(a_device_fault_is_final) {
    int ord = gad__cuda_ordinal(CU);
    gad_scope_begin();
    gad_tensor *x = to_cu(gad_ones((int64_t[]){4}, 1, GAD_F64));
    CHECK(x && dev_sync() == 0);
    gcu_fill(ord, (void *)(uintptr_t)4096, GAD_F32, 1 << 18, 3.0);
    CHECK(gad_device_sync(CU) == GAD_ERR_DEVICE);
    CHECK_MSG(strstr(err_text(), "illegal") && strstr(err_text(), "cannot be used again"), "%s",
              err_text());
    gad_clear_error();
    char first[200];
    CHECK(gcu_device_dead(ord, first, sizeof first) == 1);
    for (int i = 0; i < 2; i++) {
        CHECK(gad_device_sync(CU) == GAD_ERR_DEVICE);
        CHECK_MSG(strstr(err_text(), "unusable since a fault") && strstr(err_text(), "illegal"),
                  "%s", err_text());
        gad_clear_error();
        double v[4];
        CHECK(gad_read_f64(x, v, 4) == GAD_ERR_DEVICE && strstr(err_text(), "unusable"));
        gad_clear_error();
        /* a new tensor: a device error, not an out-of-memory one */
        gad_tensor *y = to_cu(gad_ones((int64_t[]){4}, 1, GAD_F64));
        const gad_error *e = gad_last_error();
        CHECK_MSG(!y && e && e->kind == GAD_ERR_DEVICE && strstr(e->text, "unusable"), "%s",
                  err_text());
        gad_clear_error();
    }
    gad_scope_end();
    gad_clear_error();
}

/* Every test, in order (tests/cuda/check.sh counts the ones that did not
 * report against this list). */
#define TESTS(X)                                                               \
    X(every_op_on_cuda)                                                        \
    X(every_op_on_strided_inputs)                                              \
    X(broadcasts_and_products)                                                 \
    X(empty_tensors)                                                           \
    X(large_reductions)                                                        \
    X(two_runs_same_bits)                                                      \
    X(pinned_memory_and_writes)                                                \
    X(device_memory_is_counted)                                                \
    X(optimizers_match_the_cpu_bitwise)                                        \
    X(out_of_memory_reports_and_recovers)                                      \
    X(bad_index_reported_at_the_next_sync)                                     \
    X(a_fault_surfaces_at_the_next_sync)                                       \
    X(a_free_waits_for_the_maker)                                              \
    X(gemm_timing)                                                             \
    X(a_device_fault_is_final)

#define NAME_OF(t) " " #t
#define COUNT_OF(t) +1

int main(int argc, char **argv) {
    const char *plan = TESTS(NAME_OF);
    printf("plan: %d tests:%s\n", 0 TESTS(COUNT_OF), plan);
    if (argc > 1 && !strcmp(argv[1], "--list")) return 0;
    int n = gad__cuda_init();
    char why[300];
    if (n <= 0 && gad__cuda_unavailable(why, sizeof why)) {
        printf("test_cuda: CUDA cannot be used: %s\n", why); /* a failure, not a skip */
        return 1;
    }
    if (n <= 0) {
        printf("test_cuda: no CUDA device (no GPU or no driver): skipped\n");
        return 77;
    }
    CU = gad__cuda_device(0);
    printf("test_cuda: %d CUDA device(s); device 0 is gad device %d (%s)\n", n, CU,
           gad__device_name(CU));
#define RUN_ONE(t) RUN(t);
    TESTS(RUN_ONE)
    return test_summary();
}
