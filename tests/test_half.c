/* test_half.c: the two-byte floats' conversions against PyTorch's tables
 * (tests/reference/half, made by make_half_tables.py): every f16 and bf16
 * bit pattern to f32 and back, f32/f64/i64 -> half on ties, subnormals,
 * overflow and NaN, on each path of half_vec.h (auto, the portable one,
 * the scalar loop) and through gad_cast on packed, strided and reversed
 * tensors with 1 and 2 threads; half -> the other dtypes by the cast
 * rules; views and copies of 2-byte tensors. */
#include "test.h"

#include "half.h"
#include "half_vec.h"

/* every THIN-th record under sanitizers */
#define THIN (TEST_SANITIZED ? 7 : 1)

static void *load(const char *name, size_t *n) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/reference/half/%s", GAD_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)sz);
    if (!p || fread(p, 1, (size_t)sz, f) != (size_t)sz) exit(1);
    fclose(f);
    *n = (size_t)sz;
    return p;
}

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static const int levels[3] = {GAD_HALF_VEC_AUTO, GAD_HALF_VEC_PORTABLE, GAD_HALF_VEC_SCALAR};

/* A 1-D tensor of dtype from raw bytes, as the conversions see it. */
static gad_tensor *raw(gad_dtype_t dt, const void *p, int64_t n) {
    return gad_from_raw(dt, p, &n, 1);
}

/* all 65,536 patterns to f32 (table) and back (the same pattern, NaN
 * excepted: PyTorch's canonical NaN) */
static void all_patterns(int bf) {
    size_t sz;
    unsigned char *tab = load(bf ? "bf16_to_f32.bin" : "f16_to_f32.bin", &sz);
    CHECK(sz == 65536 * 4);
    uint16_t *h = malloc(65536 * 2), *back = malloc(65536 * 2);
    float *f = malloc(65536 * 4);
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (int l = 0; l < 3; l++) {
        int old = gad__half_vec_force(levels[l]);
        memset(f, 0, 65536 * 4);
        if (bf) gad__bf16_to_f32_n(h, f, 65536);
        else gad__f16_to_f32_n(h, f, 65536);
        int bad = 0;
        for (int i = 0; i < 65536; i++) {
            uint32_t want = rd32(tab + 4 * i), got = gad__f32_bits(f[i]);
            uint32_t sc = gad__f32_bits(bf ? gad__bf16_to_f32(h[i]) : gad__f16_to_f32(h[i]));
            if ((got != want || sc != want) && bad++ < 5)
                fprintf(stderr, "%s %04x -> %08x, scalar %08x, torch %08x (level %d)\n",
                        bf ? "bf16" : "f16", i, got, sc, want, l);
        }
        CHECK(bad == 0);
        if (bf) gad__f32_to_bf16_n(f, back, 65536);
        else gad__f32_to_f16_n(f, back, 65536);
        bad = 0;
        for (int i = 0; i < 65536; i++) {
            uint16_t want = (uint16_t)i;
            int nan = bf ? (i & 0x7fff) > 0x7f80 : (i & 0x7fff) > 0x7c00;
            if (nan) want = bf ? 0xffff : (uint16_t)(i | 0x0200); /* made quiet */
            if (back[i] != want && bad++ < 5)
                fprintf(stderr, "%s %04x round trip %04x (level %d)\n", bf ? "bf16" : "f16",
                        i, back[i], l);
        }
        CHECK(bad == 0);
        gad__half_vec_force(old);
    }
    free(h), free(back), free(f), free(tab);
}

TEST(f16_all_patterns) { all_patterns(0); }
TEST(bf16_all_patterns) { all_patterns(1); }

/* f32 -> half: the table's records, by each path, at two alignments (a
 * tail of every length), and through gad_cast */
