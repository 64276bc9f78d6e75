/* test_pooling.c: max and average pooling (1-d, 2-d, adaptive) against
 * direct nested-loop references in f64 written from PyTorch's definitions,
 * over a grid of option combinations (kernel, stride, padding, dilation,
 * ceil_mode, count_include_pad, divisor_override, odd sizes, batch 1,
 * empty batch): values, argmax positions and gradients (each checked
 * through gad_grad of sum(y * w)); f32 against the same; ties and NaN;
 * PyTorch's errors for invalid options. Sanitizer builds walk a thinner
 * grid. Gradchecks of the ops are the registry's (test_gradcheck). */
#include "test.h"

/* A reproducible stream of doubles in [-2, 2), well apart (multiples of
 * 1/64 plus a small distinct offset) so that ties come only on purpose. */
static uint64_t rng_state = 88172645463325252ull;
static double rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 4 - 2;
}

typedef struct opts {
    int64_t k[2], s[2], p[2], d[2];
    int ceil, excl;
    int64_t div;
} opts;

/* PyTorch's output size, written out: floor or ceil of the division, then
 * the ceil-mode rule (the last window starts inside input or left pad). */
static int64_t ref_out(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, int ceil) {
    double num = (double)(n + 2 * p - d * (k - 1) - 1) / (double)s;
    int64_t o = (int64_t)(ceil ? ceilf((float)num) : floor(num)) + 1;
    if (ceil && (o - 1) * s >= n + p) o--;
    return o;
}

/* Max pooling of planes [P, H, W] by the definition: every tap of every
 * window, the first maximum, NaN winning. */
static void ref_max(const double *x, int64_t P, int64_t H, int64_t W, const opts *o,
                    int64_t Ho, int64_t Wo, double *y, int64_t *ix) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                double m = -INFINITY;
                int64_t mi = -1;
                for (int64_t i = 0; i < o->k[0]; i++)
                    for (int64_t j = 0; j < o->k[1]; j++) {
                        int64_t h = oh * o->s[0] - o->p[0] + i * o->d[0];
                        int64_t w = ow * o->s[1] - o->p[1] + j * o->d[1];
                        if (h < 0 || h >= H || w < 0 || w >= W) continue;
                        double v = x[(p * H + h) * W + w];
                        if (mi < 0 || v > m || isnan(v)) {
                            m = v;
                            mi = h * W + w;
                        }
                    }
                y[(p * Ho + oh) * Wo + ow] = m;
                ix[(p * Ho + oh) * Wo + ow] = mi;
            }
}

/* Average pooling by the definition; also its transpose (gx += g / div
 * over each window) when gy is given. */
static void ref_avg(const double *x, int64_t P, int64_t H, int64_t W, const opts *o,
                    int64_t Ho, int64_t Wo, double *y, const double *gy, double *gx) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                double s = 0;
                int64_t inside = 0, padded = 0;
                for (int64_t i = 0; i < o->k[0]; i++)
                    for (int64_t j = 0; j < o->k[1]; j++) {
                        int64_t h = oh * o->s[0] - o->p[0] + i;
                        int64_t w = ow * o->s[1] - o->p[1] + j;
                        if (h < H + o->p[0] && w < W + o->p[1]) padded++;
                        if (h < 0 || h >= H || w < 0 || w >= W) continue;
                        inside++;
                        s += x[(p * H + h) * W + w];
                    }
                double div = o->div ? (double)o->div : o->excl ? (double)inside : (double)padded;
                int64_t q = (p * Ho + oh) * Wo + ow;
                y[q] = inside ? s / div : 0;
                if (!gy || !inside) continue;
                for (int64_t i = 0; i < o->k[0]; i++)
                    for (int64_t j = 0; j < o->k[1]; j++) {
                        int64_t h = oh * o->s[0] - o->p[0] + i;
                        int64_t w = ow * o->s[1] - o->p[1] + j;
                        if (h < 0 || h >= H || w < 0 || w >= W) continue;
                        gx[(p * H + h) * W + w] += gy[q] / div;
                    }
            }
}

