/* reorder.c: flip and roll (SPEC §3.2), torch.flip and torch.roll: a copy
 * of x with its elements reordered along some axes, for every dtype. They
 * need no kernel: the copy is a strided one (the memory table's), so every
 * back end runs them. The VJP of a flip flips the gradient back; that of a
 * roll rolls it by the negated shifts. */
#include "ops_int.h"

#include <stdio.h>

/* ------------------------------------------------------------------ flip */

/* y = x reversed along the axes in mask: x seen with those strides negated
 * (its last element first), packed. */
static gad_tensor *flip_mask(const char *op, gad_tensor *x, unsigned mask) {
    gad_tensor *y = gad__tensor_like(op, x);
    if (!y) return NULL;
    if (y->numel > 0) { /* an empty tensor has no last element to start at */
        int64_t st[GAD_MAX_RANK], off = x->offset;
        for (int d = 0; d < x->rank; d++) {
            st[d] = x->strides[d];
            if (mask & (1u << d)) {
                off += (x->shape[d] - 1) * st[d];
                st[d] = -st[d];
            }
        }
        gad_tensor *v = gad__view_new(op, x, x->shape, st, x->rank, off);
        if (!v) {
            gad_release(y);
            return NULL;
        }
        gad__pack(v, gad__ptr(y));
        gad_release(v);
    }
    y = gad__track(y, GAD_OP(FLIP), &x, 1, NULL, 0);
    if (y && y->node) GAD_NODE_P(y->node, flip)->mask = mask;
    return gad__own(y);
}

gad_tensor *gad_flip(gad_tensor *x, const int *dims, int ndims) {
    GAD_NEED("flip", x);
    unsigned mask;
    if (gad__axes_mask("flip", dims, ndims, x->rank, &mask)) return NULL;
    return flip_mask("flip", x, mask);
}

/* ------------------------------------------------------------------ roll */

/* s mod n in [0, n), for n > 0 and any s. */
static int64_t mod(int64_t s, int64_t n) {
    int64_t r = s % n;
    return r < 0 ? r + n : r;
}

/* y = x rolled by sh[d] (in [0, shape[d])) along every axis d: y[i] =
 * x[i - sh] per axis. With k axes rolled, 2^k strided copies, one for each
 * combination of the head (x's [0, n - s) to y's [s, n)) and the tail
 * (x's [n - s, n) to y's [0, s)) of each; none of them is empty. */
static gad_tensor *roll_axes(const char *op, gad_tensor *x, const int64_t *sh) {
    gad_tensor *y = gad__tensor_like(op, x);
    if (!y) return NULL;
    int axes[GAD_MAX_RANK], k = 0;
    for (int d = 0; d < x->rank; d++)
        if (sh[d]) axes[k++] = d;
    size_t es = gad__dsize(x->dtype);
    for (unsigned c = 0; y->numel > 0 && c < (1u << k); c++) {
        int64_t shape[GAD_MAX_RANK], off = x->offset, doff = 0;
        memcpy(shape, x->shape, (size_t)x->rank * sizeof *shape);
        for (int j = 0; j < k; j++) {
            int d = axes[j];
            int64_t n = x->shape[d], s = sh[d];
            if (c & (1u << j)) {
                shape[d] = s;
                off += (n - s) * x->strides[d];
            } else {
                shape[d] = n - s;
                doff += s * y->strides[d];
            }
        }
        gad_tensor *v = gad__view_new(op, x, shape, x->strides, x->rank, off);
        if (!v) {
            gad_release(y);
            return NULL;
        }
        gad__copy_strided(v, (char *)gad__ptr(y) + doff * (int64_t)es, y->strides);
        gad_release(v);
    }
    y = gad__track(y, GAD_OP(ROLL), &x, 1, NULL, 0);
    if (y && y->node)
        for (int d = 0; d < x->rank; d++) GAD_NODE_P(y->node, roll)->shift[d] = sh[d];
    return gad__own(y);
}