TEST(f32_to_half_table) {
    size_t sz;
    unsigned char *tab = load("f32_to_half.bin", &sz);
    int64_t n = (int64_t)(sz / 8);
    CHECK(n > 50000);
    float *x = malloc((size_t)n * 4);
    uint16_t *wh = malloc((size_t)n * 2), *wb = malloc((size_t)n * 2);
    uint16_t *h = malloc((size_t)n * 2), *b = malloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++) {
        x[i] = gad__bits_f32(rd32(tab + 8 * i));
        wh[i] = rd16(tab + 8 * i + 4), wb[i] = rd16(tab + 8 * i + 6);
    }
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (gad__f32_to_f16(x[i]) != wh[i] || gad__f32_to_bf16(x[i]) != wb[i]) {
            if (bad++ < 5)
                fprintf(stderr, "scalar %08x -> f16 %04x (torch %04x), bf16 %04x (torch %04x)\n",
                        gad__f32_bits(x[i]), gad__f32_to_f16(x[i]), wh[i],
                        gad__f32_to_bf16(x[i]), wb[i]);
        }
    }
    CHECK(bad == 0);
    for (int l = 0; l < 3; l++) {
        int old = gad__half_vec_force(levels[l]);
        for (int start = 0; start < (TEST_SANITIZED ? 1 : 17); start++) {
            gad__f32_to_f16_n(x + start, h + start, n - start);
            gad__f32_to_bf16_n(x + start, b + start, n - start);
            bad = 0;
            for (int64_t i = start; i < n; i++)
                if ((h[i] != wh[i] || b[i] != wb[i]) && bad++ < 5)
                    fprintf(stderr, "level %d (%s/%s) %08x -> %04x %04x, torch %04x %04x\n", l,
                            gad__half_vec_path(0), gad__half_vec_path(1),
                            gad__f32_bits(x[i]), h[i], b[i], wh[i], wb[i]);
            CHECK(bad == 0);
        }
        /* gad_cast of the whole array */
        gad_scope_begin();
        gad_tensor *t = gad_from_f32(x, &n, 1);
        gad_tensor *th = gad_cast(t, GAD_F16), *tb = gad_cast(t, GAD_BF16);
        CHECK(th && tb);
        if (th && tb) {
            CHECK(memcmp(gad_data(th), wh, (size_t)n * 2) == 0);
            CHECK(memcmp(gad_data(tb), wb, (size_t)n * 2) == 0);
        }
        gad_scope_end();
        gad__half_vec_force(old);
    }
    free(x), free(wh), free(wb), free(h), free(b), free(tab);
}

/* f64 and i64 -> half (one rounding to f32 first, as PyTorch) through
 * gad_cast, on each path */
static void wide_to_half(const char *file, gad_dtype_t dt) {
    size_t sz;
    unsigned char *tab = load(file, &sz);
    int64_t n = (int64_t)(sz / 12);
    CHECK(n > 10000);
    uint64_t *x = malloc((size_t)n * 8);
    uint16_t *wh = malloc((size_t)n * 2), *wb = malloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++) {
        x[i] = rd64(tab + 12 * i);
        wh[i] = rd16(tab + 12 * i + 8), wb[i] = rd16(tab + 12 * i + 10);
    }
    for (int l = 0; l < 3; l++) {
        int old = gad__half_vec_force(levels[l]);
        gad_scope_begin();
        gad_tensor *t = raw(dt, x, n);
        gad_tensor *th = gad_cast(t, GAD_F16), *tb = gad_cast(t, GAD_BF16);
        CHECK(th && tb);
        if (th && tb) {
            const uint16_t *h = gad_data(th), *b = gad_data(tb);
            int bad = 0;
            for (int64_t i = 0; i < n; i++)
                if ((h[i] != wh[i] || b[i] != wb[i]) && bad++ < 5)
                    fprintf(stderr, "%s %016llx -> %04x %04x, torch %04x %04x (level %d)\n",
                            file, (unsigned long long)x[i], h[i], b[i], wh[i], wb[i], l);
            CHECK(bad == 0);
        }
        gad_scope_end();
        gad__half_vec_force(old);
    }
    free(x), free(wh), free(wb), free(tab);
}

TEST(f64_to_half_table) { wide_to_half("f64_to_half.bin", GAD_F64); }
TEST(i64_to_half_table) { wide_to_half("i64_to_half.bin", GAD_I64); }

/* half -> every dtype by gad_cast = the cast rules applied to the exact
 * f32 value (which the tables fixed above) */
