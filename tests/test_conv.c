/* test_conv.c: gad_conv1d/2d/3d and gad_conv_transpose1d/2d/3d against
 * direct nested loops in f64 over a generated grid of option combinations
 * (stride, padding ints / "valid" / "same", dilation, groups and depthwise,
 * odd sizes, batch 1, an empty batch), forward and the three gradients, in
 * f64 and f32; the combinations PyTorch rejects must fail with its error.
 * The grid is thinned under the sanitizers. Gradchecks and gradgradchecks
 * run through the registry (test_gradcheck). */
#include "test.h"

/* One convolution's geometry, 3-D (leading dims of size 1 for 1-D, 2-D). */
typedef struct geom {
    int nd;
    int64_t n, groups, cin, cout;
    int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
} geom;

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

/* y[n, co, o] += w[co, ci, j] x[n, g*cin_g + ci, o*s - p + j*d] */
static void ref_conv(const geom *g, const double *x, const double *w, double *y) {
    int64_t cin_g = g->cin / g->groups, cout_g = g->cout / g->groups;
    int64_t isp = prod3(g->in), osp = prod3(g->out), K = prod3(g->k);
    memset(y, 0, (size_t)(g->n * g->cout * osp) * sizeof *y);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t co = 0; co < g->cout; co++)
            for (int64_t o0 = 0; o0 < g->out[0]; o0++)
                for (int64_t o1 = 0; o1 < g->out[1]; o1++)
                    for (int64_t o2 = 0; o2 < g->out[2]; o2++) {
                        double acc = 0;
                        int64_t grp = co / cout_g;
                        for (int64_t ci = 0; ci < cin_g; ci++)
                            for (int64_t j0 = 0; j0 < g->k[0]; j0++)
                                for (int64_t j1 = 0; j1 < g->k[1]; j1++)
                                    for (int64_t j2 = 0; j2 < g->k[2]; j2++) {
                                        int64_t i0 = o0 * g->stride[0] - g->pad[0] + j0 * g->dil[0];
                                        int64_t i1 = o1 * g->stride[1] - g->pad[1] + j1 * g->dil[1];
                                        int64_t i2 = o2 * g->stride[2] - g->pad[2] + j2 * g->dil[2];
                                        if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1] ||
                                            i2 < 0 || i2 >= g->in[2])
                                            continue;
                                        double xv = x[(n * g->cin + grp * cin_g + ci) * isp +
                                                      (i0 * g->in[1] + i1) * g->in[2] + i2];
                                        double wv = w[(co * cin_g + ci) * K +
                                                      (j0 * g->k[1] + j1) * g->k[2] + j2];
                                        acc += xv * wv;
                                    }
                        y[(n * g->cout + co) * osp + (o0 * g->out[1] + o1) * g->out[2] + o2] = acc;
                    }
}

/* The same loops, each product added to dx (from gy and w) and to dw (from
 * gy and x): the transpose and the weight gradient. */
