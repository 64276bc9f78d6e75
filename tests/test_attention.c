/* test_attention.c: scaled dot-product attention against its composition
 * softmax(q k^T scale + mask) v in f64 (values and gradients: grouped
 * queries, causal with Tq != Tk, float masks that broadcast, fully masked
 * rows, lengths not a multiple of the kernels' 64-row blocks), dropout
 * against the composition given the regenerated mask, the memory the tape
 * keeps, RoPE against an explicit rotation, the sinusoidal table, and the
 * errors. The registry's gradcheck and gradgradcheck (test_gradcheck) cover
 * both ops' samples too. */
#include "test.h"

#include "gad_int.h"
#include "ops/ops_int.h"

static double max_rel(gad_tensor *a, gad_tensor *b, double floor_) {
    int64_t n = gad_numel(a);
    if (n != gad_numel(b)) return INFINITY;
    double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8), worst = 0;
    gad_read_f64(a, x, (size_t)n);
    gad_read_f64(b, y, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(x[i] - y[i]) / fmax(fmax(fabs(x[i]), fabs(y[i])), floor_);
        if (!(e <= worst)) worst = e;
    }
    free(x);
    free(y);
    return worst;
}

static int all_finite(gad_tensor *t) {
    int64_t n = gad_numel(t);
    double *x = malloc((size_t)(n ? n : 1) * 8);
    gad_read_f64(t, x, (size_t)n);
    int ok = 1;
    for (int64_t i = 0; i < n; i++) ok &= isfinite(x[i]) != 0;
    free(x);
    return ok;
}

typedef struct acase {
    int64_t B, Hq, Hk, Tq, Tk, d, dv;
    int causal;
    int mask; /* 0 none; 1 [Tq, Tk]; 2 [B, 1, 1, Tk]; 3 [Hq, Tq, Tk]; each
               * with a fully masked row or key where it can; 4, 5, 6: the
               * same as bool masks (True = attend) */
    double scale;
} acase;

/* A float mask of the case's kind, values in [-1, 1) and -inf entries
 * (query row 1 fully masked for kinds 1 and 3; key 0 of batch 0 for 2). */
static gad_tensor *make_mask(gad_rng *r, const acase *c, gad_dtype_t dt) {
    int64_t shape[4];
    int rank, kind = c->mask > 3 ? c->mask - 3 : c->mask;
    if (kind == 1) {
        rank = 2;
        shape[0] = c->Tq;
        shape[1] = c->Tk;
    } else if (kind == 2) {
        rank = 4;
        shape[0] = c->B;
        shape[1] = shape[2] = 1;
        shape[3] = c->Tk;
    } else {
        rank = 3;
        shape[0] = c->Hq;
        shape[1] = c->Tq;
        shape[2] = c->Tk;
    }
    gad_tensor *m = gad_rng_uniform_tensor(r, shape, rank, GAD_F64, -1, 1);
    int64_t n = gad_numel(m);
    double *v = malloc((size_t)n * 8);
    gad_read_f64(m, v, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        int64_t col = i % c->Tk, row = (i / c->Tk) % (rank == 4 ? 1 : c->Tq);
        if ((kind != 2 && row == 1) || (kind == 2 && col == 0 && i < c->Tk) ||
            (i * 7) % 11 == 3)
            v[i] = -INFINITY;
    }
    gad_tensor *t;
    if (c->mask > 3) { /* True where the float mask is finite */
        uint8_t *b = malloc((size_t)(n > 0 ? n : 1));
        for (int64_t i = 0; i < n; i++) b[i] = v[i] != -INFINITY;
        t = gad_from_bool(b, shape, rank);
        free(b);
    } else {
        t = gad_cast(gad_from_f64(v, shape, rank), dt);
    }
    free(v);
    return t;
}

/* The case's output and gradients (weights w on the output) through the
 * fused op and through the composition, in dtype dt; the worst relative
 * difference (values then gradients) against the f64 composition. */