TEST(half_to_every_dtype) {
    static uint16_t all[65536];
    for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    gad_dtype_t to[] = {GAD_F32, GAD_F64, GAD_I64, GAD_I32, GAD_U8, GAD_BOOL, GAD_F16, GAD_BF16};
    for (int bf = 0; bf < 2; bf++) {
        gad_scope_begin();
        gad_tensor *t = raw(bf ? GAD_BF16 : GAD_F16, all, 65536);
        for (size_t d = 0; d < sizeof to / sizeof *to; d++) {
            gad_tensor *c = gad_cast(t, to[d]);
            CHECK(c != NULL);
            if (!c) continue;
            const char *p = gad_data(c);
            int bad = 0;
            for (int i = 0; i < 65536; i += THIN) {
                float v = bf ? gad__bf16_to_f32(all[i]) : gad__f16_to_f32(all[i]);
                double dv = v;
                int ok;
                switch (to[d]) {
                case GAD_F32: ok = gad__f32_bits(((const float *)p)[i]) == gad__f32_bits(v); break;
                case GAD_F64: ok = isnan(dv) ? isnan(((const double *)p)[i])
                                             : ((const double *)p)[i] == dv; break;
                case GAD_I64: {
                    int64_t w = isnan(dv) ? 0 : dv >= 9.2e18 ? INT64_MAX : dv <= -9.2e18 ? INT64_MIN : (int64_t)dv;
                    ok = ((const int64_t *)p)[i] == w;
                    break;
                }
                case GAD_I32: {
                    int32_t w = isnan(dv) ? 0 : dv >= 2147483647.0 ? INT32_MAX
                              : dv <= -2147483648.0 ? INT32_MIN : (int32_t)dv;
                    ok = ((const int32_t *)p)[i] == w;
                    break;
                }
                case GAD_U8: {
                    uint8_t w = isnan(dv) || dv <= 0 ? 0 : dv >= 255 ? 255 : (uint8_t)dv;
                    ok = ((const uint8_t *)p)[i] == w;
                    break;
                }
                case GAD_BOOL: ok = ((const uint8_t *)p)[i] == (v != 0); break;
                /* the same dtype: t itself, every bit kept */
                case GAD_F16: ok = ((const uint16_t *)p)[i] == (bf ? gad__f32_to_f16(v) : all[i]); break;
                default: ok = ((const uint16_t *)p)[i] == (bf ? all[i] : gad__f32_to_bf16(v)); break;
                }
                if (!ok && bad++ < 5)
                    fprintf(stderr, "%s %04x -> %s wrong\n", bf ? "bf16" : "f16", i,
                            gad_dtype_name(to[d]));
            }
            CHECK(bad == 0);
        }
        gad_scope_end();
    }
}

/* ints -> half and back through i32/u8/bool; int -> narrower int wraps */
TEST(int_casts) {
    gad_scope_begin();
    int32_t i32[] = {0, 1, -1, 2049, 65519, 65520, -65520, 16777217, INT32_MAX, INT32_MIN};
    gad_tensor *t = raw(GAD_I32, i32, 10);
    gad_tensor *h = gad_cast(t, GAD_F16), *b = gad_cast(t, GAD_BF16);
    const uint16_t *hp = gad_data(h), *bp = gad_data(b);
    for (int i = 0; i < 10; i++) {
        CHECK(hp[i] == gad__f32_to_f16((float)i32[i]));
        CHECK(bp[i] == gad__f32_to_bf16((float)i32[i]));
    }
    uint8_t u8[] = {0, 1, 7, 128, 255};
    gad_tensor *u = gad_cast(raw(GAD_U8, u8, 5), GAD_BF16);
    float f[5];
    CHECK(gad_read_f32(u, f, 5) == GAD_OK);
    for (int i = 0; i < 5; i++) CHECK(f[i] == u8[i]);
    /* the narrowing rules: i64 -> i32 / u8 keep the low bits */
    int64_t big[] = {300, -1, (int64_t)1 << 33 | 5};
    gad_tensor *w = gad_cast(raw(GAD_I64, big, 3), GAD_U8);
    CHECK(((const uint8_t *)gad_data(w))[0] == 44 && ((const uint8_t *)gad_data(w))[1] == 255);
    gad_tensor *w32 = gad_cast(raw(GAD_I64, big, 3), GAD_I32);
    CHECK(((const int32_t *)gad_data(w32))[2] == 5);
    /* float -> u8 / i32 saturate, NaN -> 0 */
    float fv[] = {300.f, -5.f, NAN, 3e9f, -3e9f, 2.9f};
    gad_tensor *fs = gad_from_f32(fv, (int64_t[]){6}, 1);
    const uint8_t *us = gad_data(gad_cast(fs, GAD_U8));
    CHECK(us[0] == 255 && us[1] == 0 && us[2] == 0 && us[5] == 2);
    const int32_t *is = gad_data(gad_cast(fs, GAD_I32));
    CHECK(is[2] == 0 && is[3] == INT32_MAX && is[4] == INT32_MIN && is[5] == 2);
    gad_scope_end();
}