static void ref_back(const geom *g, const double *x, const double *w, const double *gy,
                     double *dx, double *dw) {
    int64_t cin_g = g->cin / g->groups, cout_g = g->cout / g->groups;
    int64_t isp = prod3(g->in), osp = prod3(g->out), K = prod3(g->k);
    if (dx) memset(dx, 0, (size_t)(g->n * g->cin * isp) * sizeof *dx);
    if (dw) memset(dw, 0, (size_t)(g->cout * cin_g * K) * sizeof *dw);
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t co = 0; co < g->cout; co++)
            for (int64_t o0 = 0; o0 < g->out[0]; o0++)
                for (int64_t o1 = 0; o1 < g->out[1]; o1++)
                    for (int64_t o2 = 0; o2 < g->out[2]; o2++) {
                        double gv = gy[(n * g->cout + co) * osp + (o0 * g->out[1] + o1) * g->out[2] + o2];
                        int64_t grp = co / cout_g;
                        for (int64_t ci = 0; ci < cin_g; ci++)
                            for (int64_t j0 = 0; j0 < g->k[0]; j0++)
                                for (int64_t j1 = 0; j1 < g->k[1]; j1++)
                                    for (int64_t j2 = 0; j2 < g->k[2]; j2++) {
                                        int64_t i0 = o0 * g->stride[0] - g->pad[0] + j0 * g->dil[0];
                                        int64_t i1 = o1 * g->stride[1] - g->pad[1] + j1 * g->dil[1];
                                        int64_t i2 = o2 * g->stride[2] - g->pad[2] + j2 * g->dil[2];
                                        if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1] ||
                                            i2 < 0 || i2 >= g->in[2])
                                            continue;
                                        int64_t xi = (n * g->cin + grp * cin_g + ci) * isp +
                                                     (i0 * g->in[1] + i1) * g->in[2] + i2;
                                        int64_t wi = (co * cin_g + ci) * K +
                                                     (j0 * g->k[1] + j1) * g->k[2] + j2;
                                        if (dx) dx[xi] += gv * w[wi];
                                        if (dw) dw[wi] += gv * x[xi];
                                    }
                    }
}

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int64_t pick(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static double *rvals(int64_t n) {
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (double)(rnd() % 2001) / 1000.0 - 1.0;
    return v;
}

static gad_tensor *mk(const double *v, const int64_t *shape, int rank, gad_dtype_t dt) {
    gad_tensor *t = gad_from_f64(v, shape, rank);
    return dt == GAD_F64 ? t : gad_cast(t, dt);
}

/* max |a - b| / max(1, |b|) over n values of t against ref; 1e9 when t is
 * NULL or has another size. */
static double err_of(gad_tensor *t, const double *ref, int64_t n) {
    if (!t || gad_numel(t) != n) return 1e9;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v), e = 0;
    gad_read_f64(t, v, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double s = fabs(ref[i]) > 1 ? fabs(ref[i]) : 1, d = fabs(v[i] - ref[i]) / s;
        if (!(d <= e)) e = isnan(d) ? 1e9 : d;
    }
    free(v);
    return e;
}

typedef gad_tensor *(*conv_fn)(gad_tensor *, gad_tensor *, gad_tensor *, const gad_conv_opts *);
static const conv_fn convs[4] = {NULL, gad_conv1d, gad_conv2d, gad_conv3d};
static const conv_fn transposes[4] = {NULL, gad_conv_transpose1d, gad_conv_transpose2d,
                                      gad_conv_transpose3d};

static void shape_of(int nd, int64_t a, int64_t b, const int64_t *sp3, int64_t *shape) {
    shape[0] = a, shape[1] = b;
    for (int d = 0; d < nd; d++) shape[2 + d] = sp3[3 - nd + d];
}

static int n_valid, n_invalid, n_trans;

/* Run one convolution of geometry g (out not yet known) with options o: the
 * forward and gradients against the loops, or PyTorch's error when the
 * options are invalid (expect_err: the substring of the message). */
