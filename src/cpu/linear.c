/* linear.c: the CPU's fused linear family (backend/linear.h): the pass
 * that adds a linear layer's bias to its product and applies the
 * activation, and the pass that takes the activation's derivative and sums
 * the bias gradient, each over blocks of rows small enough to stay in the
 * cache between their two steps. The activations are the elementwise
 * kernels' own (gad__ew_unary_span, gad__ew_grad_span), so a fused layer
 * gives the bits of gad_relu(gad_add(gad_matmul(x, w), b)) and its kind. */
#include "backend/linear.h"
#include "cpu/cpu.h"
#include "cpu/fused.h"

/* Rows a thread takes at least: below about this many elements, a second
 * thread costs more than it saves (the elementwise grain). */
#define LIN_GRAIN 16384
/* Rows a step takes: about this many elements, the L1 of every x86 core
 * we run on, so that the activation reads what the bias add wrote. */
#define LIN_STEP 2048

static int64_t rows_for(int64_t F, int64_t elems) {
    return F > 0 && elems / F > 1 ? elems / F : 1;
}

GAD_CLONES static void bias_f32(int64_t rows, int64_t F, float *restrict z,
                                const float *restrict b) {
    for (int64_t r = 0; r < rows; r++, z += F)
        for (int64_t j = 0; j < F; j++) z[j] += b[j];
}
GAD_CLONES static void bias_f64(int64_t rows, int64_t F, double *restrict z,
                                const double *restrict b) {
    for (int64_t r = 0; r < rows; r++, z += F)
        for (int64_t j = 0; j < F; j++) z[j] += b[j];
}
/* relu in place, as elementwise.def's row: x > 0 ? x : 0 (NaN gives 0) */
GAD_CLONES static void relu_f32(int64_t n, float *restrict z) {
    for (int64_t i = 0; i < n; i++) z[i] = z[i] > 0 ? z[i] : 0.0f;
}
GAD_CLONES static void relu_f64(int64_t n, double *restrict z) {
    for (int64_t i = 0; i < n; i++) z[i] = z[i] > 0 ? z[i] : 0.0;
}
/* s += rows of g, one row after another */
GAD_CLONES static void colsum_f32(int64_t rows, int64_t F, const float *restrict g,
                                  float *restrict s) {
    for (int64_t r = 0; r < rows; r++, g += F)
        for (int64_t j = 0; j < F; j++) s[j] += g[j];
}
GAD_CLONES static void colsum_f64(int64_t rows, int64_t F, const double *restrict g,
                                  double *restrict s) {
    for (int64_t r = 0; r < rows; r++, g += F)
        for (int64_t j = 0; j < F; j++) s[j] += g[j];
}

static bool act_kernels(int act, gad_ukernel *uk, gad_gkernel *gk) {
    switch (act) {
    case GAD_ACT_RELU: *uk = GAD_UK_RELU, *gk = GAD_GK_RELU; return true;
    case GAD_ACT_GELU: *uk = GAD_UK_GELU, *gk = GAD_GK_GELU; return true;
    case GAD_ACT_GELU_ERF: *uk = GAD_UK_GELU_ERF, *gk = GAD_GK_GELU_ERF; return true;
    case GAD_ACT_SILU: *uk = GAD_UK_SILU, *gk = GAD_GK_SILU; return true;
    default: return false;
    }
}

/* ---------------------------------------------------------------- forward */

typedef struct {
    char *z, *y;
    const char *b;
    int64_t F, step;
    size_t es;
    int act;
    bool f64;
    gad_ukernel uk;
} fwd_ctx;

static void fwd_rows(void *vc, int64_t lo, int64_t hi) {
    const fwd_ctx *c = vc;
    for (int64_t r = lo; r < hi; r += c->step) {
        int64_t k = hi - r < c->step ? hi - r : c->step, n = k * c->F;
        size_t off = (size_t)(r * c->F) * c->es;
        char *z = c->z + off;
        if (c->b) {
            if (c->f64) bias_f64(k, c->F, (double *)z, (const double *)c->b);
            else bias_f32(k, c->F, (float *)z, (const float *)c->b);
        }
        if (c->act == GAD_ACT_RELU) {
            if (c->f64) relu_f64(n, (double *)z);
            else relu_f32(n, (float *)z);
        } else if (c->act != GAD_ACT_NONE) {
            gad__ew_unary_span(c->uk, c->f64, n, z, c->y + off, NULL);
        }
    }
}

