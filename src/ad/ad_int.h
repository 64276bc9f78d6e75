/* ad_int.h: the autodiff tape: nodes, recording, and the op registry that
 * the engine (src/ad/engine.c) walks. */
#ifndef GAD_AD_INT_H
#define GAD_AD_INT_H

#include "gad_int.h"

/* A node of the tape. A leaf (op GAD_OP_LEAF) owns a gradient slot; an op
 * node knows its parents (the nodes of its inputs; NULL for a constant
 * input), what its VJP saved, and its scalar parameters. A tensor points to
 * at most one node; the node lives while any tensor or child node holds it. */
typedef struct gad_node gad_node;

/* What the engine knows of an op: its name and its VJP. The VJP sets, for
 * every parent i with need[i], gin[i] to the gradient of that input (its
 * shape and dtype; owned by the current scope), or NULL for an all-zero
 * gradient. It returns 0, or -1 with an error recorded. VJPs are written
 * with tracked ops, so their results are differentiable again when grad
 * mode is on (create_graph). */
typedef struct gad_op_info {
    const char *name;
    int (*vjp)(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin);
    int pwords; /* the 8-byte parameters its nodes keep (ops.def) */
} gad_op_info;

#define GAD_NODE_INLINE 3
#define GAD_NODE_MAX_PARENTS 65535

/* A node's parameters: pwords of them (the op's), doubles or int64s. */
typedef union gad_node_params {
    double d[2 * GAD_MAX_RANK];
    int64_t i[2 * GAD_MAX_RANK];
} gad_node_params;

struct gad_node {
    /* Two cache lines, then the shape and the parameters, as many words as
     * the node needs: a graph bigger than the cache moves every byte of it
     * through memory once forward, once backward and once more when it is
     * freed, so its cost per op is its size. The first line holds what the
     * reverse pass reads and writes of every node, the second the parent
     * and saved pointers of the usual few. */
    atomic_long refs;
    const gad_op_info *info; /* NULL for a leaf */
    gad_node **parents;   /* parents_inline, or an array when nparents > 3 */
    gad_tensor *pending;  /* the gradient summed so far during a pass */
    uint64_t queued;      /* the reverse pass that last queued this node */
    uint64_t visit;       /* the walk that last saw this node (boundaries) */
    uint32_t level;       /* 0 for a leaf, else 1 + the parents' largest */
    uint16_t nparents;
    uint8_t dev;             /* the output's device */
    uint8_t nsaved;
    uint8_t out_saved;       /* bit i: saved[i] is this node's own output */
    uint8_t dtype, rank;
    uint8_t pwords;          /* parameters after the shape */
    uint8_t sclass;          /* size class in the node cache (node.c) */
    gad_tensor **saved;      /* saved_inline, or an array when nsaved > 3 */
    gad_node *parents_inline[GAD_NODE_INLINE];
    gad_tensor *saved_inline[GAD_NODE_INLINE];
    gad_tensor *grad;     /* leaf: the gradient slot */
    int64_t shape[];      /* the output's shape (rank), then pwords parameters */
};

/* The node's parameters (pwords of them). */
#define GAD_NP(n) ((gad_node_params *)((n)->shape + (n)->rank))

/* Parameter k as a double, 0 when the node keeps fewer. */
static inline double gad__node_d(const gad_node *n, int k) {
    return k < n->pwords ? GAD_NP(n)->d[k] : 0.0;
}

/* A new node with refs = 1, room for nparents parents and nsaved saved
 * tensors (all NULL), a shape of `rank` (unset) and pwords parameters
 * (zero). NULL on a memory error (nothing recorded). */
gad_node *gad__node_new(int nparents, int nsaved, int rank, int pwords);

void gad__node_release(gad_node *n);

/* ------------------------------------------------------------ recording */

/* Thread-local no-grad depth: ops record nothing while it is > 0. */
extern _Thread_local int gad__no_grad;

/* True when an op on these inputs must record a node: grad mode is on and
 * at least one input is on the tape. */
static inline bool gad__tracks(gad_tensor *const *in, int n) {
    if (gad__no_grad) return false;
    for (int i = 0; i < n; i++)
        if (in[i] && in[i]->node) return true;
    return false;
}

/* Record y as the output of op `info` applied to in[0..n): when gad__tracks
 * says so, attach a node whose parents are the inputs' nodes and which
 * saves the nsave tensors in save (an entry equal to y is saved without its
 * node, to be re-attached by gad__saved). Returns y; on a memory error y is
 * released and NULL returned. Set the node's parameters afterwards through
 * y->node when it is not NULL. */
gad_tensor *gad__track(gad_tensor *y, const gad_op_info *info,
                       gad_tensor *const *in, int n, gad_tensor *const *save,
                       int nsave);

/* A VJP by pulling gy back through y, the op's output rebuilt from tracked
 * ops on its saved inputs (gad__saved, whose nodes are the op's parents):
 * fused ops use it under GAD_CREATE_GRAPH, so that their gradients are
 * differentiable. The walk stops at the op's parents; gin[i] gets what
 * reached parent i. Returns 0 or -1 (error recorded). */
int gad__vjp_composed(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin,
                      gad_tensor *y);
/* The reverse pass behind gad__vjp_composed (src/grad/engine.c sets it). */
extern int (*gad__vjp_composed_hook)(gad_node *n, gad_tensor *gy, const bool *need,
                                     gad_tensor **gin, gad_tensor *y);

/* The i-th saved tensor, as a new tensor owned by the current scope; a saved
 * output comes back attached to its node, so that a VJP using it is
 * differentiable again. */
gad_tensor *gad__saved(gad_node *n, int i);

static inline gad_node *gad__node_retain(gad_node *n) {
    if (n) atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
    return n;
}

#endif
