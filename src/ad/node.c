/* node.c: allocating and freeing tape nodes. Freeing is iterative, so a
 * chain of a million nodes does not recurse a million deep. */
#include "ad_int.h"

/* Freed nodes wait here for reuse, counted in the thread's cache limit. */
static _Thread_local gad_node *tl_free_nodes;

gad_node *gad__node_new(int op, int nparents, int nsaved) {
    gad_node *n = tl_free_nodes;
    if (n) {
        tl_free_nodes = (gad_node *)n->grad;
        GAD_PREFETCH_W(tl_free_nodes, sizeof *n);
        gad__cache_withdraw(sizeof *n);
    } else {
        n = gad__alloc_obj(sizeof *n);
        if (!n) return NULL;
    }
    memset(n, 0, sizeof *n);
    atomic_init(&n->refs, 1);
    n->op = (uint16_t)op;
    n->parents = n->parents_inline;
    n->saved = n->saved_inline;
    if (nparents > GAD_NODE_INLINE) {
        n->parents = gad__alloc((size_t)nparents * sizeof *n->parents);
        if (!n->parents) goto fail;
        memset(n->parents, 0, (size_t)nparents * sizeof *n->parents);
        n->nparents_cap = nparents;
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
    gad__free(n, sizeof *n);
    return NULL;
}

static void node_free(gad_node *n) {
    if (n->parents != n->parents_inline)
        gad__free(n->parents, (size_t)n->nparents_cap * sizeof *n->parents);
    if (n->saved != n->saved_inline)
        gad__free(n->saved, (size_t)n->nsaved * sizeof *n->saved);
    if (gad__cache_admit(sizeof *n)) {
        n->grad = (gad_tensor *)tl_free_nodes;
        tl_free_nodes = n;
        return;
    }
    gad__free(n, sizeof *n);
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

void gad__node_release(gad_node *n) {
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

void gad__node_cache_trim(void) {
    while (tl_free_nodes) {
        gad_node *n = tl_free_nodes;
        tl_free_nodes = (gad_node *)n->grad;
        gad__cache_withdraw(sizeof *n);
        gad__free(n, sizeof *n);
    }
}
