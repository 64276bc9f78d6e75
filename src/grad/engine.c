/* engine.c: the reverse pass and what runs on it: grad, backward, hvp,
 * jvp, the DOT dump (DESIGN §6; the seed's grad/backward/accumulate). It
 * calls the tracked ops (to sum gradients, and through every VJP), so it
 * sits above src/ops; the tape (src/ad) records and knows nothing of it.
 * The engine knows no op: a node carries its VJP through its gad_op_info. */
#include "ad/ad_int.h"
#include "backend/backend.h"

#include <math.h>

static atomic_int g_anomaly;
static atomic_ullong g_epoch;

int gad_set_anomaly(int on) { return atomic_exchange(&g_anomaly, on ? 1 : 0); }

/* ------------------------------------------------------------ growing arrays */

/* Make room for one more element in the array at *pa (*cap elements of es
 * bytes, len of them in use) by doubling it (256 at first). inline_buf is
 * the array's first buffer when that one lives inside its owner (never
 * freed), else NULL. Returns 0, or -1 with the array unchanged. */
static int grow(void *pa, int64_t *cap, int64_t len, size_t es, const void *inline_buf) {
    void *old, *a;
    memcpy(&old, pa, sizeof old);
    int64_t nc = *cap ? *cap * 2 : 256;
    if (!(a = gad__alloc((size_t)nc * es))) return -1;
    if (len) memcpy(a, old, (size_t)len * es);
    if (old != inline_buf) gad__free(old, (size_t)*cap * es);
    memcpy(pa, &a, sizeof a);
    *cap = nc;
    return 0;
}

typedef struct walk {
    gad_node **order; /* post-order: parents before children */
    int64_t len, cap;
} walk;

static void walk_free(walk *w) {
    gad__free(w->order, (size_t)w->cap * sizeof *w->order);
    *w = (walk){0};
}

static int walk_push(walk *w, gad_node *n) {
    if (w->len == w->cap && grow(&w->order, &w->cap, w->len, sizeof *w->order, NULL)) return -1;
    w->order[w->len++] = n;
    return 0;
}

/* Every node reachable from root, each once, in post-order, by an explicit
 * stack (a million-node chain must not recurse), for gad_graph_dot. The
 * stack holds (node, next parent) pairs. */
static int topo_order(gad_node *root, walk *out, const char *op) {
    uint64_t epoch = atomic_fetch_add(&g_epoch, 1) + 1;
    typedef struct frame {
        gad_node *n;
        int next;
    } frame;
    frame *stack = NULL;
    int64_t sp = 0, cap = 0;
    int rc = 0;
    root->visit = epoch;
#define PUSH(node)                                                             \
    do {                                                                       \
        if (sp == cap && grow(&stack, &cap, sp, sizeof *stack, NULL)) goto nomem; \
        stack[sp++] = (frame){(node), 0};                                      \
    } while (0)
    PUSH(root);
    while (sp > 0) {
        frame *f = &stack[sp - 1];
        if (f->next < f->n->nparents) {
            gad_node *p = f->n->parents[f->next++];
            if (p && p->visit != epoch) {
                p->visit = epoch;
                PUSH(p);
            }
        } else {
            if (walk_push(out, f->n)) goto nomem;
            sp--;
        }
    }
#undef PUSH
    goto done;
nomem:
    gad__err(GAD_ERR_MEMORY, op, "cannot allocate the graph walk");
    rc = -1;
done:
    gad__free(stack, (size_t)cap * sizeof *stack);
    return rc;
}

/* A reference to g for a node's slot, moved where one is about to be
 * dropped (no locked instructions): *spare's (the gradient the node being
 * differentiated received, which a VJP may pass on as it is), then the
 * current scope's when g is its newest tensor; else a new one. */
static gad_tensor *slot_ref(gad_tensor *g, gad_tensor **spare) {
    if (g == *spare) {
        *spare = NULL;
        return g;
    }
    return gad__unown_last(g) ? g : gad_retain(g);
}