static void check_case(const acase *c, gad_dtype_t dt, double tol) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new((uint64_t)(c->Tq * 131 + c->Tk * 7 + c->Hq));
    int64_t qs[4] = {c->B, c->Hq, c->Tq, c->d}, ks[4] = {c->B, c->Hk, c->Tk, c->d};
    int64_t vs[4] = {c->B, c->Hk, c->Tk, c->dv}, os[4] = {c->B, c->Hq, c->Tq, c->dv};
    gad_tensor *q = gad_rng_uniform_tensor(r, qs, 4, GAD_F64, -2, 2);
    gad_tensor *k = gad_rng_uniform_tensor(r, ks, 4, GAD_F64, -2, 2);
    gad_tensor *v = gad_rng_uniform_tensor(r, vs, 4, GAD_F64, -1, 1);
    gad_tensor *w = gad_rng_uniform_tensor(r, os, 4, GAD_F64, -1, 1);
    gad_tensor *m = c->mask ? make_mask(r, c, GAD_F64) : NULL;
    /* the reference: the composition in f64 */
    gad_tensor *in64[3] = {gad_requires_grad(gad_clone(q)), gad_requires_grad(gad_clone(k)),
                           gad_requires_grad(gad_clone(v))};
    gad_tensor *ref = gad__sdpa_unfused(in64[0], in64[1], in64[2], m, c->causal, 0, c->scale, 0);
    gad_tensor *gref[3];
    CHECK(gad_grad(gad_sum_all(gad_mul(ref, w)), in64, 3, gref) == GAD_OK);
    /* the op */
    gad_tensor *in[3] = {gad_requires_grad(gad_cast(q, dt)), gad_requires_grad(gad_cast(k, dt)),
                         gad_requires_grad(gad_cast(v, dt))};
    gad_tensor *y = gad_scaled_dot_product_attention(in[0], in[1], in[2],
                                                     m && c->mask <= 3 ? gad_cast(m, dt) : m,
                                                     c->causal, 0,
                                                     c->scale, NULL);
    CHECK_OK();
    gad_tensor *g[3];
    CHECK(gad_grad(gad_sum_all(gad_mul(y, gad_cast(w, dt))), in, 3, g) == GAD_OK);
    double e = max_rel(y, ref, 1);
    for (int i = 0; i < 3; i++) e = fmax(e, max_rel(g[i], gref[i], 1));
    CHECK_MSG(e < tol && all_finite(y) && all_finite(g[0]) && all_finite(ref),
              "B%lld Hq%lld Hk%lld Tq%lld Tk%lld d%lld dv%lld causal %d mask %d %s: err %g",
              (long long)c->B, (long long)c->Hq, (long long)c->Hk, (long long)c->Tq,
              (long long)c->Tk, (long long)c->d, (long long)c->dv, c->causal, c->mask,
              dt == GAD_F32 ? "f32" : "f64", e);
    gad_rng_free(r);
    gad_scope_end();
}

static const acase cases[] = {
    {2, 2, 2, 5, 5, 4, 4, 0, 0, 0},      {1, 4, 2, 70, 70, 8, 8, 1, 0, 0},
    {1, 4, 1, 130, 67, 16, 8, 1, 0, 0},  {2, 2, 2, 33, 150, 8, 12, 1, 0, 0.3},
    {2, 3, 3, 65, 129, 8, 8, 0, 1, 0},   {2, 2, 1, 64, 128, 8, 8, 0, 2, 0},
    {1, 2, 2, 100, 40, 8, 4, 0, 3, 0},   {1, 1, 1, 1, 1, 3, 2, 1, 0, 0},
    {1, 2, 2, 3, 0, 4, 4, 0, 0, 0},      {1, 2, 2, 0, 4, 4, 4, 1, 0, 0},
    {2, 1, 1, 5, 6, 0, 3, 0, 0, 0},      {2, 3, 3, 65, 129, 8, 8, 0, 4, 0},
    {2, 4, 2, 130, 70, 8, 8, 0, 5, 0},   {1, 2, 2, 100, 40, 8, 4, 0, 6, 0},
    /* causal over several query and key blocks (the kernels skip the rows
     * that see none of a key block) */
    {1, 2, 1, 300, 300, 8, 8, 1, 0, 0},  {1, 1, 1, 200, 333, 8, 8, 1, 0, 0},
};

TEST(against_composition_f64) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(&cases[i], GAD_F64, 1e-10);
}

