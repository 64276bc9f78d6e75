/* registry.c: the op table generated from ops.def, which the engine walks
 * through each node's gad_op_info and the tests iterate. */
#include "ops_int.h"

const gad_op_entry gad__ops[GAD_OP_COUNT_] = {
    [GAD_OP_LEAF] = {{"leaf", NULL, 0}, NULL},
#define X(ID, name, family, pwords)                                            \
    [GAD_OP_##ID] = {{#name, gad__vjp_##name, pwords}, gad__sample_##name},
#define NOGRAD(ID, name, family) [GAD_OP_##ID] = {{#name, NULL, 0}, gad__sample_##name},
#define COMPOSITE(ID, name, family) [GAD_OP_##ID] = {{#name, NULL, 0}, gad__sample_##name},
#include "ops.def"
};

/* A node keeps its shape (up to GAD_MAX_RANK words) and its parameters in
 * at most 3 * GAD_MAX_RANK words (src/ad/node.c). */
#define X(ID, name, family, pwords)                                            \
    _Static_assert((pwords) >= 0 && (pwords) <= 2 * GAD_MAX_RANK,              \
                   #name ": too many parameters for a node");
#include "ops.def"

/* the ops that record nodes (X rows); the NOGRAD and COMPOSITE rows come
 * after them */
int gad_op_count(void) { return GAD_OP_NOGRAD_ - 1; }

const char *gad_op_name(int op) {
    return op >= 0 && op < GAD_OP_NOGRAD_ - 1 ? gad__ops[op + 1].info.name : NULL;
}

/* --------------------------------------------------------- shared helpers */

GAD_HOT gad_tensor *gad__unbroadcast(gad_tensor *g, const int64_t *shape, int rank) {
    if (!g) return NULL;
    if (gad__same_shape(g->shape, g->rank, shape, rank)) return g;
    int axes[GAD_MAX_RANK], n = 0, lead = g->rank - rank;
    for (int d = 0; d < g->rank; d++)
        if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) axes[n++] = d;
    gad_tensor *s = n ? gad_sum(g, axes, n, 1) : g;
    return gad_reshape(s, shape, rank);
}

gad_tensor *gad__const_unary(gad_ukernel k, gad_tensor *x, double a, double b) {
    if (GAD_LACKS("vjp", x, unary)) return NULL;
    gad_tensor *y = gad__tensor_like("vjp", x);
    if (!y) return NULL;
    gad_uparams p = {a, b};
    GAD_BE(x)->unary(k, x, y, &p);
    return gad__own(y);
}

gad_tensor *gad__const_binary(gad_bkernel k, gad_tensor *a, gad_tensor *b) {
    int64_t shape[GAD_MAX_RANK];
    int rank;
    if (GAD_LACKS("vjp", a, binary)) return NULL;
    if (gad__broadcast_shapes("vjp", a->shape, a->rank, b->shape, b->rank, shape,
                              &rank))
        return NULL;
    gad_tensor *y = gad__tensor_new("vjp", a->dev, a->dtype, shape, rank);
    if (!y) return NULL;
    GAD_BE(a)->binary(k, a, b, y);
    return gad__own(y);
}

gad_tensor *gad__sample_leaf(gad_rng *r, const int64_t *shape, int rank,
                             double lo, double hi, double away) {
    return gad_requires_grad(gad__sample_values(r, shape, rank, lo, hi, away, 0));
}