/* Adaptive windows (PyTorch's start/end index), by the definition. */
static void ref_adaptive(const double *x, int64_t P, int64_t H, int64_t W, int64_t Ho,
                         int64_t Wo, int max, double *y, int64_t *ix) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                int64_t h0 = (int64_t)floor((double)(oh * H) / (double)Ho);
                int64_t h1 = (int64_t)ceil((double)((oh + 1) * H) / (double)Ho);
                int64_t w0 = (int64_t)floor((double)(ow * W) / (double)Wo);
                int64_t w1 = (int64_t)ceil((double)((ow + 1) * W) / (double)Wo);
                double m = -INFINITY, s = 0;
                int64_t mi = -1;
                for (int64_t h = h0; h < h1; h++)
                    for (int64_t w = w0; w < w1; w++) {
                        double v = x[(p * H + h) * W + w];
                        s += v;
                        if (mi < 0 || v > m || isnan(v)) {
                            m = v;
                            mi = h * W + w;
                        }
                    }
                int64_t q = (p * Ho + oh) * Wo + ow;
                y[q] = max ? m : s / (double)((h1 - h0) * (w1 - w0));
                if (ix) ix[q] = mi;
            }
}

/* The max pooling's gradient by the definition: gy added at the argmax. */
static void ref_scatter(const double *gy, const int64_t *ix, int64_t P, int64_t HW, int64_t L,
                        double *gx) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t q = 0; q < L; q++) gx[p * HW + ix[p * L + q]] += gy[p * L + q];
}

static int64_t checked_cases, checked_errors;

/* y, its indices and gx = d sum(y * w) / dx against the references. kind:
 * 0 max, 1 avg, 2 adaptive max, 3 adaptive avg. dtype f32 or f64. */