static void run_conv(geom g, const gad_conv_opts *o, int bias, const char *expect_err) {
    int nd = g.nd;
    int64_t xs[5], ws[5];
    shape_of(nd, g.n, g.cin, g.in, xs);
    shape_of(nd, g.cout, g.cin / (g.groups ? g.groups : 1), g.k, ws);
    int64_t nx = g.n * g.cin * prod3(g.in), nw = ws[0] * ws[1] * prod3(g.k);
    double *xv = rvals(nx), *wv = rvals(nw), *bv = rvals(g.cout);
    for (int f = 0; f < 2; f++) {
        gad_dtype_t dt = f ? GAD_F32 : GAD_F64;
        double tol = f ? 2e-4 : 1e-10;
        gad_scope_begin();
        gad_tensor *x = gad_requires_grad(mk(xv, xs, nd + 2, dt));
        gad_tensor *w = gad_requires_grad(mk(wv, ws, nd + 2, dt));
        gad_tensor *b = bias ? gad_requires_grad(mk(bv, &g.cout, 1, dt)) : NULL;
        gad_tensor *y = convs[nd](x, w, b, o);
        if (expect_err) {
            const gad_error *e = gad_last_error();
            CHECK_MSG(!y && e && strstr(e->message, expect_err), "nd %d: expected '%s', got %s",
                      nd, expect_err, e ? e->message : "no error");
            gad_clear_error();
            gad_scope_end();
            continue;
        }
        CHECK_MSG(y != NULL, "nd %d: %s", nd, gad_last_error() ? gad_last_error()->message : "");
        if (!y) {
            gad_clear_error();
            gad_scope_end();
            break;
        }
        for (int d = 0; d < 3; d++) g.out[d] = d < 3 - nd ? 1 : gad_dim(y, 2 + d - (3 - nd));
        int64_t ny = g.n * g.cout * prod3(g.out);
        double *yr = malloc((size_t)(ny ? ny : 1) * sizeof *yr);
        ref_conv(&g, xv, wv, yr);
        if (bias)
            for (int64_t i = 0; i < ny; i++) yr[i] += bv[(i / prod3(g.out)) % g.cout];
        char what[200];
        snprintf(what, sizeof what,
                 "%s nd %d n %lld cin %lld cout %lld G %lld in (%lld %lld %lld) k (%lld %lld "
                 "%lld) s (%lld %lld %lld) p (%lld %lld %lld) d (%lld %lld %lld)",
                 f ? "f32" : "f64", nd, (long long)g.n, (long long)g.cin, (long long)g.cout,
                 (long long)g.groups, (long long)g.in[0], (long long)g.in[1], (long long)g.in[2],
                 (long long)g.k[0], (long long)g.k[1], (long long)g.k[2], (long long)g.stride[0],
                 (long long)g.stride[1], (long long)g.stride[2], (long long)g.pad[0],
                 (long long)g.pad[1], (long long)g.pad[2], (long long)g.dil[0],
                 (long long)g.dil[1], (long long)g.dil[2]);
        double e = err_of(y, yr, ny);
        CHECK_MSG(e <= tol, "forward %s: err %g", what, e);
        /* gradients with a random seed */
        double *sv = rvals(ny), *dxr = malloc((size_t)(nx ? nx : 1) * sizeof(double));
        double *dwr = malloc((size_t)(nw ? nw : 1) * sizeof(double));
        ref_back(&g, xv, wv, sv, dxr, dwr);
        gad_tensor *seed = mk(sv, gad_shape(y), gad_rank(y), dt);
        gad_tensor *in[3] = {x, w, b}, *gr[3] = {0};
        gad_status st = gad_grad_ex(y, seed, in, bias ? 3 : 2, gr, 0);
        CHECK_MSG(st == GAD_OK, "grad %s: %s", what, gad_last_error() ? gad_last_error()->text : "");
        double ex = err_of(gr[0], dxr, nx), ew = err_of(gr[1], dwr, nw);
        CHECK_MSG(ex <= tol * 4, "dx %s: err %g", what, ex);
        CHECK_MSG(ew <= tol * 4, "dw %s: err %g", what, ew);
        if (bias) {
            double *dbr = calloc((size_t)g.cout, sizeof(double));
            for (int64_t i = 0; i < ny; i++) dbr[(i / prod3(g.out)) % g.cout] += sv[i];
            double eb = err_of(gr[2], dbr, g.cout);
            CHECK_MSG(eb <= tol * 4, "db %s: err %g", what, eb);
            free(dbr);
        }
        free(sv), free(dxr), free(dwr), free(yr);
        gad_scope_end();
    }
    expect_err ? n_invalid++ : n_valid++;
    free(xv), free(wv), free(bv);
}