TEST(against_composition_f32) {
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(&cases[i], GAD_F32, 2e-4);
}

/* A row with every key masked gives zeros and zero gradients, not NaN
 * (PyTorch 2.15's CPU kernels give zeros too). */
TEST(fully_masked_rows) {
    gad_scope_begin();
    double mv[2 * 3] = {0, -INFINITY, 0.5, -INFINITY, -INFINITY, -INFINITY};
    gad_tensor *m = gad_from_f64(mv, (int64_t[]){2, 3}, 2);
    gad_tensor *q = gad_requires_grad(gad_ones((int64_t[]){1, 2, 4}, 3, GAD_F64));
    gad_tensor *k = gad_requires_grad(gad_ones((int64_t[]){1, 3, 4}, 3, GAD_F64));
    gad_tensor *v = gad_requires_grad(gad_arange(0, 12, 1, GAD_F64));
    v = gad_requires_grad(gad_reshape(gad_detach(v), (int64_t[]){1, 3, 4}, 3));
    gad_tensor *y = gad_scaled_dot_product_attention(q, k, v, m, 0, 0, 0, NULL);
    /* row 0: keys 0 and 2 with scores 2 and 2.5 */
    double p2 = 1 / (1 + exp(-0.5)), p0 = 1 - p2;
    CHECK_VALUES(y, 1e-12, 8 * p2, 1 + 8 * p2, 2 + 8 * p2, 3 + 8 * p2, 0, 0, 0, 0);
    (void)p0;
    gad_tensor *g[3];
    CHECK(gad_grad(gad_sum_all(y), (gad_tensor *[]){q, k, v}, 3, g) == GAD_OK);
    CHECK(all_finite(g[0]) && all_finite(g[1]) && all_finite(g[2]));
    double gq[8];
    gad_read_f64(g[0], gq, 8);
    for (int i = 4; i < 8; i++) CHECK(gq[i] == 0);
    gad_scope_end();
}

/* Dropout: the op equals the composition given the factors drawn for the
 * same key (the rng's next draw), gradients included; about p are 0. */
TEST(dropout_against_regenerated_mask) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new(5), *r1 = gad_rng_new(77), *r2 = gad_rng_new(77);
    double p = 0.3;
    int64_t qs[4] = {2, 2, 70, 8}, ks[4] = {2, 1, 90, 8};
    gad_tensor *q = gad_rng_uniform_tensor(r, qs, 4, GAD_F64, -1, 1);
    gad_tensor *k = gad_rng_uniform_tensor(r, ks, 4, GAD_F64, -1, 1);
    gad_tensor *v = gad_rng_uniform_tensor(r, ks, 4, GAD_F64, -1, 1);
    gad_tensor *in[3] = {gad_requires_grad(gad_clone(q)), gad_requires_grad(gad_clone(k)),
                         gad_requires_grad(gad_clone(v))};
    gad_tensor *y = gad_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 1, p, 0, r1);
    uint64_t seed = gad_rng_next(r2);
    CHECK(gad_rng_next(r1) == gad_rng_next(r2)); /* the op took one draw */
    gad_tensor *in2[3] = {gad_requires_grad(gad_clone(q)), gad_requires_grad(gad_clone(k)),
                          gad_requires_grad(gad_clone(v))};
    gad_tensor *ref = gad__sdpa_unfused(in2[0], in2[1], in2[2], NULL, 1, p, 0, seed);
    CHECK(max_rel(y, ref, 1) < 1e-12);
    gad_tensor *g[3], *gr[3];
    CHECK(gad_grad(gad_sum_all(gad_square(y)), in, 3, g) == GAD_OK);
    CHECK(gad_grad(gad_sum_all(gad_square(ref)), in2, 3, gr) == GAD_OK);
    for (int i = 0; i < 3; i++) CHECK(max_rel(g[i], gr[i], 1) < 1e-10);
    /* the factors: 0 or 1/(1-p), about p of them 0 */
    gad_tensor *f = gad__sdpa_dropout_factors(q, k, v, p, seed);
    int64_t n = gad_numel(f), zeros = 0;
    double *fv = malloc((size_t)n * 8);
    gad_read_f64(f, fv, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        zeros += fv[i] == 0;
        CHECK(fv[i] == 0 || fabs(fv[i] - 1 / (1 - p)) < 1e-15);
    }
    free(fv);
    /* n = 25200 draws: the fraction within 5 sigma of p */
    double frac = (double)zeros / (double)n, sig = sqrt(p * (1 - p) / (double)n);
    CHECK_MSG(fabs(frac - p) < 5 * sig, "dropped %g of %lld", frac, (long long)n);
    /* f32 and f64 draw the same mask */
    gad_tensor *y32 = gad_scaled_dot_product_attention(
        gad_cast(q, GAD_F32), gad_cast(k, GAD_F32), gad_cast(v, GAD_F32), NULL, 1, p, 0,
        (gad_rng_seed(r1, 77), r1));
    CHECK(max_rel(y32, ref, 1) < 1e-4);
    gad_rng_free(r);
    gad_rng_free(r1);
    gad_rng_free(r2);
    gad_scope_end();
}