/* g += add into *slot (a reference owned by the node). */
static int accumulate_into(gad_tensor **slot, gad_tensor *g, gad_tensor **spare) {
    if (!*slot) {
        *slot = slot_ref(g, spare);
        return 0;
    }
    gad_tensor *sum = gad_add(*slot, g);
    if (!sum) return -1;
    gad_release(*slot);
    *slot = slot_ref(sum, spare);
    return 0;
}

static int check_anomaly(gad_node *n, int i, gad_tensor *g) {
    if (!atomic_load_explicit(&g_anomaly, memory_order_relaxed)) return 0;
    if (GAD_LACKS(n->info->name, g, all_finite)) return -1;
    if (GAD_BE(g)->all_finite(g)) return 0;
    gad_node *p = n->parents[i];
    gad__err(GAD_ERR_DOMAIN, n->info->name,
             "anomaly: the VJP produced NaN or Inf for input %d, which was "
             "created by %s",
             i, p->info ? p->info->name : "a leaf");
    return -1;
}

/* A VJP fills exactly the gradients it was asked for (DESIGN §6): for each
 * input with need[i], NULL (zero) or a tensor of that input's shape, dtype
 * and device; nothing for the others. Anything else is a bug of the op's,
 * reported as an error rather than summed into a wrong gradient. */
static GAD_COLD int vjp_mismatch(const gad_node *n, int i, const gad_tensor *g) {
    const gad_node *p = n->parents[i];
    char b1[GAD_SHAPE_BUF], b2[GAD_SHAPE_BUF];
    if (!p)
        gad__err(GAD_ERR_DOMAIN, n->info->name,
                 "internal error: the VJP gave input %d, which needs none, a gradient", i);
    else
        gad__err(GAD_ERR_DOMAIN, n->info->name,
                 "internal error: the VJP gave input %d a gradient %s %s on %s for an input %s "
                 "%s on %s",
                 i, gad_dtype_name((gad_dtype_t)g->dtype), gad__shape_str(b1, g->shape, g->rank),
                 gad__device_name(g->dev), gad_dtype_name((gad_dtype_t)p->dtype),
                 gad__shape_str(b2, p->shape, p->rank), gad__device_name(p->dev));
    return -1;
}

static inline bool vjp_fits(const gad_tensor *g, const gad_node *p) {
    if (g->dtype != p->dtype || g->dev != p->dev || g->rank != p->rank) return false;
    for (int d = 0; d < g->rank; d++)
        if (g->shape[d] != p->shape[d]) return false;
    return true;
}

/* ------------------------------------------------------- the reverse pass
 *
 * Nodes run their VJPs in decreasing level (a node's level exceeds its
 * parents'), so every consumer of a node that the root reaches has run, and
 * added its share to the node's pending gradient, before the node's own
 * VJP: the order of a topological sort, found without walking the graph
 * first. A node is queued when its first consumer runs; the queue is a
 * binary max-heap on the level, which a chain keeps at one entry. */

typedef struct qent {
    uint32_t level;
    gad_node *n;
} qent;

#define QUEUE_INLINE 64

typedef struct pass {
    uint64_t id;        /* marks the nodes this pass queued */
    qent *q;            /* the heap */
    int64_t len, cap;
    qent q_small[QUEUE_INLINE];
    gad_node **leaves;  /* the leaves reached, for run() */
    int64_t nleaves, leaves_cap;
    gad_node *leaves_small[QUEUE_INLINE];
    bool clear_leaves;  /* functional grad: empty each leaf's slot when reached */
    int nbound;         /* gad__vjp_composed: its op's parents bound the pass; */
    gad_node *const *bound; /* what reaches them is summed into bound_acc */
    gad_tensor **bound_acc;
    int ncap;           /* grad w.r.t. non-leaves: capn[0..ncap) are the nodes */
    gad_node *const *capn; /* whose gradient is taken as they run (NULL: none) */
    gad_tensor **cap_g;   /* into cap_g (references owned by the pass) */
    const char *op;
    int rc;
    bool err_before;    /* an error was pending when the pass began: a VJP's
                         * failure then leaves that (older) error as it is */
} pass;