/* strided, transposed and reversed sources give the packed answer; 1 and
 * 2 threads give the same bits */
TEST(strided_and_threads) {
    int64_t rows = TEST_SANITIZED ? 67 : 523, cols = TEST_SANITIZED ? 45 : 389;
    int64_t shp[2] = {rows, cols}, n = rows * cols;
    gad_scope_begin();
    gad_rng *r = gad_rng_new(7);
    gad_tensor *x = gad_rng_normal_tensor(r, shp, 2, GAD_F32, 0, 1000);
    gad_rng_free(r);
    gad_tensor *xt = gad_transpose(x), *xtc = gad_contiguous(xt);
    gad_range rev[2] = {GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1), GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -3)};
    gad_tensor *xr = gad_slice(x, rev, 2), *xrc = gad_contiguous(xr);
    gad_dtype_t dts[] = {GAD_F16, GAD_BF16, GAD_F64, GAD_I32};
    for (int d = 0; d < 4; d++) {
        for (int l = 0; l < 2; l++) {
            int old = gad__half_vec_force(levels[l]);
            gad_tensor *a = gad_cast(xt, dts[d]), *b = gad_cast(xtc, dts[d]);
            CHECK(memcmp(gad_data(a), gad_data(b), (size_t)n * gad_dtype_size(dts[d])) == 0);
            a = gad_cast(xr, dts[d]), b = gad_cast(xrc, dts[d]);
            CHECK(memcmp(gad_data(a), gad_data(b), (size_t)gad_numel(xr) * gad_dtype_size(dts[d])) == 0);
            gad__half_vec_force(old);
        }
        /* and back from the half, strided */
        gad_tensor *h = gad_cast(x, dts[d]);
        gad_tensor *ht = gad_transpose(h);
        gad_tensor *a = gad_cast(ht, GAD_F32), *b = gad_cast(gad_contiguous(ht), GAD_F32);
        CHECK(memcmp(gad_data(a), gad_data(b), (size_t)n * 4) == 0);
    }
    gad_set_num_threads(1);
    gad_tensor *one = gad_cast(xt, GAD_BF16), *one16 = gad_cast(x, GAD_F16);
    gad_set_num_threads(2);
    gad_tensor *two = gad_cast(xt, GAD_BF16), *two16 = gad_cast(x, GAD_F16);
    CHECK(memcmp(gad_data(one), gad_data(two), (size_t)n * 2) == 0);
    CHECK(memcmp(gad_data(one16), gad_data(two16), (size_t)n * 2) == 0);
    gad_scope_end();
}

#define SHP(...) ((const int64_t[]){__VA_ARGS__})

/* t's elements as f64 (n of them), compared with ref's */
static int same_values(gad_tensor *t, gad_tensor *ref) {
    if (!t || !ref || gad_numel(t) != gad_numel(ref) || gad_rank(t) != gad_rank(ref)) return 0;
    int64_t n = gad_numel(t);
    double *a = malloc((size_t)(n + 1) * 8), *b = malloc((size_t)(n + 1) * 8);
    int ok = gad_read_f64(t, a, (size_t)n) == GAD_OK && gad_read_f64(ref, b, (size_t)n) == GAD_OK;
    for (int64_t i = 0; ok && i < n; i++) ok = a[i] == b[i];
    for (int r = 0; ok && r < gad_rank(t); r++) ok = gad_shape(t)[r] == gad_shape(ref)[r];
    free(a), free(b);
    return ok;
}

/* The views and copies of every new dtype give the f64 tensor's values
 * (small integers: exact in each dtype) */
