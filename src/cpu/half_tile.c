/* half_tile.c: the CPU kernels' conversions of f16/bf16 tiles (issue 29).
 * Kernels that take half operands compute in f32: they widen a tile of
 * input into an f32 buffer, run their f32 loop and round the results once
 * into the half output. Widening is exact; narrowing rounds to nearest
 * even with PyTorch's NaN bits (half.h), the same bits as the scalar
 * functions. Contiguous runs go through half_vec.h's vector conversions
 * (F16C, AVX-512 BF16, chosen at run time); strided ones through the
 * scalar functions (no GAD_CLONES: clang emits no symbol for an extern
 * function with target_clones). A file of its own: half.h and vmath.h
 * cannot share one. */
#include "cpu.h"
#include "half.h"
#include "half_vec.h"

void gad__half_widen(int dt, int64_t n, const uint16_t *x, int64_t sx, float *y) {
    if (sx == 1) {
        if (dt == GAD_BF16) gad__bf16_to_f32_n(x, y, n);
        else gad__f16_to_f32_n(x, y, n);
        return;
    }
    if (dt == GAD_BF16)
        for (int64_t i = 0; i < n; i++) y[i] = gad__bf16_to_f32(x[i * sx]);
    else
        for (int64_t i = 0; i < n; i++) y[i] = gad__f16_to_f32(x[i * sx]);
}

void gad__half_narrow(int dt, int64_t n, const float *x, uint16_t *y, int64_t sy) {
    if (sy == 1) {
        if (dt == GAD_BF16) gad__f32_to_bf16_n(x, y, n);
        else gad__f32_to_f16_n(x, y, n);
    } else if (dt == GAD_BF16) {
        for (int64_t i = 0; i < n; i++) y[i * sy] = gad__f32_to_bf16(x[i]);
    } else {
        for (int64_t i = 0; i < n; i++) y[i * sy] = gad__f32_to_f16(x[i]);
    }
}

float gad__half_get(int dt, const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == GAD_BF16 ? gad__bf16_to_f32(h) : gad__f16_to_f32(h);
}

void gad__half_put(int dt, void *p, float v) {
    uint16_t h = dt == GAD_BF16 ? gad__f32_to_bf16(v) : gad__f32_to_f16(v);
    memcpy(p, &h, 2);
}

/* Contiguous conversions of big arrays over gad's threads, in runs of
 * 32K elements (the bits do not depend on the split). */
typedef struct {
    int dt;
    uint16_t *h;
    float *f;
} conv_ctx;

static void widen_range(void *vc, int64_t lo, int64_t hi) {
    conv_ctx *c = vc;
    gad__half_widen(c->dt, hi - lo, c->h + lo, 1, c->f + lo);
}

int gad__half_set_new(const char *op, gad_half_set *s, int n, const gad_tensor *const *t,
                      const bool *in) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += t[i] ? (size_t)t[i]->numel : 0;
    s->bytes = (total ? total : 1) * sizeof(float);
    if (!(s->base = gad__alloc(s->bytes)))
        return gad__err(GAD_ERR_MEMORY, op, "cannot allocate %zu bytes for the f32 copies of "
                                            "half tensors", s->bytes), -1;
    float *p = s->base;
    for (int i = 0; i < n; i++) {
        s->p[i] = t[i] ? p : NULL;
        if (!t[i]) continue;
        conv_ctx c = {t[i]->dtype, gad__ptr(t[i]), p};
        if (in[i]) gad__parallel_for(t[i]->numel, (int64_t)1 << 15, widen_range, &c);
        p += t[i]->numel;
    }
    return 0;
}

void gad__half_set_out(const gad_half_set *s, int i, gad_tensor *t) {
    gad__half_narrow_rows(t->dtype, 1, t->numel, s->p[i], t->numel, gad__ptr(t));
}

typedef struct {
    int dt;
    int64_t cols, ld;
    const float *x;
    uint16_t *y;
} rows_ctx;

static void narrow_run_range(void *vc, int64_t lo, int64_t hi) {
    const rows_ctx *c = vc;
    gad__half_narrow(c->dt, hi - lo, c->x + lo, c->y + lo, 1);
}

static void narrow_rows_range(void *vc, int64_t lo, int64_t hi) {
    const rows_ctx *c = vc;
    for (int64_t i = lo; i < hi; i++)
        gad__half_narrow(c->dt, c->cols, c->x + i * c->ld, c->y + i * c->cols, 1);
}

void gad__half_narrow_rows(int dt, int64_t rows, int64_t cols, const float *x, int64_t ld,
                           uint16_t *y) {
    rows_ctx c = {dt, cols, ld, x, y};
    if (ld == cols) /* one contiguous run */
        gad__parallel_for(rows * cols, (int64_t)1 << 15, narrow_run_range, &c);
    else
        gad__parallel_for(rows, ((int64_t)1 << 15) / (cols + 1) + 1, narrow_rows_range, &c);
}

void gad__half_set_free(gad_half_set *s) {
    if (s->base) gad__free(s->base, s->bytes);
    s->base = NULL;
}