static void pass_init(pass *ps, const char *op) {
    ps->len = 0;
    ps->q = ps->q_small;
    ps->cap = QUEUE_INLINE;
    ps->leaves = ps->leaves_small;
    ps->nleaves = 0;
    ps->leaves_cap = QUEUE_INLINE;
    ps->clear_leaves = false;
    ps->nbound = 0;
    ps->bound = NULL;
    ps->bound_acc = NULL;
    ps->ncap = 0;
    ps->capn = NULL;
    ps->cap_g = NULL;
    ps->op = op;
    ps->rc = 0;
    ps->err_before = gad_last_error() != NULL;
    ps->id = atomic_fetch_add(&g_epoch, 1) + 1;
}

static void pass_free(pass *ps) {
    if (ps->q != ps->q_small) gad__free(ps->q, (size_t)ps->cap * sizeof *ps->q);
    if (ps->leaves != ps->leaves_small)
        gad__free(ps->leaves, (size_t)ps->leaves_cap * sizeof *ps->leaves);
}

static int leaves_push(pass *ps, gad_node *leaf) {
    if (ps->nleaves == ps->leaves_cap &&
        grow(&ps->leaves, &ps->leaves_cap, ps->nleaves, sizeof *ps->leaves, ps->leaves_small))
        return -1;
    ps->leaves[ps->nleaves++] = leaf;
    return 0;
}

static void pass_fail(pass *ps, const char *what) {
    if (!ps->rc) gad__err(GAD_ERR_MEMORY, ps->op, "cannot allocate %s", what);
    ps->rc = -1;
}

GAD_HOT static int queue_push(pass *ps, gad_node *n) {
    if (ps->len == ps->cap && grow(&ps->q, &ps->cap, ps->len, sizeof *ps->q, ps->q_small))
        return -1;
    qent e = {n->level, n};
    int64_t i = ps->len++;
    while (i > 0 && ps->q[(i - 1) / 2].level < e.level) {
        ps->q[i] = ps->q[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    ps->q[i] = e;
    return 0;
}

GAD_HOT static gad_node *queue_pop(pass *ps) {
    if (ps->len == 0) return NULL;
    gad_node *top = ps->q[0].n;
    qent e = ps->q[--ps->len];
    int64_t i = 0, n = ps->len;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ps->q[c + 1].level > ps->q[c].level) c++;
        if (ps->q[c].level <= e.level) break;
        ps->q[i] = ps->q[c];
        i = c;
    }
    if (n > 0) ps->q[i] = e;
    return top;
}

/* The slot where gradients reaching p are summed: p's pending one, or the
 * accumulator of a bound. */
static gad_tensor **slot_of(pass *ps, gad_node *p) {
    for (int b = 0; b < ps->nbound; b++)
        if (ps->bound[b] == p) return &ps->bound_acc[b];
    return &p->pending;
}

/* Queue p once per pass (not a bound: the pass ends there). */
GAD_HOT static void reach(pass *ps, gad_node *p) {
    if (!p || p->queued == ps->id || slot_of(ps, p) != &p->pending) return;
    p->queued = ps->id;
    for (int i = 0; i < p->nsaved; i++) GAD_PREFETCH_W(p->saved[i], sizeof(gad_tensor));
    if (queue_push(ps, p)) {
        /* what p was owed is dropped, not left on the node */
        gad_release(p->pending);
        p->pending = NULL;
        pass_fail(ps, "the reverse pass");
        return;
    }
    if (!p->info) {
        if (ps->clear_leaves) {
            gad_release(p->grad);
            p->grad = NULL;
        }
        if (leaves_push(ps, p)) pass_fail(ps, "the reverse pass");
    }
}

/* A graph too large for the cache is otherwise walked one miss at a time:
 * what the next VJPs read is asked for while this one runs. At n's turn,
 * its parents' nodes (in a chain, the next node); when a node is reached
 * (after its consumer's VJP, by which time its node has come in), the
 * headers of what it saved. */
static void prefetch_ahead(const gad_node *n) {
    for (int i = 0; i < n->nparents; i++) GAD_PREFETCH_W(n->parents[i], sizeof(gad_node) + 64);
}