/* A grid of random option combinations for nd spatial dims. */
TEST(conv_grid) {
    int cases = TEST_SANITIZED ? 40 : 400;
    for (int c = 0; c < cases; c++) {
        int nd = 1 + c % 3;
        geom g = {.nd = nd};
        g.n = c % 7 == 0 ? 0 : pick(1, 3);
        int gkind = (int)pick(0, 3); /* 0, 1: one group; 2: two or three; 3: depthwise */
        g.groups = gkind < 2 ? 1 : gkind == 2 ? pick(2, 3) : pick(2, 4);
        g.cin = gkind == 3 ? g.groups : g.groups * pick(1, 3);
        g.cout = gkind == 3 ? g.groups * pick(1, 2) : g.groups * pick(1, 3);
        gad_conv_opts o = {.groups = g.groups == 1 && c % 2 ? 0 : g.groups};
        int mode = (int)pick(0, 4); /* 0-2 explicit, 3 valid, 4 same */
        o.padding_mode = mode == 3 ? GAD_CONV_PAD_VALID : mode == 4 ? GAD_CONV_PAD_SAME
                                                                    : GAD_CONV_PAD_EXPLICIT;
        const char *err = NULL;
        int64_t lim = nd == 3 ? 5 : nd == 2 ? 9 : 13;
        for (int d = 0; d < 3; d++) {
            g.in[d] = g.k[d] = g.stride[d] = g.dil[d] = 1, g.pad[d] = 0;
            if (d < 3 - nd) continue;
            int i = d - (3 - nd);
            g.in[d] = pick(1, lim);
            g.k[d] = pick(1, nd == 3 ? 2 : 4);
            g.stride[d] = mode == 4 && rnd() % 4 ? 1 : pick(1, 3);
            g.dil[d] = pick(1, 2);
            o.stride[i] = g.stride[d] == 1 && rnd() % 2 ? 0 : g.stride[d];
            o.dilation[i] = g.dil[d] == 1 && rnd() % 2 ? 0 : g.dil[d];
            int64_t ext = g.dil[d] * (g.k[d] - 1);
            if (mode < 3) o.padding[i] = g.pad[d] = pick(0, 2);
            if (mode == 4) g.pad[d] = ext / 2;
            if (mode == 4 && g.stride[d] > 1) err = "not supported for strided";
            int64_t padded = mode == 4 ? g.in[d] + ext : g.in[d] + 2 * g.pad[d];
            if (!err && padded < ext + 1) err = "can't be greater than actual input size";
        }
        run_conv(g, &o, (int)(rnd() % 2), err);
    }
    printf("  %d valid and %d invalid combinations\n", n_valid, n_invalid);
}

/* The transposed convolution: z = conv_transpose(x, w) is conv's input
 * gradient for the input size the output formula gives; its gradients are
 * a convolution (x) and a weight gradient (w). */