static void check_case(int kind, int nd, const int64_t *shape, int rank, const opts *o,
                       int64_t aoh, int64_t aow, gad_dtype_t dt) {
    gad_scope_begin();
    int64_t n = test_numel(shape, rank);
    int64_t H = nd == 2 ? shape[rank - 2] : 1, W = shape[rank - 1];
    int64_t P = (H * W) != 0 ? n / (H * W) : 0;
    double *xv = malloc((size_t)(n + 1) * sizeof *xv);
    for (int64_t i = 0; i < n; i++) xv[i] = rnd();
    gad_tensor *x = gad_from_f64(xv, shape, rank);
    if (dt == GAD_F32) x = gad_cast(x, GAD_F32);
    gad_requires_grad(x);
    int64_t Ho, Wo;
    if (kind >= 2) {
        Ho = aoh;
        Wo = aow;
    } else {
        Ho = nd == 2 ? ref_out(H, o->k[0], o->s[0], o->p[0], o->d[0], o->ceil) : 1;
        Wo = ref_out(W, o->k[1], o->s[1], o->p[1], o->d[1], o->ceil);
    }
    gad_pool_opts po = {.ceil_mode = o->ceil, .exclude_pad = o->excl,
                        .divisor_override = o->div};
    for (int a = 0; a < 2; a++) { /* 1-d: [0] is L */
        int src = nd == 2 ? a : 1;
        po.kernel[a] = o->k[src];
        po.stride[a] = o->s[src];
        po.padding[a] = o->p[src];
        po.dilation[a] = kind == 0 ? o->d[src] : 0;
    }
    gad_tensor *ix = NULL, *y;
    switch (kind) {
    case 0: y = nd == 2 ? gad_max_pool2d(x, &po, &ix) : gad_max_pool1d(x, &po, &ix); break;
    case 1: y = nd == 2 ? gad_avg_pool2d(x, &po) : gad_avg_pool1d(x, &po); break;
    case 2: y = gad_adaptive_max_pool2d(x, aoh, aow, &ix); break;
    default: y = gad_adaptive_avg_pool2d(x, aoh, aow); break;
    }
    char what[200];
    snprintf(what, sizeof what,
             "kind %d nd %d %s [%lld,%lld] HxW %lldx%lld k %lldx%lld s %lldx%lld p %lldx%lld "
             "d %lldx%lld ceil %d excl %d div %lld out %lldx%lld",
             kind, nd, dt == GAD_F32 ? "f32" : "f64", (long long)shape[0],
             (long long)shape[1], (long long)H, (long long)W, (long long)o->k[0],
             (long long)o->k[1], (long long)o->s[0], (long long)o->s[1], (long long)o->p[0],
             (long long)o->p[1], (long long)o->d[0], (long long)o->d[1], o->ceil, o->excl,
             (long long)o->div, (long long)Ho, (long long)Wo);
    int empty = 0; /* a max window of padding only: an error here */
    for (int64_t q = 0; kind == 0 && q < Ho + Wo; q++) {
        int a = q < Ho ? 0 : 1;
        int64_t oo = a ? q - Ho : q, nn = a ? W : H, any = 0;
        for (int64_t j = 0; j < o->k[a]; j++) {
            int64_t t = oo * o->s[a] - o->p[a] + j * o->d[a];
            any |= t >= 0 && t < nn;
        }
        empty |= !any;
    }
    if (kind < 2 && (Ho < 1 || Wo < 1 || empty)) { /* PyTorch: output size is too small */
        const gad_error *e = gad_last_error();
        CHECK_MSG(!y && e && e->kind == GAD_ERR_SHAPE, "%s: expected a shape error", what);
        gad_clear_error();
        checked_errors++;
        free(xv);
        gad_scope_end();
        return;
    }
    CHECK_MSG(y != NULL, "%s: %s", what, gad_last_error() ? gad_last_error()->text : "");
    if (!y) {
        gad_clear_error();
        free(xv);
        gad_scope_end();
        return;
    }
    int64_t L = Ho * Wo, m = P * L;
    int64_t oshape[GAD_MAX_RANK];
    memcpy(oshape, shape, (size_t)rank * sizeof *oshape);
    oshape[rank - 1] = Wo;
    if (nd == 2) oshape[rank - 2] = Ho;
    CHECK_MSG(test_same_shape(y, oshape, rank), "%s: output shape", what);
    double *ry = calloc((size_t)(m + 1), sizeof *ry), *wv = malloc((size_t)(m + 1) * sizeof *wv);
    double *gx = calloc((size_t)(n + 1), sizeof *gx);
    int64_t *ri = calloc((size_t)(m + 1), sizeof *ri);
    for (int64_t i = 0; i < m; i++) wv[i] = rnd();
    /* the reference reads the input as the op saw it (f32 rounded) */
    double *xs = test_read_all(x);
    opts r = *o;
    if (kind == 1) r.d[0] = r.d[1] = 1;
    if (kind == 0) {
        ref_max(xs, P, H, W, &r, Ho, Wo, ry, ri);
        ref_scatter(wv, ri, P, H * W, L, gx);
    } else if (kind == 1) {
        ref_avg(xs, P, H, W, &r, Ho, Wo, ry, wv, gx);
    } else {
        ref_adaptive(xs, P, H, W, Ho, Wo, kind == 2, ry, ri);
        if (kind == 2) {
            ref_scatter(wv, ri, P, H * W, L, gx);
        } else { /* adaptive avg's gradient: the transpose, by the windows */
            for (int64_t p = 0; p < P; p++)
                for (int64_t oh = 0; oh < Ho; oh++)
                    for (int64_t ow = 0; ow < Wo; ow++) {
                        int64_t h0 = oh * H / Ho, h1 = ((oh + 1) * H + Ho - 1) / Ho;
                        int64_t w0 = ow * W / Wo, w1 = ((ow + 1) * W + Wo - 1) / Wo;
                        double g = wv[(p * Ho + oh) * Wo + ow] / (double)((h1 - h0) * (w1 - w0));
                        for (int64_t h = h0; h < h1; h++)
                            for (int64_t w = w0; w < w1; w++) gx[(p * H + h) * W + w] += g;
                    }
        }
    }
    double tol = dt == GAD_F32 ? 2e-6 : 1e-13;
    CHECK_CLOSE(y, ry, m, tol, "%s: values", what);
    if (ix) {
        double *riv = malloc((size_t)(m + 1) * sizeof *riv);
        for (int64_t i = 0; i < m; i++) riv[i] = (double)ri[i];
        CHECK_CLOSE(ix, riv, m, 0, "%s: indices", what);
        free(riv);
    }
    gad_tensor *wt = gad_from_f64(wv, oshape, rank), *g = NULL;
    if (dt == GAD_F32) wt = gad_cast(wt, GAD_F32);
    gad_tensor *loss = gad_sum_all(gad_mul(y, wt));
    CHECK_MSG(gad_grad(loss, &x, 1, &g) == GAD_OK, "%s: grad", what);
    CHECK_CLOSE(g, gx, n, dt == GAD_F32 ? 1e-5 : 1e-12, "%s: gradient", what);
    checked_cases++;
    free(xv);
    free(xs);
    free(ry);
    free(wv);
    free(gx);
    free(ri);
    gad_scope_end();
}