/* n is about to run: every consumer has added its share, so gy is the
 * whole gradient of n's output, which is what grad returns for a non-leaf
 * input on n. Outside the hot path: only grad w.r.t. non-leaves sets ncap. */
static GAD_COLD void capture(pass *ps, const gad_node *n, gad_tensor *gy) {
    for (int k = 0; k < ps->ncap; k++)
        if (ps->capn[k] == n && !ps->cap_g[k]) ps->cap_g[k] = gad_retain(gy);
}

/* Pull seed back from root through everything root reaches. Once an error
 * is recorded no VJP runs, but the pass still visits every node to release
 * what they were owed (and, for grad, to empty every leaf it reaches). */
GAD_HOT static int run_pass(pass *ps, gad_node *root, gad_tensor *seed) {
    root->pending = gad_retain(seed);
    reach(ps, root);
    gad_node *n;
    while ((n = queue_pop(ps)) != NULL) {
        gad_tensor *gy = n->pending;
        n->pending = NULL;
        prefetch_ahead(n);
        if (GAD_UNLIKELY(ps->ncap) && gy) capture(ps, n, gy);
        if (!n->info) { /* a leaf: into its slot, as a packed tensor */
            if (gy && !ps->rc) {
                gad_scope_begin();
                gad_tensor *g = gy->contig ? gy : gad_contiguous(gy);
                if (!g || accumulate_into(&n->grad, g, &gy)) ps->rc = -1;
                gad_scope_end();
            }
            gad_release(gy);
            continue;
        }
        if (gy && !ps->rc) {
            /* need[] and gin[] for this node; on the stack for the usual few */
            bool need_small[8], *need = need_small;
            gad_tensor *gin_small[8], **gin = gin_small;
            size_t extra = (size_t)n->nparents * (sizeof *gin + sizeof *need);
            if (n->nparents > 8) {
                gin = gad__alloc(extra);
                need = gin ? (bool *)(gin + n->nparents) : NULL;
            }
            if (!gin) {
                pass_fail(ps, "gradients");
            } else {
                for (int i = 0; i < n->nparents; i++) {
                    need[i] = n->parents[i] != NULL;
                    gin[i] = NULL;
                }
                gad_scope_begin();
                int rc = n->info->vjp(n, gy, need, gin);
                for (int i = 0; rc == 0 && i < n->nparents; i++) {
                    gad_tensor *g = gin[i];
                    if (!g) continue;
                    gad_node *p = n->parents[i];
                    if (GAD_UNLIKELY(!need[i] || !vjp_fits(g, p))) rc = vjp_mismatch(n, i, g);
                    else if (check_anomaly(n, i, g)) rc = -1;
                    else rc = accumulate_into(slot_of(ps, p), g, &gy);
                }
                /* a kernel the VJP or the sums lack: the error names the op
                 * (renamed here, off the path of a VJP that succeeds; not an
                 * error that was pending before the pass, the thread's first) */
                if (GAD_UNLIKELY(rc) && !ps->err_before)
                    gad__err_unsupported_rename(n->info->name);
                gad_scope_end();
                if (rc) ps->rc = -1;
                if (gin != gin_small) gad__free(gin, extra);
            }
        }
        gad_release(gy);
        for (int i = 0; i < n->nparents; i++) reach(ps, n->parents[i]);
    }
    return ps->rc;
}

/* The engine behind grad and backward. functional: grad's mode, in which
 * every leaf the pass reaches starts with an empty slot; else backward's,
 * which accumulates into the slots. */