gad_tensor *gad_roll(gad_tensor *x, const int64_t *shifts, const int *dims, int n) {
    const char *op = "roll";
    GAD_NEED(op, x);
    if (n < 1 || !shifts) return gad__err(GAD_ERR_SHAPE, op, "needs shifts (n = %d)", n);
    int64_t sh[GAD_MAX_RANK] = {0};
    if (!dims) { /* over the flattened tensor, then back to x's shape */
        if (n != 1)
            return gad__err(GAD_ERR_SHAPE, op,
                            "%d shifts without dims (a roll of the flattened tensor takes one)",
                            n);
        int64_t total = x->numel;
        sh[0] = total ? mod(shifts[0], total) : 0;
        gad_scope_begin();
        gad_tensor *f = gad_reshape(x, &total, 1);
        gad_tensor *r = f ? roll_axes(op, f, sh) : NULL;
        gad_tensor *y = r ? gad_keep(gad_reshape(r, x->shape, x->rank)) : NULL;
        gad_scope_end();
        return y;
    }
    for (int i = 0; i < n; i++) { /* an axis given twice rolls by the sum */
        int a;
        if (gad__norm_axis(op, dims[i], x->rank, &a)) return NULL;
        int64_t d = x->shape[a];
        if (d > 0) sh[a] = mod(sh[a] + mod(shifts[i], d), d);
    }
    return roll_axes(op, x, sh);
}

/* ------------------------------------------------------------------ VJPs */

int gad__vjp_flip(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return (gin[0] = flip_mask("flip", gy, (unsigned)GAD_NODE_P(n, flip)->mask)) ? 0 : -1;
}

int gad__vjp_roll(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    int64_t sh[GAD_MAX_RANK];
    for (int d = 0; d < n->rank; d++) {
        int64_t s = GAD_NODE_P(n, roll)->shift[d];
        sh[d] = s ? n->parents[0]->shape[d] - s : 0;
    }
    return (gin[0] = roll_axes("roll", gy, sh)) ? 0 : -1;
}

/* --------------------------------------------------------------- samples */

/* i[0]: the op; flip: i[1] axes, i[2..]: them; roll: i[1] shifts, i[2]
 * whether dims are given, i[3..] the shifts then the dims. */
static gad_tensor *apply_reorder(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    int dims[GAD_MAX_RANK];
    int k = (int)s->i[1];
    if (s->i[0] == GAD_OP_FLIP) {
        for (int j = 0; j < k; j++) dims[j] = (int)s->i[2 + j];
        return gad_flip(in[0], dims, k);
    }
    for (int j = 0; j < k; j++) dims[j] = (int)s->i[3 + k + j];
    return gad_roll(in[0], s->i + 3, s->i[2] ? dims : NULL, k);
}

static int reorder_sample(gad_op_sample *s, gad_rng *r, int op, const int64_t *shape, int rank,
                          const int64_t *params, int np) {
    *s = (gad_op_sample){.n = 1, .apply = apply_reorder, .smooth = 1};
    s->i[0] = op;
    for (int k = 0; k < np; k++) s->i[1 + k] = params[k];
    s->in[0] = gad__sample_leaf(r, shape, rank, -2, 2, 0);
    snprintf(s->what, sizeof s->what, "%s", gad__ops[op].info.name);
    return s->in[0] != NULL;
}

int gad__sample_flip(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[3][3] = {{2, 3, 4}, {3, 4}, {3, 4}};
    static const int ranks[3] = {3, 2, 2};
    static const int64_t p[3][3] = {{2, 0, 2}, {1, -1}, {0}};
    if (v >= 3) return 0;
    return reorder_sample(s, r, GAD_OP_FLIP, shapes[v], ranks[v], p[v], 3);
}

int gad__sample_roll(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[4][3] = {{3, 4}, {3, 4}, {2, 3, 4}, {2, 3}};
    static const int ranks[4] = {2, 2, 3, 2};
    /* n, dims given, shifts, dims */
    static const int64_t p[4][6] = {
        {2, 1, 1, -5, 0, 1}, {1, 0, 7}, {2, 1, -1, 2, 1, 1}, {1, 1, -8, -1}};
    if (v >= 4) return 0;
    return reorder_sample(s, r, GAD_OP_ROLL, shapes[v], ranks[v], p[v], 6);
}
