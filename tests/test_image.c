/* test_image.c: the shape ops for images (pad, interpolate, pixel_shuffle
 * and unshuffle, unfold and fold) against direct f64 references over a grid
 * of shapes and options, their gradients (gradcheck and gradgradcheck; the
 * gradients of pad against the reference's transpose), fold as unfold's
 * transpose, and PyTorch's errors. PyTorch's own values: test_reference. */
#include "test.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (double)(rs >> 11) / 9007199254740992.0 * 4 - 2;
}

static gad_tensor *rand_t(const int64_t *shape, int rank) {
    int64_t n = test_numel(shape, rank);
    double *v = malloc((size_t)(n + 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = rnd();
    gad_tensor *t = gad_from_f64(v, shape, rank);
    free(v);
    return t;
}

/* ------------------------------------------------------------------ pad */

/* The input position of output position o of an axis of n padded by lo,
 * or -1 (constant: outside), by each mode's definition. */
static int64_t ref_src(int mode, int64_t o, int64_t n, int64_t lo) {
    int64_t i = o - lo;
    if (mode == GAD_PAD_CONSTANT) return i >= 0 && i < n ? i : -1;
    if (mode == GAD_PAD_REPLICATE) return i < 0 ? 0 : i > n - 1 ? n - 1 : i;
    if (mode == GAD_PAD_CIRCULAR) {
        while (i < 0) i += n;
        while (i >= n) i -= n;
        return i;
    }
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i; /* reflect, bouncing */
    return i;
}

static void check_pad(const int64_t *shape, int r, const int64_t *pads, int np, int mode,
                      double value) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(rand_t(shape, r));
    gad_tensor *y = gad_pad(x, pads, np, (gad_pad_mode)mode, value);
    int64_t lo[8] = {0}, hi[8] = {0}, os[8];
    for (int i = 0; i < np / 2; i++) {
        lo[r - 1 - i] = pads[2 * i];
        hi[r - 1 - i] = pads[2 * i + 1];
    }
    for (int d = 0; d < r; d++) os[d] = shape[d] + lo[d] + hi[d];
    char what[160];
    int k = snprintf(what, sizeof what, "pad mode %d rank %d pads", mode, r);
    for (int i = 0; i < np; i++) k += snprintf(what + k, sizeof what - (size_t)k, " %lld", (long long)pads[i]);
    CHECK_MSG(test_same_shape(y, os, r), "%s: shape (%s)", what,
              gad_last_error() ? gad_last_error()->text : "");
    if (!y) {
        gad_clear_error();
        gad_scope_end();
        return;
    }
    int64_t n = test_numel(os, r), nx = test_numel(shape, r);
    double *xv = test_read_all(x), *ry = malloc((size_t)(n + 1) * sizeof *ry);
    double *w = malloc((size_t)(n + 1) * sizeof *w), *gx = calloc((size_t)(nx + 1), sizeof *gx);
    int64_t idx[8], src[8];
    for (int64_t f = 0; f < n; f++) {
        test_unflat(f, os, r, idx);
        int out = 0;
        for (int d = 0; d < r; d++) {
            src[d] = ref_src(mode, idx[d], shape[d], lo[d]);
            out |= src[d] < 0;
        }
        w[f] = rnd();
        if (out) {
            ry[f] = value;
            continue;
        }
        int64_t q = test_flat(src, shape, r);
        ry[f] = xv[q];
        gx[q] += w[f];
    }
    CHECK_CLOSE(y, ry, n, 0, "%s: values", what);
    gad_tensor *g = NULL;
    CHECK(gad_grad(gad_sum_all(gad_mul(y, gad_from_f64(w, os, r))), &x, 1, &g) == GAD_OK);
    CHECK_CLOSE(g, gx, nx, 1e-12, "%s: gradient", what);
    free(xv);
    free(ry);
    free(w);
    free(gx);
    gad_scope_end();
}

TEST(pad_grid) {
    static const int64_t shapes[][4] = {{2, 3, 4, 5}, {1, 1, 3, 3}, {2, 2, 1, 6}, {0, 2, 3, 4}};
    int every = TEST_SANITIZED ? 5 : 1, c = 0;
    for (int mode = 0; mode < 4; mode++)
        for (int si = 0; si < 4; si++)
            for (int np = 2; np <= (mode ? 6 : 8); np += 2)
                for (int v = 0; v < 6; v++) {
                    if (c++ % every) continue;
                    const int64_t *s = shapes[si];
                    int r = mode ? (np / 2 + 1 + (v & 1)) : 4;
                    if (r > 4) continue;
                    const int64_t *sh = s + (4 - r);
                    int64_t pads[8];
                    for (int i = 0; i < np; i++) {
                        int64_t n = sh[r - 1 - i / 2];
                        int64_t lim = mode == GAD_PAD_REFLECT ? n - 1 : mode == GAD_PAD_CIRCULAR ? n : 3;
                        int64_t p = (int64_t)((c * 7 + i * 3 + v) % 4);
                        if (p > lim) p = lim;
                        if (mode == GAD_PAD_CONSTANT && (v + i) % 3 == 0) p = -(p > n ? n : p) / 2;
                        if (mode && n == 0) p = 0;
                        pads[i] = p;
                    }
                    check_pad(sh, r, pads, np, mode, mode ? 0 : 1.5);
                }
}

TEST(pad_errors) {
    gad_scope_begin();
    gad_tensor *x = gad_zeros((int64_t[]){1, 1, 3, 3}, 4, GAD_F32);
    int64_t p3[4] = {3, 3, 0, 0}, p1[4] = {1, 1, 1, 1}, odd[3] = {1, 1, 1}, neg[2] = {-1, 0};
    int64_t c4[2] = {4, 0}, big[2] = {-3, -1};
    CHECK(!gad_pad(x, p3, 4, GAD_PAD_REFLECT, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "pad");
    CHECK(!gad_pad(x, odd, 3, GAD_PAD_CONSTANT, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "pad");
    CHECK(!gad_pad(x, c4, 2, GAD_PAD_CIRCULAR, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "pad");
    CHECK(!gad_pad(gad_zeros((int64_t[]){1, 3, 3}, 3, GAD_F32), neg, 2, GAD_PAD_REPLICATE, 0));
    CHECK_ERR(GAD_ERR_DOMAIN, "pad");
    CHECK(!gad_pad(x, big, 2, GAD_PAD_CONSTANT, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "pad");
    CHECK(!gad_pad(gad_zeros((int64_t[]){3}, 1, GAD_F32), p1, 2, GAD_PAD_REFLECT, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "pad"); /* a 1-D input: non-constant modes take 2D or 3D */
    CHECK(!gad_pad(x, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 10, GAD_PAD_CONSTANT, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "pad");
    CHECK(!gad_pad(gad_zeros((int64_t[]){2, 2}, 2, GAD_BOOL), p1, 2, GAD_PAD_REFLECT, 0));
    CHECK_ERR(GAD_ERR_DTYPE, "pad"); /* i64 pads in every mode, bool in circular only */
    gad_tensor *xi = gad_pad(gad_zeros((int64_t[]){2, 2}, 2, GAD_I64), p1, 4, GAD_PAD_CONSTANT, 7);
    CHECK(xi && gad_numel(xi) == 16);
    gad_scope_end();
}

/* ---------------------------------------------------------- interpolate */

/* PyTorch's upsample formulas, written out in double. */
static void ref_interp(const double *x, int64_t P, int64_t H, int64_t W, int64_t Ho, int64_t Wo,
                       int mode, int align, const double *sf, double *y) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                int64_t io[2] = {oh, ow}, n[2] = {H, W}, m[2] = {Ho, Wo}, i0[2], i1[2];
                double l1[2];
                for (int a = 0; a < 2; a++) {
                    double sc = sf ? 1.0 / sf[a] : (double)n[a] / (double)m[a];
                    if (mode == GAD_INTERP_NEAREST) {
                        int64_t i = (int64_t)floor((double)io[a] * sc);
                        i0[a] = i1[a] = i < n[a] - 1 ? i : n[a] - 1;
                        l1[a] = 0;
                        continue;
                    }
                    if (align) sc = m[a] > 1 ? (double)(n[a] - 1) / (double)(m[a] - 1) : 0;
                    double s = align ? sc * (double)io[a] : sc * ((double)io[a] + 0.5) - 0.5;
                    if (s < 0) s = 0;
                    i0[a] = (int64_t)floor(s);
                    if (i0[a] > n[a] - 1) i0[a] = n[a] - 1;
                    i1[a] = i0[a] < n[a] - 1 ? i0[a] + 1 : i0[a];
                    l1[a] = s - (double)i0[a];
                }
                const double *xp = x + p * H * W;
                double v = (1 - l1[0]) * ((1 - l1[1]) * xp[i0[0] * W + i0[1]] + l1[1] * xp[i0[0] * W + i1[1]]) +
                           l1[0] * ((1 - l1[1]) * xp[i1[0] * W + i0[1]] + l1[1] * xp[i1[0] * W + i1[1]]);
                y[(p * Ho + oh) * Wo + ow] = v;
            }
}

static gad_tensor *interp_fn(void *ctx, gad_tensor *const *in, int n) {
    const int64_t *c = ctx; /* mode, align, nd, size... */
    (void)n;
    return gad_interpolate(in[0], c + 3, NULL, (int)c[2], (gad_interp_mode)c[0], (int)c[1]);
}

TEST(interpolate_grid) {
    static const int64_t ins[][2] = {{1, 1}, {3, 4}, {5, 2}, {4, 4}};
    static const int64_t outs[][2] = {{1, 1}, {6, 8}, {2, 3}, {7, 5}, {4, 4}, {8, 2}};
    for (int mode = 0; mode < 3; mode++)
        for (int align = 0; align < (mode ? 2 : 1); align++)
            for (int ii = 0; ii < 4; ii++)
                for (int oi = 0; oi < 6; oi++)
                    for (int bysf = 0; bysf < 2; bysf++) {
                        gad_scope_begin();
                        int nd = mode == GAD_INTERP_LINEAR ? 1 : 2;
                        int64_t H = nd == 2 ? ins[ii][0] : 1, W = ins[ii][1];
                        double sf[2] = {(double)(oi + 1) / 2.0, (double)(oi + 2) / 3.0};
                        int64_t Ho = nd == 2 ? outs[oi][0] : 1, Wo = outs[oi][1];
                        if (bysf) {
                            Ho = nd == 2 ? (int64_t)floor((double)H * sf[0]) : 1;
                            Wo = (int64_t)floor((double)W * sf[1]);
                            if (Ho < 1 || Wo < 1) {
                                gad_scope_end();
                                continue;
                            }
                        }
                        int64_t shape[4] = {2, 3, H, W}, oshape[4] = {2, 3, Ho, Wo};
                        if (nd == 1) {
                            shape[2] = W;
                            oshape[2] = Wo;
                        }
                        gad_tensor *x = rand_t(shape, nd + 2);
                        int64_t size[2] = {nd == 2 ? Ho : Wo, Wo};
                        double sfa[2] = {nd == 2 ? sf[0] : sf[1], sf[1]};
                        gad_tensor *y = gad_interpolate(x, bysf ? NULL : size, bysf ? sfa : NULL,
                                                        nd, (gad_interp_mode)mode, align);
                        double *xv = test_read_all(x);
                        int64_t m = 6 * Ho * Wo;
                        double *ry = malloc((size_t)m * sizeof *ry);
                        double sf2[2] = {sf[0], sf[1]};
                        if (nd == 1) sf2[0] = 1;
                        ref_interp(xv, 6, H, W, Ho, Wo, mode == GAD_INTERP_NEAREST ? 0 : 1, align,
                                   bysf ? sf2 : NULL, ry);
                        CHECK(test_same_shape(y, oshape, nd + 2));
                        CHECK_CLOSE(y, ry, m, 1e-12,
                                    "interpolate mode %d align %d %lldx%lld -> %lldx%lld sf %d",
                                    mode, align, (long long)H, (long long)W, (long long)Ho,
                                    (long long)Wo, bysf);
                        free(xv);
                        free(ry);
                        gad_scope_end();
                    }
}

TEST(interpolate_grads) {
    gad_scope_begin();
    int64_t cases[][5] = {{GAD_INTERP_BILINEAR, 0, 2, 5, 3},
                          {GAD_INTERP_BILINEAR, 1, 2, 2, 7},
                          {GAD_INTERP_NEAREST, 0, 2, 5, 2},
                          {GAD_INTERP_LINEAR, 0, 1, 7, 0},
                          {GAD_INTERP_LINEAR, 1, 1, 2, 0}};
    for (int c = 0; c < 5; c++) {
        int nd = (int)cases[c][2];
        int64_t shape[4] = {1, 2, 3, 4};
        gad_tensor *x = gad_requires_grad(rand_t(shape, nd + 2));
        gad_gradcheck_result r;
        CHECK(gad_gradcheck(interp_fn, cases[c], &x, 1, NULL, &r) == GAD_OK && r.passed);
        CHECK(gad_gradgradcheck(interp_fn, cases[c], &x, 1, NULL, &r) == GAD_OK && r.passed);
    }
    gad_scope_end();
}

TEST(interpolate_errors) {
    gad_scope_begin();
    gad_tensor *x = gad_zeros((int64_t[]){1, 1, 3, 3}, 4, GAD_F32);
    int64_t s[2] = {4, 4};
    double sf[2] = {2, 2}, bad[2] = {0, 2};
    CHECK(!gad_interpolate(x, s, sf, 2, GAD_INTERP_BILINEAR, 0));
    CHECK_ERR(GAD_ERR_DOMAIN, "interpolate");
    CHECK(!gad_interpolate(x, NULL, NULL, 2, GAD_INTERP_BILINEAR, 0));
    CHECK_ERR(GAD_ERR_DOMAIN, "interpolate");
    CHECK(!gad_interpolate(x, s, NULL, 2, GAD_INTERP_LINEAR, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "interpolate");
    CHECK(!gad_interpolate(x, s, NULL, 2, GAD_INTERP_NEAREST, 1));
    CHECK_ERR(GAD_ERR_DOMAIN, "interpolate");
    CHECK(!gad_interpolate(x, NULL, bad, 2, GAD_INTERP_NEAREST, 0));
    CHECK_ERR(GAD_ERR_DOMAIN, "interpolate");
    CHECK(!gad_interpolate(x, (int64_t[]){0, 2}, NULL, 2, GAD_INTERP_NEAREST, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "interpolate");
    CHECK(!gad_interpolate(x, s, NULL, 1, GAD_INTERP_BILINEAR, 0));
    CHECK_ERR(GAD_ERR_SHAPE, "interpolate");
    gad_scope_end();
}

/* ------------------------------------------------------- pixel shuffle */

TEST(pixel_shuffle_roundtrip) {
    gad_scope_begin();
    int64_t shape[4] = {2, 8, 3, 5};
    gad_tensor *x = rand_t(shape, 4);
    gad_tensor *y = gad_pixel_shuffle(x, 2);
    CHECK_SHAPE(y, 2, 2, 6, 10);
    double *xv = test_read_all(x), *yv = test_read_all(y);
    int bad = 0; /* y[n, c, h r + i, w r + j] = x[n, c r^2 + i r + j, h, w] */
    for (int64_t n = 0; n < 2; n++)
        for (int64_t c = 0; c < 2; c++)
            for (int64_t h = 0; h < 3; h++)
                for (int64_t w = 0; w < 5; w++)
                    for (int64_t i = 0; i < 2; i++)
                        for (int64_t j = 0; j < 2; j++)
                            bad += yv[((n * 2 + c) * 6 + h * 2 + i) * 10 + w * 2 + j] !=
                                   xv[((n * 8 + c * 4 + i * 2 + j) * 3 + h) * 5 + w];
    CHECK(bad == 0);
    double *back = test_read_all(gad_pixel_unshuffle(y, 2));
    CHECK_CLOSE(x, back, 240, 0, "unshuffle(shuffle(x))");
    free(xv);
    free(yv);
    free(back);
    CHECK(!gad_pixel_shuffle(x, 3));
    CHECK_ERR(GAD_ERR_SHAPE, "pixel_shuffle");
    CHECK(!gad_pixel_unshuffle(x, 2));
    CHECK_ERR(GAD_ERR_SHAPE, "pixel_unshuffle");
    CHECK(!gad_pixel_shuffle(x, 0));
    CHECK_ERR(GAD_ERR_DOMAIN, "pixel_shuffle");
    CHECK(!gad_pixel_shuffle(gad_zeros((int64_t[]){4, 4}, 2, GAD_F32), 2));
    CHECK_ERR(GAD_ERR_SHAPE, "pixel_shuffle");
    gad_scope_end();
}

/* -------------------------------------------------------- unfold, fold */

static void ref_unfold(const double *x, int64_t N, int64_t C, int64_t H, int64_t W,
                       const gad_fold_opts *o, int64_t Lh, int64_t Lw, double *y) {
    int64_t kh = o->kernel[0], kw = o->kernel[1], L = Lh * Lw;
    int64_t dh = o->dilation[0] ? o->dilation[0] : 1, dw = o->dilation[1] ? o->dilation[1] : 1;
    int64_t sh = o->stride[0] ? o->stride[0] : 1, sw = o->stride[1] ? o->stride[1] : 1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < kh; i++)
                for (int64_t j = 0; j < kw; j++)
                    for (int64_t bh = 0; bh < Lh; bh++)
                        for (int64_t bw = 0; bw < Lw; bw++) {
                            int64_t h = bh * sh - o->padding[0] + i * dh;
                            int64_t w = bw * sw - o->padding[1] + j * dw;
                            double v = h >= 0 && h < H && w >= 0 && w < W
                                           ? x[((n * C + c) * H + h) * W + w] : 0;
                            y[((n * C * kh * kw) + (c * kh + i) * kw + j) * L + bh * Lw + bw] = v;
                        }
}

typedef struct fold_ctx {
    gad_fold_opts o;
    int64_t out[2];
    int fold;
} fold_ctx;

static gad_tensor *fold_fn(void *ctx, gad_tensor *const *in, int n) {
    fold_ctx *c = ctx;
    (void)n;
    return c->fold ? gad_fold(in[0], c->out, &c->o) : gad_unfold(in[0], &c->o);
}

TEST(unfold_fold_grid) {
    int c = 0, every = TEST_SANITIZED ? 7 : 1;
    for (int64_t H = 3; H <= 6; H += 3)
        for (int64_t W = 4; W <= 5; W++)
            for (int64_t kh = 1; kh <= 3; kh++)
                for (int64_t kw = 1; kw <= 2; kw++)
                    for (int64_t d = 1; d <= 2; d++)
                        for (int64_t p = 0; p <= 1; p++)
                            for (int64_t s = 1; s <= 2; s++) {
                                if (c++ % every) continue;
                                gad_scope_begin();
                                gad_fold_opts o = {{kh, kw}, {d, d == 2 ? 1 : 0}, {p, 1 - p}, {s, 3 - s}};
                                int64_t Lh = (H + 2 * p - d * (kh - 1) - 1) / s + 1;
                                int64_t dw = d == 2 ? 1 : 1;
                                int64_t Lw = (W + 2 * (1 - p) - dw * (kw - 1) - 1) / (3 - s) + 1;
                                int64_t shape[4] = {2, 3, H, W};
                                gad_tensor *x = rand_t(shape, 4);
                                gad_tensor *y = gad_unfold(x, &o);
                                if (Lh < 1 || Lw < 1 || H + 2 * p - d * (kh - 1) - 1 < 0) {
                                    CHECK(!y);
                                    CHECK_ERR(GAD_ERR_SHAPE, "unfold");
                                    gad_scope_end();
                                    continue;
                                }
                                int64_t m = 2 * 3 * kh * kw * Lh * Lw;
                                double *xv = test_read_all(x), *ry = malloc((size_t)m * sizeof *ry);
                                ref_unfold(xv, 2, 3, H, W, &o, Lh, Lw, ry);
                                CHECK_CLOSE(y, ry, m, 0, "unfold %lldx%lld k %lldx%lld d %lld p %lld s %lld",
                                            (long long)H, (long long)W, (long long)kh, (long long)kw,
                                            (long long)d, (long long)p, (long long)s);
                                /* fold is the transpose: <unfold(x), c> = <x, fold(c)> */
                                gad_tensor *cc = rand_t(gad_shape(y), 3);
                                gad_tensor *f = gad_fold(cc, (int64_t[]){H, W}, &o);
                                double a = gad_item(gad_sum_all(gad_mul(y, cc)));
                                double b = gad_item(gad_sum_all(gad_mul(x, f)));
                                CHECK_NEAR(a, b, 1e-12);
                                free(xv);
                                free(ry);
                                gad_scope_end();
                            }
}

TEST(unfold_fold_grads) {
    gad_scope_begin();
    fold_ctx c = {{{2, 3}, {1, 2}, {1, 1}, {2, 1}}, {4, 5}, 0};
    gad_tensor *x = gad_requires_grad(rand_t((int64_t[]){1, 2, 4, 5}, 4));
    gad_gradcheck_result r;
    CHECK(gad_gradcheck(fold_fn, &c, &x, 1, NULL, &r) == GAD_OK && r.passed);
    CHECK(gad_gradgradcheck(fold_fn, &c, &x, 1, NULL, &r) == GAD_OK && r.passed);
    gad_tensor *y = gad_unfold(x, &c.o);
    c.fold = 1;
    gad_tensor *cols = gad_requires_grad(rand_t(gad_shape(y), 3));
    CHECK(gad_gradcheck(fold_fn, &c, &cols, 1, NULL, &r) == GAD_OK && r.passed);
    CHECK(gad_gradgradcheck(fold_fn, &c, &cols, 1, NULL, &r) == GAD_OK && r.passed);
    /* errors */
    CHECK(!gad_fold(cols, (int64_t[]){7, 5}, &c.o));
    CHECK_ERR(GAD_ERR_SHAPE, "fold");
    gad_fold_opts k0 = {{0, 2}, {1, 1}, {0, 0}, {1, 1}};
    CHECK(!gad_unfold(x, &k0));
    CHECK_ERR(GAD_ERR_DOMAIN, "unfold");
    CHECK(!gad_unfold(gad_zeros((int64_t[]){4, 4}, 2, GAD_F32), &c.o));
    CHECK_ERR(GAD_ERR_SHAPE, "unfold");
    gad_scope_end();
}

/* The non-constant modes on i64 (every mode) and bool (circular; reflect
 * and replicate refused, as PyTorch's kernels take no Bool): exact values
 * through ref_src, i64 values beyond 2^53 included. */
TEST(pad_integer_dtypes) {
    static const int64_t shape[4] = {2, 3, 4, 5}, pads[6] = {2, 1, 0, 3, 1, 1};
    int64_t nx = test_numel(shape, 4), xv[120];
    for (int64_t i = 0; i < nx; i++) xv[i] = (i % 7) * ((int64_t)1 << 54) + i - 60;
    for (int boolean = 0; boolean < 2; boolean++)
        for (int mode = GAD_PAD_REFLECT; mode <= GAD_PAD_CIRCULAR; mode++) {
            gad_scope_begin();
            gad_tensor *x = gad_from_i64(xv, shape, 4);
            if (boolean) x = gad_gt_scalar(x, 0);
            gad_tensor *y = gad_pad(x, pads, 6, (gad_pad_mode)mode, 0);
            if (boolean && mode != GAD_PAD_CIRCULAR) {
                CHECK(y == NULL);
                CHECK_ERR(GAD_ERR_DTYPE, "pad");
                gad_scope_end();
                continue;
            }
            int64_t os[4] = {2, 3 + 2, 4 + 3, 5 + 3}, lo[4] = {0, 1, 0, 2};
            CHECK_MSG(test_same_shape(y, os, 4) && gad_dtype(y) == gad_dtype(x),
                      "pad %s mode %d: %s", boolean ? "bool" : "i64", mode,
                      gad_last_error() ? gad_last_error()->text : "");
            if (!y) {
                gad_clear_error();
                gad_scope_end();
                continue;
            }
            int64_t n = test_numel(os, 4), bad = 0, idx[4], src[4];
            int64_t *yv = malloc((size_t)n * sizeof *yv);
            gad_tensor *yi = boolean ? gad_cast(y, GAD_I64) : y;
            CHECK(gad_read_i64(yi, yv, (size_t)n) == GAD_OK);
            for (int64_t f = 0; f < n; f++) {
                test_unflat(f, os, 4, idx);
                for (int d = 0; d < 4; d++) src[d] = ref_src(mode, idx[d], shape[d], lo[d]);
                int64_t want = xv[test_flat(src, shape, 4)];
                bad += yv[f] != (boolean ? (int64_t)(want > 0) : want);
            }
            CHECK_MSG(bad == 0, "pad %s mode %d: %lld wrong", boolean ? "bool" : "i64", mode,
                      (long long)bad);
            free(yv);
            gad_scope_end();
        }
}

int main(void) {
    RUN(pad_grid);
    RUN(pad_integer_dtypes);
    RUN(pad_errors);
    RUN(interpolate_grid);
    RUN(interpolate_grads);
    RUN(interpolate_errors);
    RUN(pixel_shuffle_roundtrip);
    RUN(unfold_fold_grid);
    RUN(unfold_fold_grads);
    return test_summary();
}