static gad_status run(const char *op, gad_tensor *out, gad_tensor *seed,
                      gad_tensor *const *inputs, int n, gad_tensor **grads,
                      unsigned flags, bool functional, bool nonleaves) {
    for (int i = 0; grads && i < n; i++) grads[i] = NULL;
    if (gad__bad_tensor(out)) return (gad__bad_arg(op, out), gad_last_error()->kind);
    char b1[GAD_SHAPE_BUF], b2[GAD_SHAPE_BUF];
    if (!gad__is_floating(out->dtype)) {
        gad__err(GAD_ERR_DTYPE, op, "output must be a float tensor, got %s",
                 gad_dtype_name((gad_dtype_t)out->dtype));
        return GAD_ERR_DTYPE;
    }
    if (seed && gad__released(seed)) return (gad__err_released(op), GAD_ERR_DOMAIN);
    if (seed) {
        if (seed->dev != out->dev) {
            gad__err_device(op, out->dev, seed->dev);
            return GAD_ERR_DEVICE;
        }
        if (seed->dtype != out->dtype) {
            gad__err(GAD_ERR_DTYPE, op, "seed is %s, output %s",
                     gad_dtype_name((gad_dtype_t)seed->dtype),
                     gad_dtype_name((gad_dtype_t)out->dtype));
            return GAD_ERR_DTYPE;
        }
        if (!gad__same_shape(seed->shape, seed->rank, out->shape, out->rank)) {
            gad__err(GAD_ERR_SHAPE, op, "seed %s %s does not match output %s %s",
                     gad_dtype_name((gad_dtype_t)seed->dtype),
                     gad__shape_str(b1, seed->shape, seed->rank),
                     gad_dtype_name((gad_dtype_t)out->dtype),
                     gad__shape_str(b2, out->shape, out->rank));
            return GAD_ERR_SHAPE;
        }
    } else if (out->numel != 1) {
        gad__err(GAD_ERR_SHAPE, op, "output must be a scalar (numel==1), got %s",
                 gad__shape_str(b1, out->shape, out->rank));
        return GAD_ERR_SHAPE;
    }
    if (n < 0 || (n > 0 && !inputs)) {
        gad__err(GAD_ERR_DOMAIN, op, "bad input list (n = %d)", n);
        return GAD_ERR_DOMAIN;
    }
    int ncap = 0; /* inputs that are results of ops (grad takes those) */
    for (int i = 0; i < n; i++) {
        if (gad__bad_tensor(inputs[i])) return (gad__bad_arg(op, inputs[i]), gad_last_error()->kind);
        if (gad_is_leaf(inputs[i])) continue;
        if (!inputs[i]->node || !nonleaves) {
            gad__err(GAD_ERR_DOMAIN, op,
                     nonleaves ? "inputs must be on the tape (input %d is %s)"
                               : "inputs must be requires_grad leaves (input %d is %s)",
                     i, inputs[i]->node ? "the result of an op" : "not on the tape");
            return GAD_ERR_DOMAIN;
        }
        ncap++;
    }
    /* one slot per input: cap[i] is a non-leaf input's node, else NULL */
    gad_node *cap_small[8], **cap = cap_small;
    gad_tensor *capg_small[8], **cap_g = capg_small;
    size_t cap_bytes = (size_t)n * (sizeof *cap + sizeof *cap_g);
    if (ncap && n > 8) {
        cap = gad__alloc(cap_bytes);
        if (!cap) {
            gad__err(GAD_ERR_MEMORY, op, "cannot allocate the inputs' gradients");
            return GAD_ERR_MEMORY;
        }
        cap_g = (gad_tensor **)(cap + n);
    }
    for (int i = 0; ncap && i < n; i++) {
        cap[i] = gad_is_leaf(inputs[i]) ? NULL : inputs[i]->node;
        cap_g[i] = NULL;
    }
    int no_grad_saved = gad__no_grad;
    gad__no_grad = (flags & GAD_CREATE_GRAPH) ? 0 : 1;
    gad_scope_begin();
    pass ps;
    pass_init(&ps, op);
    int rc = 0;
    if (ncap) {
        ps.ncap = n;
        ps.capn = cap;
        ps.cap_g = cap_g;
    }
    if (functional) {
        /* grad is fresh: the inputs' slots and those of every leaf the
         * pass reaches start empty */
        gad_zero_grad(inputs, n);
        ps.clear_leaves = true;
    }
    if (out->node) {
        gad_tensor *s = seed ? seed : gad_full_like(out, 1.0);
        rc = s ? run_pass(&ps, out->node, s) : -1;
    }
    /* Results go to the caller's scope: made here, then kept. */
    for (int i = 0; rc == 0 && grads && i < n; i++) {
        if (ncap && cap[i]) { /* a non-leaf: its gradient, packed as a leaf's */
            gad_tensor *g = cap_g[i];
            grads[i] = gad_keep(g ? (g->contig ? gad__own(gad_retain(g)) : gad_contiguous(g))
                                  : gad_zeros_like(inputs[i]));
        } else {
            gad_tensor *slot = inputs[i]->node->grad;
            grads[i] = gad_keep(slot ? gad__own(gad_retain(slot)) : gad_zeros_like(inputs[i]));
        }
        if (!grads[i]) rc = -1;
    }
    for (int i = 0; ncap && i < n; i++) gad_release(cap_g[i]);
    if (cap != cap_small) gad__free(cap, cap_bytes);
    /* A slot must not hold a gradient's graph: that graph reaches the leaf
     * itself, a reference cycle. Slots keep the values only; the caller
     * got the differentiable tensors. */
    for (int64_t k = 0; (flags & GAD_CREATE_GRAPH) && k < ps.nleaves; k++) {
        gad_node *leaf = ps.leaves[k];
        if (!leaf->grad || !leaf->grad->node) continue;
        gad_tensor *plain = gad__alias(op, leaf->grad);
        gad_release(leaf->grad);
        leaf->grad = plain; /* NULL (empty slot) if the alias failed */
    }
    pass_free(&ps);
    gad_scope_end();
    gad__no_grad = no_grad_saved;
    if (rc) {
        for (int i = 0; grads && i < n; i++) {
            /* kept references were handed to the enclosing scope (or to us
             * when there is none): give back what we own */
            if (grads[i] && gad_scope_depth() == 0) gad_release(grads[i]);
            grads[i] = NULL;
        }
        const gad_error *e = gad_last_error();
        return e ? e->kind : GAD_ERR_MEMORY;
    }
    return GAD_OK;
}