/* A small deterministic walk of a grid: every option combination is a
 * candidate, and `keep` of every `every` are checked. */
TEST(grid_2d) {
    static const int64_t sizes[][2] = {{1, 1}, {4, 5}, {7, 7}, {5, 8}, {9, 6}};
    int every = TEST_SANITIZED ? 23 : 3;
    int64_t cand = 0;
    for (int kind = 0; kind < 2; kind++)
        for (int si = 0; si < 5; si++)
            for (int64_t kh = 1; kh <= 3; kh++)
                for (int64_t kw = 1; kw <= 4; kw += 1)
                    for (int64_t st = 0; st <= 3; st++)
                        for (int64_t ph = 0; ph <= kh / 2; ph++)
                            for (int64_t pw = 0; pw <= kw / 2; pw++)
                                for (int64_t dil = 1; dil <= (kind == 0 ? 2 : 1); dil++)
                                    for (int ceil = 0; ceil < 2; ceil++)
                                        for (int ex = 0; ex < (kind ? 3 : 1); ex++) {
                                            if (cand++ % every) continue;
                                            opts o = {{kh, kw},
                                                      {st ? st : kh, st ? (st % 3) + 1 : kw},
                                                      {ph, pw},
                                                      {dil, kind ? 1 : 3 - dil},
                                                      ceil,
                                                      ex == 1,
                                                      ex == 2 ? 3 : 0};
                                            int64_t N = (int64_t)(cand % 3); /* 0, 1, 2 */
                                            int64_t shape[4] = {N, 1 + (int64_t)(cand % 2) * 2,
                                                                sizes[si][0], sizes[si][1]};
                                            gad_dtype_t dt = cand % 5 == 0 ? GAD_F32 : GAD_F64;
                                            check_case(kind, 2, shape, 4, &o, 0, 0, dt);
                                        }
    printf("  2-d: %lld cases, %lld errors checked\n", (long long)checked_cases,
           (long long)checked_errors);
}

TEST(grid_1d) {
    int every = TEST_SANITIZED ? 7 : 1;
    int64_t cand = 0;
    for (int kind = 0; kind < 2; kind++)
        for (int64_t L = 1; L <= 9; L += 2)
            for (int64_t k = 1; k <= 4; k++)
                for (int64_t s = 1; s <= 3; s++)
                    for (int64_t p = 0; p <= k / 2; p++)
                        for (int64_t d = 1; d <= (kind ? 1 : 3); d++)
                            for (int ceil = 0; ceil < 2; ceil++) {
                                if (cand++ % every) continue;
                                opts o = {{1, k}, {1, s}, {0, p}, {1, d}, ceil, (int)(cand % 2), 0};
                                int64_t shape[3] = {(int64_t)(cand % 3), 2, L};
                                check_case(kind, 1, shape, 3, &o, 0, 0, GAD_F64);
                                if (cand % 4 == 0) /* unbatched [C, L] */
                                    check_case(kind, 1, shape + 1, 2, &o, 0, 0, GAD_F32);
                            }
}

TEST(grid_adaptive) {
    static const int64_t sizes[][2] = {{1, 1}, {5, 7}, {7, 7}, {4, 9}, {10, 3}};
    static const int64_t outs[][2] = {{1, 1}, {2, 3}, {3, 3}, {5, 7}, {7, 2}, {4, 4}, {0, 2}};
    for (int kind = 2; kind < 4; kind++)
        for (int si = 0; si < 5; si++)
            for (int oi = 0; oi < 7; oi++) {
                int64_t shape[4] = {(si + oi) % 3, 2, sizes[si][0], sizes[si][1]};
                opts o;
                memset(&o, 0, sizeof o);
                check_case(kind, 2, shape, 4, &o, outs[oi][0], outs[oi][1],
                           (si + oi) % 4 == 0 ? GAD_F32 : GAD_F64);
                if (oi == 1) /* unbatched [C, H, W] */
                    check_case(kind, 2, shape + 1, 3, &o, outs[oi][0], outs[oi][1], GAD_F64);
            }
}

/* Large planes, multi-threaded, f32: the kernels' fast paths against the
 * reference (global average pooling among them). */
