/* node.c: allocating and freeing tape nodes. Freeing is iterative, so a
 * chain of a million nodes does not recurse a million deep. */
#include "ad_int.h"

_Static_assert(sizeof(gad_node) == 128, "a node's fixed part is two cache lines");

/* Node sizes: the fixed part and room for 2, 4, 8 or 24 words of shape and
 * parameters (rank + pwords: at most 8 + 16, a slice of rank 8). Freed
 * nodes wait for reuse on one list per size, counted in the thread's cache
 * limit. */
#define NODE_CLASSES 4
static const int class_words[NODE_CLASSES] = {2, 4, 8, 3 * GAD_MAX_RANK};
static _Thread_local gad_node *tl_free_nodes[NODE_CLASSES];
static _Thread_local bool tl_nodes_registered;

static size_t class_size(int c);

/* Give back every node of the lists at state (a thread's tl_free_nodes;
 * gad_set_allocator calls it for every thread). */
static void nodes_flush(void *state) {
    gad_node **lists = state;
    for (int c = 0; c < NODE_CLASSES; c++)
        while (lists[c]) {
            gad_node *n = lists[c];
            lists[c] = (gad_node *)n->grad;
            gad__free(n, class_size(c));
        }
}

static size_t class_size(int c) {
    return sizeof(gad_node) + (size_t)class_words[c] * sizeof(int64_t);
}

GAD_HOT gad_node *gad__node_new(int nparents, int nsaved, int rank, int pwords) {
    int c = 0;
    while (c < NODE_CLASSES - 1 && rank + pwords > class_words[c]) c++;
    size_t size = class_size(c);
    gad_node *n = tl_free_nodes[c];
    if (n) {
        tl_free_nodes[c] = (gad_node *)n->grad;
        GAD_PREFETCH_W(tl_free_nodes[c], size); /* two ahead, as storages */
        if (tl_free_nodes[c]) GAD_PREFETCH_W(tl_free_nodes[c]->grad, size);
        gad__cache_withdraw(size);
    } else {
        if (GAD_UNLIKELY(!tl_nodes_registered)) {
            tl_nodes_registered = true;
            gad__register_thread_cache(tl_free_nodes, nodes_flush);
        }
        n = gad__alloc_obj(size);
        if (!n) return NULL;
        void *run[GAD_RUN_MAX]; /* and a run more, handed out in address order */
        for (int i = gad__alloc_run(run, size); i-- > 0;) {
            ((gad_node *)run[i])->grad = (gad_tensor *)tl_free_nodes[c];
            tl_free_nodes[c] = run[i];
        }
    }
    /* Field by field: gcc makes an aggregate zeroing (= (gad_node){0}, or a
     * memset of the fixed size) a rep stos, which costs about 12 ns here
     * against 3 for plain stores (AMD EPYC; W1 makes a node per op). */
    n->info = NULL;
    n->pending = NULL;
    n->queued = n->visit = 0;
    n->level = 0;
    n->dev = n->out_saved = n->dtype = 0;
    n->grad = NULL;
    for (int i = 0; i < GAD_NODE_INLINE; i++) n->parents_inline[i] = NULL, n->saved_inline[i] = NULL;
    for (int i = rank; i < rank + pwords; i++) n->shape[i] = 0;
    atomic_init(&n->refs, 1);
    n->rank = (uint8_t)rank;
    n->pwords = (uint8_t)pwords;
    n->sclass = (uint8_t)c;
    n->parents = n->parents_inline;
    n->saved = n->saved_inline;
    if (nparents > GAD_NODE_INLINE) {
        n->parents = gad__alloc((size_t)nparents * sizeof *n->parents);
        if (!n->parents) goto fail;
        memset(n->parents, 0, (size_t)nparents * sizeof *n->parents);
    }
    if (nsaved > GAD_NODE_INLINE) {
        n->saved = gad__alloc((size_t)nsaved * sizeof *n->saved);
        if (!n->saved) goto fail;
        memset(n->saved, 0, (size_t)nsaved * sizeof *n->saved);
    }
    n->nparents = (uint16_t)nparents;
    n->nsaved = (uint8_t)nsaved;
    return n;
fail:
    if (n->parents != n->parents_inline)
        gad__free(n->parents, (size_t)nparents * sizeof *n->parents);
    gad__free(n, size);
    return NULL;
}

static void node_free(gad_node *n) {
    if (n->parents != n->parents_inline)
        gad__free(n->parents, (size_t)n->nparents * sizeof *n->parents);
    if (n->saved != n->saved_inline)
        gad__free(n->saved, (size_t)n->nsaved * sizeof *n->saved);
    int c = n->sclass;
    if (gad__cache_admit(class_size(c))) {
        n->grad = (gad_tensor *)tl_free_nodes[c];
        tl_free_nodes[c] = n;
        return;
    }
    gad__free(n, class_size(c));
}

/* Drop a reference to n; when it was the last, chain n onto *todo. */
static void unref(gad_node *n, gad_node **todo) {
    if (n && gad__unref(&n->refs)) {
        n->visit = (uint64_t)(uintptr_t)*todo; /* `visit` is free once dead */
        *todo = n;
    }
}

/* gad_release for tensors a dying node held, deferring their nodes. */
static void release_deferred(gad_tensor *t, gad_node **todo) {
    if (!t || !gad__unref(&t->refs)) return;
    gad_node *tn = t->node;
    gad__storage_release(t->st);
    gad__header_free(t);
    unref(tn, todo);
}

GAD_HOT void gad__node_release(gad_node *n) {
    /* Iterative: dead nodes wait on a chain, so that freeing a graph of a
     * million nodes never recurses. */
    gad_node *todo = NULL;
    unref(n, &todo);
    while (todo) {
        n = todo;
        todo = (gad_node *)(uintptr_t)n->visit;
        for (int i = 0; i < n->nparents; i++) unref(n->parents[i], &todo);
        for (int i = 0; i < n->nsaved; i++) release_deferred(n->saved[i], &todo);
        release_deferred(n->grad, &todo);
        release_deferred(n->pending, &todo);
        node_free(n);
    }
}

static void node_cache_trim(void) {
    for (int c = 0; c < NODE_CLASSES; c++)
        while (tl_free_nodes[c]) {
            gad_node *n = tl_free_nodes[c];
            tl_free_nodes[c] = (gad_node *)n->grad;
            gad__cache_withdraw(class_size(c));
            gad__free(n, class_size(c));
        }
}

/* Core frees tensors and trims caches; the tape tells it how to do its part
 * (DESIGN: lower layers offer hooks instead of calling up). */
GAD_CONSTRUCTOR(node_hooks) {
    gad__node_free_hook = gad__node_release;
    gad__on_cache_trim(node_cache_trim);
}