TEST(views_of_new_dtypes) {
    gad_dtype_t dts[] = {GAD_F16, GAD_BF16, GAD_I32, GAD_U8};
    for (int d = 0; d < 4; d++) {
        gad_scope_begin();
        gad_tensor *r = gad_reshape(gad_arange(0, 24, 1, GAD_F64), SHP(2, 3, 4), 3);
        gad_tensor *x = gad_cast(r, dts[d]);
        CHECK(x && gad_dtype(x) == dts[d]);
        CHECK(same_values(x, r));
        CHECK(same_values(gad_transpose(x), gad_transpose(r)));
        CHECK(same_values(gad_contiguous(gad_transpose(x)), gad_transpose(r)));
        CHECK(same_values(gad_permute(x, (const int[]){2, 0, 1}, 3),
                          gad_permute(r, (const int[]){2, 0, 1}, 3)));
        gad_range rg[3] = {GAD_ALL, GAD_RANGE_STEP(2, GAD_NIL, -1), GAD_RANGE_STEP(1, 4, 2)};
        CHECK(same_values(gad_slice(x, rg, 3), gad_slice(r, rg, 3)));
        CHECK(same_values(gad_clone(gad_slice(x, rg, 3)), gad_slice(r, rg, 3)));
        CHECK(same_values(gad_reshape(gad_transpose(x), SHP(6, 4), 2),
                          gad_reshape(gad_transpose(r), SHP(6, 4), 2)));
        gad_tensor *x1 = gad_reshape(gad_slice(x, (gad_range[]){GAD_RANGE(0, 1)}, 1), SHP(1, 12), 2);
        gad_tensor *r1 = gad_reshape(gad_slice(r, (gad_range[]){GAD_RANGE(0, 1)}, 1), SHP(1, 12), 2);
        CHECK(same_values(gad_broadcast_to(x1, SHP(5, 12), 2), gad_broadcast_to(r1, SHP(5, 12), 2)));
        CHECK(same_values(gad_contiguous(gad_broadcast_to(x1, SHP(5, 12), 2)),
                          gad_broadcast_to(r1, SHP(5, 12), 2)));
        gad_tensor *h = gad_to_device(x, GAD_CPU);
        CHECK(same_values(h, r));
        gad_tensor *xs[2] = {x, gad_transpose(gad_transpose(x))}, *rs[2] = {r, r};
        CHECK(same_values(gad_cat(xs, 2, 1), gad_cat(rs, 2, 1)));
        CHECK(same_values(gad_stack(xs, 2, 0), gad_stack(rs, 2, 0)));
        CHECK(gad_item(gad_select(gad_select(gad_select(x, 0, 1), 0, 2), 0, 3)) == 23);
        gad_scope_end();
        gad_clear_error();
    }
}

/* Constructors in the new dtypes: computed in f32 (i64 for the integer
 * ones) and rounded once, as PyTorch */