/* Second derivatives through the composed path agree with the composition's. */
TEST(second_order) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new(9);
    int64_t qs[4] = {1, 2, 5, 3}, ks[4] = {1, 1, 6, 3};
    gad_tensor *q = gad_requires_grad(gad_rng_uniform_tensor(r, qs, 4, GAD_F64, -1, 1));
    gad_tensor *k = gad_requires_grad(gad_rng_uniform_tensor(r, ks, 4, GAD_F64, -1, 1));
    gad_tensor *v = gad_requires_grad(gad_rng_uniform_tensor(r, ks, 4, GAD_F64, -1, 1));
    gad_tensor *dir[3] = {gad_rng_uniform_tensor(r, qs, 4, GAD_F64, -1, 1),
                          gad_rng_uniform_tensor(r, ks, 4, GAD_F64, -1, 1),
                          gad_rng_uniform_tensor(r, ks, 4, GAD_F64, -1, 1)};
    gad_tensor *in[3] = {q, k, v}, *hv[3], *hv2[3];
    gad_tensor *loss = gad_sum_all(gad_square(gad_scaled_dot_product_attention(q, k, v, NULL, 1, 0, 0, NULL)));
    CHECK(gad_hvp(loss, in, dir, 3, hv) == GAD_OK);
    gad_tensor *loss2 = gad_sum_all(gad_square(gad__sdpa_unfused(q, k, v, NULL, 1, 0, 0, 0)));
    CHECK(gad_hvp(loss2, in, dir, 3, hv2) == GAD_OK);
    for (int i = 0; i < 3; i++) CHECK(max_rel(hv[i], hv2[i], 1e-3) < 1e-10);
    gad_rng_free(r);
    gad_scope_end();
}

/* The tape keeps q, k, v, the output and one log-sum-exp per row: no
 * [Tq, Tk] matrix per head. */
TEST(tape_memory) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new(3);
    int64_t s[4] = {2, 4, 256, 32};
    gad_tensor *q = gad_requires_grad(gad_rng_uniform_tensor(r, s, 4, GAD_F32, -1, 1));
    gad_tensor *k = gad_requires_grad(gad_rng_uniform_tensor(r, s, 4, GAD_F32, -1, 1));
    gad_tensor *v = gad_requires_grad(gad_rng_uniform_tensor(r, s, 4, GAD_F32, -1, 1));
    gad_mem_stats a, b;
    gad_mem_stats_get(&a);
    gad_tensor *y = gad_scaled_dot_product_attention(q, k, v, NULL, 1, 0, 0, NULL);
    gad_mem_stats_get(&b);
    int64_t out = 2 * 4 * 256 * 32 * 4, lse = 2 * 4 * 256 * 4;
    CHECK_MSG(b.live_bytes - a.live_bytes <= out + lse + 4096, "the op kept %lld bytes",
              (long long)(b.live_bytes - a.live_bytes));
    CHECK(y != NULL);
    gad_rng_free(r);
    gad_scope_end();
}