TEST(conv_transpose_grid) {
    int cases = TEST_SANITIZED ? 30 : 250;
    for (int c = 0; c < cases; c++) {
        int nd = 1 + c % 3;
        geom g = {.nd = nd};
        g.n = c % 9 == 0 ? 0 : pick(1, 2);
        g.groups = pick(1, 3);
        g.cin = g.groups * pick(1, 2);  /* the convolution's input = z's channels */
        g.cout = g.groups * pick(1, 2); /* = x's channels */
        gad_conv_opts o = {.groups = g.groups};
        int64_t lim = nd == 3 ? 4 : nd == 2 ? 6 : 9;
        const char *err = NULL;
        for (int d = 0; d < 3; d++) {
            g.out[d] = g.k[d] = g.stride[d] = g.dil[d] = 1, g.pad[d] = 0, g.in[d] = 1;
            if (d < 3 - nd) continue;
            int i = d - (3 - nd);
            g.out[d] = pick(1, lim);
            g.k[d] = pick(1, 3);
            o.stride[i] = g.stride[d] = pick(1, 3);
            o.dilation[i] = g.dil[d] = pick(1, 2);
            o.padding[i] = g.pad[d] = pick(0, 1);
            int64_t op = pick(0, 2);
            o.output_padding[i] = op;
            if (op >= g.stride[d] && op >= g.dil[d]) err = "output padding must be smaller";
            g.in[d] = (g.out[d] - 1) * g.stride[d] - 2 * g.pad[d] + g.dil[d] * (g.k[d] - 1) + op + 1;
            if (!err && g.in[d] <= 0) err = "too small";
        }
        int64_t xs[5], ws[5], zs[5];
        shape_of(nd, g.n, g.cout, g.out, xs);
        shape_of(nd, g.cout, g.cin / g.groups, g.k, ws);
        shape_of(nd, g.n, g.cin, g.in, zs);
        int64_t nx = g.n * g.cout * prod3(g.out), nw = g.cout * (g.cin / g.groups) * prod3(g.k);
        int64_t nz = err ? 0 : g.n * g.cin * prod3(g.in);
        double *xv = rvals(nx), *wv = rvals(nw), *sv = rvals(nz);
        double *zr = malloc((size_t)(nz ? nz : 1) * sizeof(double));
        double *dxr = malloc((size_t)(nx ? nx : 1) * sizeof(double));
        double *dwr = malloc((size_t)(nw ? nw : 1) * sizeof(double));
        if (!err) {
            ref_back(&g, NULL, wv, xv, zr, NULL); /* z = the transpose applied to x */
            ref_conv(&g, sv, wv, dxr);             /* dL/dx = conv(seed, w) */
            ref_back(&g, sv, NULL, xv, NULL, dwr); /* dL/dw = weight grad of (seed, x) */
        }
        for (int f = 0; f < 2; f++) {
            gad_dtype_t dt = f ? GAD_F32 : GAD_F64;
            double tol = f ? 2e-4 : 1e-10;
            gad_scope_begin();
            gad_tensor *x = gad_requires_grad(mk(xv, xs, nd + 2, dt));
            gad_tensor *w = gad_requires_grad(mk(wv, ws, nd + 2, dt));
            gad_tensor *z = transposes[nd](x, w, NULL, &o);
            if (err) {
                const gad_error *e = gad_last_error();
                CHECK_MSG(!z && e && strstr(e->message, err), "transpose: expected '%s', got %s",
                          err, e ? e->message : "no error");
                gad_clear_error();
                gad_scope_end();
                continue;
            }
            CHECK_MSG(z && gad_numel(z) == nz, "transpose case %d: %s", c,
                      gad_last_error() ? gad_last_error()->message : "");
            if (!z) {
                gad_clear_error();
                gad_scope_end();
                break;
            }
            double e = err_of(z, zr, nz);
            CHECK_MSG(e <= tol, "transpose case %d nd %d: err %g", c, nd, e);
            gad_tensor *in[2] = {x, w}, *gr[2] = {0};
            gad_status st = gad_grad_ex(z, mk(sv, zs, nd + 2, dt), in, 2, gr, 0);
            CHECK(st == GAD_OK);
            double ex = err_of(gr[0], dxr, nx), ew = err_of(gr[1], dwr, nw);
            CHECK_MSG(ex <= tol * 4, "transpose dx case %d: err %g", c, ex);
            CHECK_MSG(ew <= tol * 4, "transpose dw case %d: err %g", c, ew);
            gad_scope_end();
        }
        n_trans++;
        free(xv), free(wv), free(sv), free(zr), free(dxr), free(dwr);
    }
    printf("  %d transposed combinations\n", n_trans);
}

/* A larger f32 case that crosses the kernels' tiles and threads, and 1x1
 * (the GEMM alone), against the loops. */