gad_status gad_grad(gad_tensor *out, gad_tensor *const *inputs, int n,
                    gad_tensor **grads) {
    return run("grad", out, NULL, inputs, n, grads, 0, true, true);
}

gad_status gad_grad_ex(gad_tensor *out, gad_tensor *seed,
                       gad_tensor *const *inputs, int n, gad_tensor **grads,
                       unsigned flags) {
    return run("grad", out, seed, inputs, n, grads, flags, true, true);
}

gad_status gad_backward(gad_tensor *out) {
    return run("backward", out, NULL, NULL, 0, NULL, 0, false, false);
}

/* --------------------------------------------- VJPs through a composition */

/* gad__vjp_composed (src/ad/ad_int.h): the fused ops' VJPs under
 * create_graph pull gy back through a composition of tracked ops, which is a
 * pass of this engine's; the tape reaches it through a hook set here. */
static int vjp_composed(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin,
                        gad_tensor *y) {
    if (!y) return -1;
    if (!y->node) return 0; /* nothing on the tape: zero gradients */
    int np = n->nparents, rc = 0;
    gad_tensor *acc_small[8], **acc = np <= 8 ? acc_small : gad__alloc((size_t)np * sizeof *acc);
    if (!acc) {
        gad__err(GAD_ERR_MEMORY, n->info->name, "cannot allocate");
        return -1;
    }
    for (int i = 0; i < np; i++) acc[i] = NULL;
    /* the op's parents bound the pass: the composition reaches the rest of
     * the graph only through them */
    pass ps;
    pass_init(&ps, n->info->name);
    ps.nbound = np;
    ps.bound = n->parents;
    ps.bound_acc = acc;
    gad_tensor **ys = slot_of(&ps, y->node);
    if (ys != &y->node->pending) /* y is one of the inputs itself */
        *ys = gad_retain(gy);
    else
        rc = run_pass(&ps, y->node, gy);
    pass_free(&ps);
    for (int i = 0; i < np; i++) {
        if (rc == 0 && need[i] && acc[i]) gin[i] = gad__own(gad_retain(acc[i]));
        gad_release(acc[i]);
    }
    if (acc != acc_small) gad__free(acc, (size_t)np * sizeof *acc);
    return rc;
}