static void lin_fwd(gad_tensor *z, const gad_tensor *b, int act, gad_tensor *y) {
    int64_t F = z->rank ? z->shape[z->rank - 1] : 1;
    if (z->numel == 0 || F == 0) return;
    gad_gkernel gk;
    fwd_ctx c = {.z = gad__ptr(z), .y = gad__ptr(y), .b = b ? gad__ptr(b) : NULL, .F = F,
                 .step = rows_for(F, LIN_STEP), .es = gad__dsize(z->dtype), .act = act,
                 .f64 = z->dtype == GAD_F64};
    if (!act_kernels(act, &c.uk, &gk) && act != GAD_ACT_NONE) return;
    if (act == GAD_ACT_NONE && !b) return;
    gad__parallel_for(z->numel / F, rows_for(F, LIN_GRAIN), fwd_rows, &c);
}

/* --------------------------------------------------------------- backward
 * The rows go in blocks of a size fixed by F alone; each block's column
 * sums land in a row of part, and db adds those rows in order, so that db
 * does not depend on the threads. */

typedef struct {
    const char *gy, *v;
    char *gz, *part;
    int64_t F, rows, blk;
    size_t es;
    bool f64;
    gad_gkernel gk;
} bwd_ctx;

static void bwd_blocks(void *vc, int64_t lo, int64_t hi) {
    const bwd_ctx *c = vc;
    for (int64_t i = lo; i < hi; i++) {
        int64_t r = i * c->blk, k = c->rows - r < c->blk ? c->rows - r : c->blk;
        size_t off = (size_t)(r * c->F) * c->es;
        const char *g = c->gy + off;
        if (c->v) {
            gad__ew_grad_span(c->gk, c->f64, k * c->F, g, c->v + off, c->gz + off, NULL);
            g = c->gz + off;
        }
        if (!c->part) continue;
        char *s = c->part + (size_t)(i * c->F) * c->es;
        memcpy(s, g, (size_t)c->F * c->es);
        if (c->f64) colsum_f64(k - 1, c->F, (const double *)g + c->F, (double *)s);
        else colsum_f32(k - 1, c->F, (const float *)g + c->F, (float *)s);
    }
}

static int lin_bwd(const gad_tensor *gy, const gad_tensor *v, int act, gad_tensor *gz,
                   gad_tensor *db) {
    int64_t F = gy->rank ? gy->shape[gy->rank - 1] : 1;
    int64_t rows = F ? gy->numel / F : 0;
    gad_ukernel uk;
    bwd_ctx c = {.gy = gad__ptr(gy), .F = F, .rows = rows, .es = gad__dsize(gy->dtype),
                 .f64 = gy->dtype == GAD_F64, .blk = rows_for(F, LIN_GRAIN)};
    if (act != GAD_ACT_NONE) {
        if (!act_kernels(act, &uk, &c.gk)) return 0;
        c.v = gad__ptr(v);
        c.gz = gad__ptr(gz);
    }
    if (db) {
        memset(gad__ptr(db), 0, (size_t)db->numel * c.es);
        if (rows == 0) return 0;
    }
    if (rows == 0 || F == 0 || (!c.v && !db)) return 0;
    int64_t nblk = (rows + c.blk - 1) / c.blk;
    size_t pbytes = db && nblk > 1 ? (size_t)(nblk * F) * c.es : 0;
    if (db) {
        c.part = nblk > 1 ? gad__alloc(pbytes) : gad__ptr(db);
        if (!c.part)
            return gad__err(GAD_ERR_MEMORY, "linear_act",
                            "cannot allocate %lld x %lld partial bias sums",
                            (long long)nblk, (long long)F),
                   -1;
    }
    gad__parallel_for(nblk, 1, bwd_blocks, &c);
    if (pbytes) {
        char *d = gad__ptr(db);
        memcpy(d, c.part, (size_t)F * c.es);
        if (c.f64) colsum_f64(nblk - 1, F, (const double *)c.part + F, (double *)d);
        else colsum_f32(nblk - 1, F, (const float *)c.part + F, (float *)d);
        gad__free(c.part, pbytes);
    }
    return 0;
}

const gad_be_linear gad__cpu_linear = {.fwd = lin_fwd, .bwd = lin_bwd, .half = 0};