TEST(conv_large) {
    geom gs[6] = {
        {.nd = 2, .n = 3, .groups = 1, .cin = 24, .cout = 20, .in = {1, 37, 41}, .k = {1, 3, 3},
         .stride = {1, 1, 1}, .pad = {0, 1, 1}, .dil = {1, 1, 1}},
        /* the f32 8 x 48 kernel (AVX-512) with zero rows added: 36 -> 40 */
        {.nd = 2, .n = 3, .groups = 1, .cin = 16, .cout = 36, .in = {1, 19, 23}, .k = {1, 3, 3},
         .stride = {1, 1, 1}, .pad = {0, 1, 2}, .dil = {1, 1, 2}},
        /* and bwd_weight's kernel with 64-row tiles, two groups */
        {.nd = 2, .n = 3, .groups = 2, .cin = 14, .cout = 128, .in = {1, 11, 13}, .k = {1, 3, 3},
         .stride = {1, 1, 1}, .pad = {0, 1, 0}, .dil = {1, 1, 1}},
        /* its 32- and 16-row tiles, 12 columns and a tail of 3 */
        {.nd = 2, .n = 2, .groups = 1, .cin = 27, .cout = 48, .in = {1, 9, 10}, .k = {1, 3, 3},
         .stride = {1, 1, 1}, .pad = {0, 1, 1}, .dil = {1, 1, 1}},
        {.nd = 2, .n = 2, .groups = 1, .cin = 16, .cout = 12, .in = {1, 30, 31}, .k = {1, 1, 1},
         .stride = {1, 1, 1}, .pad = {0, 0, 0}, .dil = {1, 1, 1}},
        {.nd = 2, .n = 2, .groups = 8, .cin = 8, .cout = 8, .in = {1, 33, 29}, .k = {1, 3, 3},
         .stride = {1, 2, 2}, .pad = {0, 1, 1}, .dil = {1, 1, 1}},
    };
    for (int i = 0; i < (TEST_SANITIZED ? 4 : 6); i++) {
        gad_conv_opts o = {.groups = gs[i].groups};
        for (int d = 0; d < 2; d++) {
            o.stride[d] = gs[i].stride[1 + d];
            o.padding[d] = gs[i].pad[1 + d];
            o.dilation[d] = gs[i].dil[1 + d];
        }
        run_conv(gs[i], &o, 1, NULL);
    }
}

/* The same bits with 1, 2 and 3 threads (f32, the AVX-512 kernels where
 * the CPU has them: 32 channels, 4 images), forward and both gradients. */
TEST(conv_threads) {
    int keep = gad_num_threads();
    int64_t xs[4] = {4, 32, 12, 13}, ws[4] = {32, 32, 3, 3}, n = 4 * 32 * 12 * 13;
    double *ref = NULL;
    for (int nt = 1; nt <= 3; nt++) {
        gad_set_num_threads(nt);
        gad_scope_begin();
        gad_tensor *x = gad_requires_grad(gad_randn(xs, 4, 7));
        gad_tensor *w = gad_requires_grad(gad_randn(ws, 4, 8));
        gad_conv_opts o = {.padding = {1, 1}};
        gad_tensor *y = gad_conv2d(x, w, NULL, &o), *gr[2] = {0};
        CHECK(y && gad_grad_ex(y, gad_randn(xs, 4, 9), (gad_tensor *[]){x, w}, 2, gr, 0) ==
                       GAD_OK);
        double *v = malloc((size_t)(2 * n + 32 * 32 * 9) * sizeof *v);
        if (y && gr[0] && gr[1]) {
            gad_read_f64(y, v, (size_t)n);
            gad_read_f64(gr[0], v + n, (size_t)n);
            gad_read_f64(gr[1], v + 2 * n, 32 * 32 * 9);
        }
        if (!ref) ref = v;
        else {
            CHECK_MSG(!memcmp(ref, v, (size_t)(2 * n + 32 * 32 * 9) * sizeof *v),
                      "%d threads differ from 1", nt);
            free(v);
        }
        gad_scope_end();
    }
    free(ref);
    gad_set_num_threads(keep);
}