/* ------------------------------------------------------------ higher order */

/* sum_i sum(a[i] * b[i]) as a rank-0 tensor on the tape; in f64 when the
 * terms have different dtypes (inputs of f32 and f64 in one call). NULL
 * with the error recorded when an op fails. */
static gad_tensor *dot_all(gad_tensor *const *a, gad_tensor *const *b, int n) {
    gad_tensor *acc = NULL;
    for (int i = 0; i < n; i++) {
        gad_tensor *t = gad_sum_all(gad_mul(a[i], b[i]));
        if (!t) return NULL;
        if (acc && acc->dtype != t->dtype) {
            acc = gad_cast(acc, GAD_F64);
            t = gad_cast(t, GAD_F64);
        }
        acc = acc ? gad_add(acc, t) : t;
        if (!acc) return NULL;
    }
    return acc;
}

static int check_vectors(const char *op, gad_tensor *const *x,
                         gad_tensor *const *v, int n) {
    for (int i = 0; i < n; i++) {
        if (!x || !v) return (gad__null_arg(op), -1);
        if (gad__bad_tensor(x[i]) || gad__bad_tensor(v[i]))
            return (gad__bad_arg(op, gad__bad_tensor(x[i]) ? x[i] : v[i]), -1);
        if (x[i]->dev != v[i]->dev) return (gad__err_device(op, x[i]->dev, v[i]->dev), -1);
        if (x[i]->dtype != v[i]->dtype) {
            gad__err(GAD_ERR_DTYPE, op, "v[%d] is %s, input %s", i,
                     gad_dtype_name((gad_dtype_t)v[i]->dtype),
                     gad_dtype_name((gad_dtype_t)x[i]->dtype));
            return -1;
        }
        if (!gad__same_shape(x[i]->shape, x[i]->rank, v[i]->shape, v[i]->rank)) {
            char b1[GAD_SHAPE_BUF], b2[GAD_SHAPE_BUF];
            gad__err(GAD_ERR_SHAPE, op, "v[%d] %s must match input %s", i,
                     gad__shape_str(b1, v[i]->shape, v[i]->rank),
                     gad__shape_str(b2, x[i]->shape, x[i]->rank));
            return -1;
        }
    }
    return 0;
}

/* Hand out[0..n) from the inner scope to the caller (they were kept). */
static gad_status finish(gad_status st, gad_tensor **out, int n) {
    if (st != GAD_OK)
        for (int i = 0; i < n; i++) {
            if (out[i] && gad_scope_depth() == 0) gad_release(out[i]);
            out[i] = NULL;
        }
    return st;
}

gad_status gad_hvp(gad_tensor *loss, gad_tensor *const *inputs,
                   gad_tensor *const *v, int n, gad_tensor **hv) {
    for (int i = 0; hv && i < n; i++) hv[i] = NULL;
    if (!hv && n > 0) {
        gad__err(GAD_ERR_DOMAIN, "hvp", "output array is NULL");
        return GAD_ERR_DOMAIN;
    }
    if (check_vectors("hvp", inputs, v, n)) return gad_last_error()->kind;
    gad_scope_begin();
    gad_tensor *g_small[8], **g = n <= 8 ? g_small : gad__alloc((size_t)n * sizeof *g);
    gad_status st = GAD_OK;
    if (!g) {
        gad__err(GAD_ERR_MEMORY, "hvp", "cannot allocate");
        st = GAD_ERR_MEMORY;
    }
    /* first derivatives on the tape, then the gradient of <g, v> */
    if (st == GAD_OK) st = run("hvp", loss, NULL, inputs, n, g, GAD_CREATE_GRAPH, true, false);
    if (st == GAD_OK && n > 0) {
        gad_tensor *d = dot_all(g, v, n);
        st = d ? run("hvp", d, NULL, inputs, n, hv, 0, true, false) : gad_last_error()->kind;
        for (int i = 0; st == GAD_OK && i < n; i++) gad_keep(hv[i]);
    }
    if (g && g != g_small) gad__free(g, (size_t)n * sizeof *g);
    gad_scope_end();
    return finish(st, hv, n);
}