TEST(creation) {
    gad_scope_begin();
    for (int bf = 0; bf < 2; bf++) {
        gad_dtype_t dt = bf ? GAD_BF16 : GAD_F16;
        gad_tensor *a = gad_arange(0, 1, 0.1, dt), *a32 = gad_arange(0, 1, 0.1, GAD_F32);
        CHECK(a && gad_numel(a) == gad_numel(a32) && gad_dtype(a) == dt);
        CHECK(same_values(a, gad_cast(a32, dt)));
        gad_tensor *l = gad_linspace(-1, 1, 7, dt);
        CHECK(same_values(l, gad_cast(gad_linspace(-1, 1, 7, GAD_F32), dt)));
        gad_tensor *e = gad_eye(3, dt);
        CHECK(same_values(e, gad_eye(3, GAD_F64)));
        gad_tensor *f = gad_full(SHP(3), 1, dt, 0.1);
        CHECK(gad_item(gad_select(f, 0, 2)) == (bf ? gad__bf16_to_f32(gad__f32_to_bf16(0.1f))
                                                    : gad__f16_to_f32(gad__f32_to_f16(0.1f))));
        gad_rng *r1 = gad_rng_new(3), *r2 = gad_rng_new(3);
        gad_tensor *u = gad_rng_uniform_tensor(r1, SHP(4000), 1, dt, 0, 1);
        gad_tensor *u32 = gad_rng_uniform_tensor(r2, SHP(4000), 1, GAD_F32, 0, 1);
        float fu[4000], f32[4000];
        CHECK(gad_read_f32(u, fu, 4000) == GAD_OK && gad_read_f32(u32, f32, 4000) == GAD_OK);
        int bad = 0;
        for (int i = 0; i < 4000; i++) {
            float want = bf ? gad__bf16_to_f32(gad__f32_to_bf16(f32[i]))
                            : gad__f16_to_f32(gad__f32_to_f16(f32[i]));
            if (want >= 1) want = bf ? 0x1.fep-1f : 0x1.ffcp-1f; /* the half below 1 */
            bad += !(fu[i] == want && fu[i] >= 0 && fu[i] < 1);
        }
        CHECK(bad == 0);
        gad_rng_free(r1), gad_rng_free(r2);
        gad_rng *r3 = gad_rng_new(5);
        CHECK(gad_dtype(gad_rng_normal_tensor(r3, SHP(10), 1, dt, 0, 1)) == dt);
        gad_rng_free(r3);
    }
    int64_t ai[5];
    gad_tensor *ar = gad_arange(250, 260, 2, GAD_U8);
    CHECK(gad_dtype(ar) == GAD_U8 && gad_read_i64(ar, ai, 5) == GAD_OK);
    CHECK(ai[0] == 250 && ai[2] == 254 && ai[3] == 0); /* 256 wraps */
    CHECK(gad_dtype(gad_arange(-3, 3, 1, GAD_I32)) == GAD_I32);
    CHECK(same_values(gad_eye(4, GAD_I32), gad_eye(4, GAD_F64)));
    /* from_raw */
    uint16_t hb[3] = {0x3c00, 0xc000, 0x7e05};
    gad_tensor *t = gad_from_raw(GAD_F16, hb, SHP(3), 1);
    double v[3];
    CHECK(gad_read_f64(t, v, 3) == GAD_OK && v[0] == 1 && v[1] == -2 && isnan(v[2]));
    CHECK(((const uint16_t *)gad_data(t))[2] == 0x7e05); /* the payload is kept */
    CHECK(gad_from_raw(GAD_BOOL, (const uint8_t[]){0, 1, 2}, SHP(3), 1) == NULL);
    CHECK(gad_last_error()->kind == GAD_ERR_DOMAIN);
    gad_clear_error();
    CHECK(gad_from_raw(GAD_BOOL, (const uint8_t[]){0, 1, 1}, SHP(3), 1) != NULL);
    gad_scope_end();
}

/* print: the decimals of the shortest string that reads back */
#define CHECK_PRINT(t, want)                                                   \
    do {                                                                       \
        char pb_[4096];                                                        \
        gad_snprint(pb_, sizeof pb_, (t));                                     \
        CHECK_MSG(strcmp(pb_, (want)) == 0, "\n got: %s\nwant: %s", pb_, (want)); \
    } while (0)

TEST(printing) {
    gad_scope_begin();
    gad_tensor *x = gad_from_f32((const float[]){0.1f, 1.5f, -65504.f, 1e-5f, 0.3f}, SHP(5), 1);
    CHECK_PRINT(gad_cast(x, GAD_F16),
                "tensor([    0.1,     1.5, -65504.,   1e-05,     0.3], dtype=f16)");
    CHECK_PRINT(gad_cast(gad_from_f32((const float[]){0.1f, 1.5f, 0.3f}, SHP(3), 1), GAD_F16),
                "tensor([0.1, 1.5, 0.3], dtype=f16)");
    CHECK_PRINT(gad_cast(gad_from_f32((const float[]){0.1f, 2.f, 0.3f}, SHP(3), 1), GAD_BF16),
                "tensor([0.1,  2., 0.3], dtype=bf16)");
    CHECK_PRINT(gad_cast(gad_scalar_f32(0.1f), GAD_F16), "tensor(0.1, dtype=f16)");
    CHECK_PRINT(gad_cast(gad_from_f32((const float[]){1, 255, 300}, SHP(3), 1), GAD_U8),
                "tensor([  1, 255, 255], dtype=u8)");
    CHECK_PRINT(gad_cast(gad_from_f32((const float[]){-7, 2}, SHP(2), 1), GAD_I32),
                "tensor([-7,  2], dtype=i32)");
    gad_scope_end();
}

int main(void) {
    printf("half_vec paths: f16 %s, bf16 %s\n", gad__half_vec_path(0), gad__half_vec_path(1));
    RUN(f16_all_patterns);
    RUN(bf16_all_patterns);
    RUN(f32_to_half_table);
    RUN(f64_to_half_table);
    RUN(i64_to_half_table);
    RUN(half_to_every_dtype);
    RUN(int_casts);
    RUN(strided_and_threads);
    RUN(views_of_new_dtypes);
    RUN(creation);
    RUN(printing);
    return test_summary();
}