TEST(large_f32) {
    opts o3 = {{3, 3}, {2, 2}, {1, 1}, {1, 1}, 0, 0, 0};
    opts o2 = {{2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 0, 0};
    int64_t s1[4] = {2, 8, 33, 30};
    check_case(0, 2, s1, 4, &o3, 0, 0, GAD_F32);
    check_case(1, 2, s1, 4, &o2, 0, 0, GAD_F32);
    check_case(3, 2, s1, 4, &o2, 1, 1, GAD_F32);
    int64_t s2[4] = {3, 17, 7, 7};
    check_case(3, 2, s2, 4, &o2, 1, 1, GAD_F32);
}

/* Ties go to the first position; a NaN wins (the last one); all -inf
 * keeps the first position. */
TEST(ties_and_nan) {
    gad_scope_begin();
    double v[8] = {1, 3, 3, 0, NAN, 2, NAN, 5};
    gad_tensor *x = gad_from_f64(v, (int64_t[]){1, 1, 8}, 3), *ix;
    gad_pool_opts o = {.kernel = {4}};
    gad_tensor *y = gad_max_pool1d(x, &o, &ix);
    double ry[2] = {3, NAN}, ri[2] = {1, 6};
    CHECK_CLOSE(y, ry, 2, 0, "ties and NaN");
    CHECK_CLOSE(ix, ri, 2, 0, "their positions");
    double ninf[3] = {-INFINITY, -INFINITY, -INFINITY};
    gad_tensor *z = gad_from_f64(ninf, (int64_t[]){1, 3}, 2), *iz;
    gad_pool_opts o3 = {.kernel = {3}, .padding = {1}};
    gad_tensor *w = gad_max_pool1d(z, &o3, &iz);
    double rw[1] = {-INFINITY}, rz[1] = {0};
    CHECK_CLOSE(w, rw, 1, 0, "all -inf");
    CHECK_CLOSE(iz, rz, 1, 0, "all -inf: the first position inside");
    /* overlapping windows sum their gradients at a shared maximum */
    double u[5] = {0, 9, 1, 2, 3};
    gad_tensor *xu = gad_requires_grad(gad_from_f64(u, (int64_t[]){1, 5}, 2)), *gu = NULL;
    gad_pool_opts o2 = {.kernel = {3}, .stride = {1}};
    gad_grad(gad_sum_all(gad_max_pool1d(xu, &o2, NULL)), &xu, 1, &gu);
    double rg[5] = {0, 2, 0, 0, 1};
    CHECK_CLOSE(gu, rg, 5, 0, "overlapping windows");
    gad_scope_end();
}

#define EXPECT(kind, opname, call)                                             \
    do {                                                                       \
        gad_tensor *r_ = (call);                                               \
        CHECK(r_ == NULL);                                                     \
        CHECK_ERR(kind, opname);                                               \
    } while (0)

TEST(errors) {
    gad_scope_begin();
    gad_tensor *x = gad_zeros((int64_t[]){2, 3, 5, 5}, 4, GAD_F32);
    gad_tensor *x1 = gad_zeros((int64_t[]){2, 3, 5}, 3, GAD_F32);
    gad_pool_opts k3p2 = {.kernel = {3, 3}, .padding = {2, 2}};
    EXPECT(GAD_ERR_DOMAIN, "max_pool2d", gad_max_pool2d(x, &k3p2, NULL));
    EXPECT(GAD_ERR_DOMAIN, "avg_pool2d", gad_avg_pool2d(x, &k3p2));
    gad_pool_opts k0 = {.kernel = {0, 2}};
    EXPECT(GAD_ERR_DOMAIN, "max_pool2d", gad_max_pool2d(x, &k0, NULL));
    gad_pool_opts sneg = {.kernel = {2, 2}, .stride = {-1, 1}};
    EXPECT(GAD_ERR_DOMAIN, "avg_pool2d", gad_avg_pool2d(x, &sneg));
    gad_pool_opts dneg = {.kernel = {2, 2}, .dilation = {1, -2}};
    EXPECT(GAD_ERR_DOMAIN, "max_pool2d", gad_max_pool2d(x, &dneg, NULL));
    gad_pool_opts pneg = {.kernel = {2, 2}, .padding = {-1, 0}};
    EXPECT(GAD_ERR_DOMAIN, "max_pool2d", gad_max_pool2d(x, &pneg, NULL));
    gad_pool_opts big = {.kernel = {7, 7}};
    EXPECT(GAD_ERR_SHAPE, "max_pool2d", gad_max_pool2d(x, &big, NULL));
    EXPECT(GAD_ERR_SHAPE, "avg_pool1d", gad_avg_pool1d(x1, &big));
    gad_pool_opts dil = {.kernel = {2, 2}, .dilation = {2, 2}};
    EXPECT(GAD_ERR_DOMAIN, "avg_pool2d", gad_avg_pool2d(x, &dil));
    gad_pool_opts div = {.kernel = {2, 2}, .divisor_override = -1};
    EXPECT(GAD_ERR_DOMAIN, "avg_pool2d", gad_avg_pool2d(x, &div));
    gad_pool_opts k2 = {.kernel = {2, 2}};
    EXPECT(GAD_ERR_SHAPE, "max_pool2d",
           gad_max_pool2d(gad_zeros((int64_t[]){2, 0, 5, 5}, 4, GAD_F32), &k2, NULL));
    EXPECT(GAD_ERR_SHAPE, "max_pool2d",
           gad_max_pool2d(gad_zeros((int64_t[]){5, 5}, 2, GAD_F32), &k2, NULL));
    EXPECT(GAD_ERR_SHAPE, "max_pool1d", gad_max_pool1d(x, &k2, NULL));
    EXPECT(GAD_ERR_DTYPE, "avg_pool2d",
           gad_avg_pool2d(gad_zeros((int64_t[]){1, 1, 2, 2}, 4, GAD_I64), &k2));
    EXPECT(GAD_ERR_DOMAIN, "max_pool2d", gad_max_pool2d(x, NULL, NULL));
    EXPECT(GAD_ERR_DOMAIN, "adaptive_avg_pool2d", gad_adaptive_avg_pool2d(x, -1, 2));
    EXPECT(GAD_ERR_SHAPE, "adaptive_max_pool2d",
           gad_adaptive_max_pool2d(gad_zeros((int64_t[]){2, 3, 0, 5}, 4, GAD_F32), 2, 2, NULL));
    /* the indices pointer is cleared on error */
    gad_tensor *ix = x;
    CHECK(!gad_max_pool2d(x, &big, &ix) && ix == NULL);
    gad_clear_error();
    gad_scope_end();
}

/* Twice differentiable: d/dw of the gradient of sum(pool(x) * w) w.r.t. x,
 * contracted with v, is pool(v) (both poolings are linear in the gradient
 * path), checked for max (through the saved positions) and avg. */
TEST(double_backward) {
    gad_scope_begin();
    int64_t shape[4] = {2, 3, 6, 5};
    double xv[180], vv[180];
    for (int i = 0; i < 180; i++) {
        xv[i] = rnd();
        vv[i] = rnd();
    }
    gad_pool_opts o = {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .ceil_mode = 1};
    for (int max = 0; max < 2; max++) {
        gad_tensor *x = gad_requires_grad(gad_from_f64(xv, shape, 4)), *ix = NULL;
        gad_tensor *y = max ? gad_max_pool2d(x, &o, &ix) : gad_avg_pool2d(x, &o);
        gad_tensor *w = gad_requires_grad(gad_full_like(y, 1)), *gx = NULL, *gw = NULL;
        CHECK(gad_grad_ex(gad_sum_all(gad_mul(y, w)), NULL, &x, 1, &gx,
                          GAD_CREATE_GRAPH) == GAD_OK);
        gad_tensor *v = gad_from_f64(vv, shape, 4);
        CHECK(gad_grad(gad_sum_all(gad_mul(gx, v)), &w, 1, &gw) == GAD_OK);
        int64_t L = gad_numel(y) / 6;
        gad_tensor *ref = max ? gad_gather(gad_reshape(v, (int64_t[]){6, 30}, 2), 1,
                                           gad_reshape(ix, (int64_t[]){6, L}, 2))
                              : gad_avg_pool2d(v, &o);
        double *r = test_read_all(ref);
        CHECK_CLOSE(gw, r, gad_numel(y), 1e-13, "%s: d<grad, v>/dw", max ? "max" : "avg");
        free(r);
    }
    gad_scope_end();
}

int main(void) {
    RUN(grid_2d);
    RUN(grid_1d);
    RUN(grid_adaptive);
    RUN(large_f32);
    RUN(ties_and_nan);
    RUN(errors);
    RUN(double_backward);
    return test_summary();
}
