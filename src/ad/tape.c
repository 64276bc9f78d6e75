/* tape.c: recording nodes on the tape: no-grad mode, gad__track and the
 * saved values, leaves and their gradient slots (DESIGN §6). The tape knows
 * no op (a node carries its VJP through its gad_op_info) and runs no pass:
 * the reverse pass is src/grad/engine.c, above the ops whose VJPs it calls. */
#include "ad_int.h"

_Thread_local int gad__no_grad;

void gad_no_grad_begin(void) { gad__no_grad++; }
void gad_no_grad_end(void) {
    if (gad__no_grad > 0) gad__no_grad--;
}
int gad_grad_enabled(void) { return gad__no_grad == 0; }

/* ------------------------------------------------------------- recording */

/* An alias of t that keeps (with_node) or drops t's node. */
static gad_tensor *alias_of(const char *op, gad_tensor *t, bool with_node) {
    gad_tensor *a = gad__alias(op, t);
    if (a && with_node) a->node = gad__node_retain(t->node);
    return a;
}

/* gad__track's node, out of line: the no-grad path and constants' ops
 * then return without saving the registers that this needs. */
static GAD_HOT __attribute__((noinline)) gad_tensor *track_node(gad_tensor *y, const gad_op_info *info,
                                                                gad_tensor *const *in, int n,
                                                                gad_tensor *const *save, int nsave) {
    gad_node *nd = gad__node_new(n, nsave, y->rank, info->pwords);
    if (!nd) goto nomem;
    nd->info = info;
    nd->dtype = y->dtype;
    nd->dev = y->dev;
    for (int d = 0; d < y->rank; d++) nd->shape[d] = y->shape[d]; /* no rep movs */
    uint32_t level = 0;
    for (int i = 0; i < n; i++) {
        gad_node *p = in[i] ? in[i]->node : NULL;
        nd->parents[i] = gad__node_retain(p);
        if (p && p->level >= level) /* saturates: 4e9 ops deep, never */
            level = p->level == UINT32_MAX ? UINT32_MAX : p->level + 1;
    }
    nd->level = level;
    for (int i = 0; i < nsave; i++) {
        if (!save[i]) continue;
        bool out = save[i] == y;
        nd->saved[i] = alias_of(info->name, save[i], !out);
        if (!nd->saved[i]) {
            gad__node_release(nd);
            goto nomem;
        }
        if (out) nd->out_saved |= (uint8_t)(1u << i);
    }
    y->node = nd;
    return y;
nomem:
    gad_release(y);
    return gad__err(GAD_ERR_MEMORY, info->name, "cannot record a tape node");
}

GAD_HOT gad_tensor *gad__track(gad_tensor *y, const gad_op_info *info,
                               gad_tensor *const *in, int n, gad_tensor *const *save,
                               int nsave) {
    if (!y || !gad__tracks(in, n)) return y;
    return track_node(y, info, in, n, save, nsave);
}

GAD_HOT gad_tensor *gad__saved(gad_node *n, int i) {
    gad_tensor *s = n->saved[i];
    gad_tensor *a = gad__alias(n->info->name, s);
    if (!a) return NULL;
    a->node = gad__node_retain((n->out_saved >> i) & 1 ? n : s->node);
    return gad__own(a);
}

/* ------------------------------------------------------------------ leaves */

gad_tensor *gad_requires_grad(gad_tensor *t) {
    if (gad__bad_tensor(t)) return gad__bad_arg("requires_grad", t);
    if (gad__need_floating("requires_grad", t)) return NULL;
    if (t->node) return t;
    gad_node *leaf = gad__node_new(0, 0, t->rank, 0);
    if (!leaf) return gad__err(GAD_ERR_MEMORY, "requires_grad", "cannot allocate a leaf");
    leaf->dtype = t->dtype;
    leaf->dev = t->dev;
    memcpy(leaf->shape, t->shape, (size_t)t->rank * sizeof *leaf->shape);
    t->node = leaf;
    return t;
}

/* A released tensor is neither (and the error says why). */
static bool live(const char *op, const gad_tensor *t) {
    if (!t) return false;
    if (GAD_LIKELY(!gad__released(t))) return true;
    gad__err_released(op);
    return false;
}

int gad_is_tracked(const gad_tensor *t) { return live("is_tracked", t) && t->node; }
int gad_is_leaf(const gad_tensor *t) { return live("is_leaf", t) && t->node && !t->node->info; }

gad_tensor *gad_detach(gad_tensor *t) {
    if (gad__bad_tensor(t)) return gad__bad_arg("detach", t);
    return gad__own(gad__alias("detach", t));
}

gad_tensor *gad_leaf_grad(gad_tensor *t) {
    if (gad__bad_tensor(t)) return gad__bad_arg("leaf_grad", t);
    if (!gad_is_leaf(t))
        return gad__err(GAD_ERR_DOMAIN, "leaf_grad", "tensor is not a leaf");
    return t->node->grad ? gad__own(gad_retain(t->node->grad)) : NULL;
}

int gad_leaf_has_grad(const gad_tensor *t) { return gad_is_leaf(t) && t->node->grad; }

void gad_zero_grad(gad_tensor *const *params, int n) {
    for (int i = 0; params && i < n; i++) {
        if (params[i] && gad__released(params[i])) {
            gad__err_released("zero_grad");
            continue;
        }
        if (!gad_is_leaf(params[i])) continue;
        gad_node *leaf = params[i]->node;
        gad_release(leaf->grad);
        leaf->grad = NULL;
    }
}

/* -------------------------------------------- VJPs through a composition */

int (*gad__vjp_composed_hook)(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin,
                              gad_tensor *y);

int gad__vjp_composed(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin,
                      gad_tensor *y) {
    /* VJPs run only inside a reverse pass, so the pass has set the hook */
    return gad__vjp_composed_hook(n, gy, need, gin, y);
}