gad_status gad_jvp(gad_tensor *out, gad_tensor *const *inputs,
                   gad_tensor *const *v, int n, gad_tensor **jv) {
    if (jv) *jv = NULL;
    if (!jv) {
        gad__err(GAD_ERR_DOMAIN, "jvp", "output pointer is NULL");
        return GAD_ERR_DOMAIN;
    }
    if (gad__bad_tensor(out)) return (gad__bad_arg("jvp", out), gad_last_error()->kind);
    if (!gad__is_floating(out->dtype)) {
        gad__err(GAD_ERR_DTYPE, "jvp", "output must be a float tensor, got %s",
                 gad_dtype_name((gad_dtype_t)out->dtype));
        return GAD_ERR_DTYPE;
    }
    if (check_vectors("jvp", inputs, v, n)) return gad_last_error()->kind;
    gad_status st = GAD_OK;
    gad_scope_begin();
    gad_tensor *g_small[8], **g = n <= 8 ? g_small : gad__alloc((size_t)n * sizeof *g);
    /* u -> J^T u is linear in u; its VJP with v is J v */
    gad_tensor *u = g ? gad_requires_grad(gad_zeros_like(out)) : NULL;
    if (!u) st = gad_last_error() ? gad_last_error()->kind : GAD_ERR_MEMORY;
    if (st == GAD_OK) st = run("jvp", out, u, inputs, n, g, GAD_CREATE_GRAPH, true, false);
    if (st == GAD_OK) {
        gad_tensor *d = n > 0 ? dot_all(g, v, n) : gad__full_on(out->dev, NULL, 0, out->dtype, 0);
        st = d ? run("jvp", d, NULL, &u, 1, jv, 0, true, false) : gad_last_error()->kind;
        if (st == GAD_OK) gad_keep(*jv);
    }
    if (g && g != g_small) gad__free(g, (size_t)n * sizeof *g);
    gad_scope_end();
    return finish(st, jv, 1);
}

/* -------------------------------------------------------------- DOT dump */

gad_status gad_graph_dot(gad_tensor *out, FILE *f) {
    if (gad__bad_tensor(out)) return (gad__bad_arg("graph_dot", out), gad_last_error()->kind);
    if (!f) {
        gad__err(GAD_ERR_IO, "graph_dot", "no output file");
        return GAD_ERR_IO;
    }
    walk w = {0};
    if (out->node && topo_order(out->node, &w, "graph_dot")) return GAD_ERR_MEMORY;
    fprintf(f, "digraph gad {\n  rankdir=BT;\n");
    /* Number the nodes by their position in the walk (stored in visit,
     * which is rewritten by the next pass anyway). */
    uint64_t base = atomic_fetch_add(&g_epoch, (unsigned long long)w.len + 1) + 1;
    for (int64_t k = 0; k < w.len; k++) w.order[k]->visit = base + (uint64_t)k;
    char b[GAD_SHAPE_BUF];
    for (int64_t k = 0; k < w.len; k++) {
        gad_node *n = w.order[k];
        gad__shape_str(b, n->shape, n->rank);
        if (n->info)
            fprintf(f, "  n%lld [label=\"%s\\n%s %s\"];\n", (long long)k,
                    n->info->name, b, gad_dtype_name((gad_dtype_t)n->dtype));
        else
            fprintf(f, "  n%lld [shape=box, style=filled, fillcolor=lightblue, "
                       "label=\"leaf\\n%s %s\"];\n",
                    (long long)k, b, gad_dtype_name((gad_dtype_t)n->dtype));
        for (int i = 0; i < n->nparents; i++)
            if (n->parents[i])
                fprintf(f, "  n%lld -> n%lld;\n",
                        (long long)(n->parents[i]->visit - base), (long long)k);
    }
    fprintf(f, "}\n");
    walk_free(&w);
    if (ferror(f)) {
        gad__err(GAD_ERR_IO, "graph_dot", "write failed");
        return GAD_ERR_IO;
    }
    return GAD_OK;
}

GAD_CONSTRUCTOR(engine_hooks) { gad__vjp_composed_hook = vjp_composed; }