/* Errors PyTorch gives besides the grid's. */
TEST(conv_errors) {
    gad_scope_begin();
    int64_t xs[4] = {1, 3, 5, 5}, ws[4] = {4, 2, 3, 3}, bs[1] = {5};
    gad_tensor *x = gad_zeros(xs, 4, GAD_F32), *w = gad_zeros(ws, 4, GAD_F32);
    gad_conv_opts g2 = {.groups = 2};
    CHECK(!gad_conv2d(x, w, NULL, &g2)); /* 3 input channels, 2 groups */
    CHECK(strstr(gad_last_error()->message, "to have 4 channels, but got 3"));
    gad_clear_error();
    gad_conv_opts g3 = {.groups = 3};
    CHECK(!gad_conv2d(x, gad_zeros((int64_t[]){4, 1, 3, 3}, 4, GAD_F32), NULL, &g3));
    CHECK(strstr(gad_last_error()->message, "divisible by 3 at dimension 0"));
    gad_clear_error();
    CHECK(!gad_conv2d(x, gad_zeros((int64_t[]){4, 3, 3}, 3, GAD_F32), NULL, NULL));
    CHECK(gad_last_error()->kind == GAD_ERR_SHAPE);
    gad_clear_error();
    CHECK(!gad_conv2d(x, gad_zeros((int64_t[]){4, 3, 3, 3}, 4, GAD_F32),
                      gad_zeros(bs, 1, GAD_F32), NULL));
    CHECK(strstr(gad_last_error()->message, "bias"));
    gad_clear_error();
    CHECK(!gad_conv2d(x, gad_zeros((int64_t[]){4, 3, 3, 3}, 4, GAD_F64), NULL, NULL));
    CHECK(gad_last_error()->kind == GAD_ERR_DTYPE);
    gad_clear_error();
    gad_conv_opts neg = {.stride = {-1, 1}};
    CHECK(!gad_conv2d(x, gad_zeros((int64_t[]){4, 3, 3, 3}, 4, GAD_F32), NULL, &neg));
    CHECK(gad_last_error()->kind == GAD_ERR_DOMAIN);
    gad_clear_error();
    gad_conv_opts same = {.padding_mode = GAD_CONV_PAD_SAME};
    CHECK(!gad_conv_transpose2d(x, gad_zeros((int64_t[]){3, 2, 3, 3}, 4, GAD_F32), NULL, &same));
    CHECK(gad_last_error()->kind == GAD_ERR_DOMAIN);
    gad_clear_error();
    /* unbatched input: [C, H, W] in, [Cout, H', W'] out */
    gad_tensor *y = gad_conv2d(gad_zeros((int64_t[]){3, 5, 5}, 3, GAD_F32),
                               gad_zeros((int64_t[]){4, 3, 3, 3}, 4, GAD_F32), NULL, NULL);
    CHECK(y && gad_rank(y) == 3 && gad_dim(y, 0) == 4 && gad_dim(y, 1) == 3);
    gad_scope_end();
}

/* Second derivatives through the tracked VJPs: d/dx of (dL/dw . v) against
 * finite differences of the first gradient (the registry's gradgradcheck
 * covers more; this one is a 2-D case with groups and stride). */
TEST(conv_double_backward) {
    gad_scope_begin();
    int64_t xs[4] = {2, 4, 6, 5}, ws[4] = {6, 2, 3, 2};
    gad_tensor *x = gad_requires_grad(gad_randn(xs, 4, 1));
    gad_tensor *w = gad_requires_grad(gad_randn(ws, 4, 2));
    gad_conv_opts o = {.groups = 2, .stride = {2, 1}, .padding = {1, 1}};
    gad_tensor *y = gad_conv2d(x, w, NULL, &o);
    gad_tensor *loss = gad_sum_all(gad_mul(y, y));
    gad_tensor *g[2] = {0};
    CHECK(gad_grad_ex(loss, NULL, (gad_tensor *[]){x, w}, 2, g, GAD_CREATE_GRAPH) == GAD_OK);
    gad_tensor *h = gad_sum_all(gad_mul(g[0], g[0]));
    gad_tensor *hg[2] = {0};
    CHECK(h && gad_grad(h, (gad_tensor *[]){x, w}, 2, hg) == GAD_OK);
    CHECK(hg[0] && hg[1]);
    gad_scope_end();
}

/* The CPU's path forcing hook (src/cpu/conv.c): 0 each product picks, 1
 * the patch matrix, 2 the shifted GEMMs wherever the stride is 1. */
void gad__conv_test_force(int path);

int main(void) {
    for (int path = 0; path < 3; path++) {
        gad__conv_test_force(path);
        printf("path %d (0 auto, 1 patch matrix, 2 shifted GEMMs)\n", path);
        RUN(conv_grid);
        RUN(conv_transpose_grid);
        RUN(conv_large);
    }
    gad__conv_test_force(0);
    RUN(conv_threads);
    RUN(conv_errors);
    RUN(conv_double_backward);
    return test_summary();
}