/* Results do not depend on the thread count. */
TEST(threads_same_bits) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new(4);
    int64_t s[4] = {2, 3, 100, 16};
    gad_tensor *q = gad_requires_grad(gad_rng_uniform_tensor(r, s, 4, GAD_F32, -1, 1));
    gad_tensor *k = gad_requires_grad(gad_rng_uniform_tensor(r, s, 4, GAD_F32, -1, 1));
    gad_tensor *v = gad_requires_grad(gad_rng_uniform_tensor(r, s, 4, GAD_F32, -1, 1));
    gad_tensor *res[2][4];
    int saved = gad_num_threads();
    for (int t = 0; t < 2; t++) {
        gad_set_num_threads(t ? 2 : 1);
        res[t][0] = gad_scaled_dot_product_attention(q, k, v, NULL, 1, 0, 0, NULL);
        CHECK(gad_grad(gad_sum_all(gad_square(res[t][0])), (gad_tensor *[]){q, k, v}, 3,
                       &res[t][1]) == GAD_OK);
    }
    gad_set_num_threads(saved);
    for (int i = 0; i < 4; i++) CHECK(max_rel(res[0][i], res[1][i], 1e-30) == 0);
    gad_rng_free(r);
    gad_scope_end();
}

/* RoPE against the rotation written out, both layouts, positions given,
 * broadcast ([T, 1] against x [B, T, H, d]) or 0..T-1. */
static void rope_ref(const double *x, double *y, const int64_t *pos, int64_t rows, int64_t T,
                     int64_t H, int64_t d, double base, int inter) {
    for (int64_t r = 0; r < rows; r++) {
        int64_t p = pos[(r / H) % T];
        for (int64_t i = 0; i < d / 2; i++) {
            double th = (double)p * pow(base, -2.0 * (double)i / (double)d);
            int64_t a = inter ? 2 * i : i, b = inter ? 2 * i + 1 : i + d / 2;
            y[r * d + a] = x[r * d + a] * cos(th) - x[r * d + b] * sin(th);
            y[r * d + b] = x[r * d + a] * sin(th) + x[r * d + b] * cos(th);
        }
    }
}

TEST(rope_explicit_rotation) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new(11);
    int64_t B = 2, T = 5, H = 3, d = 8, n = B * T * H * d;
    int64_t pv[5] = {0, 3, 17, 2, 1000}, iota[5] = {0, 1, 2, 3, 4};
    double *x = malloc((size_t)n * 8), *yr = malloc((size_t)n * 8), *yg = malloc((size_t)n * 8);
    gad_tensor *xt = gad_rng_uniform_tensor(r, (int64_t[]){B, T, H, d}, 4, GAD_F64, -1, 1);
    gad_read_f64(xt, x, (size_t)n);
    gad_tensor *pos = gad_from_i64(pv, (int64_t[]){T, 1}, 2);
    for (int inter = 0; inter < 2; inter++)
        for (int dt = 0; dt < 2; dt++) {
            gad_dtype_t ty = dt ? GAD_F32 : GAD_F64;
            /* x [B, T, H, d] with positions [T, 1] */
            rope_ref(x, yr, pv, B * T * H, T, H, d, 10000, inter);
            gad_tensor *y = gad_rope(gad_cast(xt, ty), pos, 10000, inter);
            CHECK_OK();
            gad_read_f64(y, yg, (size_t)n);
            double e = 0;
            for (int64_t i = 0; i < n; i++) e = fmax(e, fabs(yg[i] - yr[i]));
            CHECK_MSG(e < (dt ? 1e-5 : 1e-13), "rope inter %d %s: %g", inter, dt ? "f32" : "f64", e);
            /* x [B*T... as [B, H', T, d]: NULL positions are 0..T-1 on axis -2 */
            gad_tensor *x2 = gad_reshape(gad_cast(xt, ty), (int64_t[]){B * H, T, d}, 3);
            rope_ref(x, yr, iota, B * H * T, T, 1, d, 500, inter);
            gad_read_f64(gad_rope(x2, NULL, 500, inter), yg, (size_t)n);
            e = 0;
            for (int64_t i = 0; i < n; i++) e = fmax(e, fabs(yg[i] - yr[i]));
            CHECK_MSG(e < (dt ? 1e-5 : 1e-13), "rope NULL positions inter %d: %g", inter, e);
        }
    /* the VJP is the inverse rotation: the gradient of sum(w * rope(x)) is rope^-1(w) */
    gad_tensor *xl = gad_requires_grad(gad_clone(xt));
    gad_tensor *w = gad_rng_uniform_tensor(r, (int64_t[]){B, T, H, d}, 4, GAD_F64, -1, 1);
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_mul(gad_rope(xl, pos, 10000, 1), w)), &xl, 1, &g) == GAD_OK);
    gad_tensor *back = gad_rope(g, pos, 10000, 1); /* rotating back gives w */
    CHECK(max_rel(back, w, 1) < 1e-13);
    free(x);
    free(yr);
    free(yg);
    gad_rng_free(r);
    gad_scope_end();
}

TEST(sinusoidal_table) {
    gad_scope_begin();
    gad_tensor *t = gad_sinusoidal_positions(3, 4, 10000, GAD_F64);
    CHECK_VALUES(t, 1e-15, 0, 1, 0, 1, sin(1), cos(1), sin(0.01), cos(0.01), sin(2), cos(2),
                 sin(0.02), cos(0.02));
    CHECK_SHAPE(gad_sinusoidal_positions(0, 6, 10000, GAD_F32), 0, 6);
    /* no columns: empty at once, whatever T (the fuzzer's 2^60 - 1 rows
     * were a loop of 2^60 empty rows) */
    const int64_t huge = ((int64_t)1 << 60) - 1;
    CHECK_SHAPE(gad_sinusoidal_positions(huge, 0, 10000, GAD_F32), huge, 0);
    CHECK(gad_sinusoidal_positions(3, 5, 10000, GAD_F32) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "sinusoidal_positions");
    gad_scope_end();
}

TEST(errors) {
    gad_scope_begin();
    gad_tensor *q = gad_zeros((int64_t[]){1, 4, 3, 8}, 4, GAD_F32);
    gad_tensor *k = gad_zeros((int64_t[]){1, 3, 5, 8}, 4, GAD_F32);
    gad_tensor *k2 = gad_zeros((int64_t[]){1, 2, 5, 8}, 4, GAD_F32);
    const char *op = "scaled_dot_product_attention";
    CHECK(gad_scaled_dot_product_attention(q, k, k, NULL, 0, 0, 0, NULL) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, op);
    CHECK(gad_scaled_dot_product_attention(q, k2, k2, NULL, 0, 0.5, 0, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, op);
    CHECK(gad_scaled_dot_product_attention(q, k2, k2, NULL, 0, 1, 0, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, op);
    gad_tensor *m = gad_zeros((int64_t[]){3, 5}, 2, GAD_F32);
    CHECK(gad_scaled_dot_product_attention(q, k2, k2, m, 1, 0, 0, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, op);
    CHECK(gad_scaled_dot_product_attention(q, k2, k2, gad_zeros((int64_t[]){3, 4}, 2, GAD_F32),
                                           0, 0, 0, NULL) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, op);
    CHECK(gad_scaled_dot_product_attention(q, k2, k2, gad_cast(m, GAD_F64), 0, 0, 0, NULL) ==
          NULL);
    CHECK_ERR(GAD_ERR_DTYPE, op);
    CHECK(gad_scaled_dot_product_attention(q, gad_cast(k2, GAD_F64), k2, NULL, 0, 0, 0, NULL) ==
          NULL);
    CHECK_ERR(GAD_ERR_DTYPE, op);
    CHECK(gad_rope(gad_zeros((int64_t[]){2, 3}, 2, GAD_F32), NULL, 10000, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "rope");
    CHECK(gad_rope(q, gad_zeros((int64_t[]){3}, 1, GAD_F32), 10000, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "rope");
    CHECK(gad_rope(q, gad_from_i64((int64_t[]){1, 2}, (int64_t[]){2}, 1), 10000, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "rope");
    CHECK(gad_rope(q, NULL, 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "rope");
    gad_scope_end();
}

int main(void) {
    RUN(against_composition_f64);
    RUN(against_composition_f32);
    RUN(fully_masked_rows);
    RUN(dropout_against_regenerated_mask);
    RUN(second_order);
    RUN(tape_memory);
    RUN(threads_same_bits);
    RUN(rope_explicit_rotation);
    RUN(sinusoidal_table);
    RUN(errors);
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0);
    return test_summary();
}
