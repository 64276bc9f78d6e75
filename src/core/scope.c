/* scope.c: scopes, the owners of the tensors made while they are open:
 * gad_scope_begin/end, gad_keep, and gad__own, which hands every new
 * tensor to the innermost one (DESIGN §4). Their stacks live in the
 * thread's state (memory_int.h). */
#include "memory_int.h"

static GAD_COLD void scope_begin_slow(scope_state *s) {
    if (s->lost) { /* above a scope that failed to open: stay in step */
        s->lost++;
        return;
    }
    if (!s->marks) {
        s->marks = s->marks_small;
        s->mark_cap = SCOPE_INLINE;
    }
    if (s->depth == s->mark_cap) {
        int ncap = s->mark_cap * 2;
        size_t *m = gad__alloc((size_t)ncap * sizeof *m);
        if (!m) {
            /* The tensors of this scope then belong to the enclosing one
             * (freed later, never twice), and the matching gad_scope_end
             * closes nothing. */
            s->lost = 1;
            gad__err(GAD_ERR_MEMORY, "scope_begin", "cannot open scope %d",
                     s->depth + 1);
            return;
        }
        memcpy(m, s->marks, (size_t)s->depth * sizeof *m);
        if (s->marks != s->marks_small) gad__free(s->marks, (size_t)s->mark_cap * sizeof *m);
        s->marks = m;
        s->mark_cap = ncap;
        gad__arm_thread_exit();
    }
    s->marks[s->depth++] = s->len;
}

GAD_HOT void gad_scope_begin(void) {
    scope_state *s = &gad__this_thread()->scopes;
    if (GAD_LIKELY(s->depth < s->mark_cap && !s->lost)) /* marks exist, room left */
        s->marks[s->depth++] = s->len;
    else
        scope_begin_slow(s);
}

int gad_scope_depth(void) { return gad__tl.scopes.depth + gad__tl.scopes.lost; }

static GAD_COLD int scope_grow(scope_state *s) {
    size_t ncap = s->cap ? s->cap * 2 : 1024;
    gad_tensor **n = gad__alloc(ncap * sizeof *n);
    if (!n) return -1;
    if (s->items) memcpy(n, s->items, s->len * sizeof *n);
    gad__free(s->items, s->cap * sizeof *n);
    s->items = n;
    s->cap = ncap;
    gad__arm_thread_exit();
    return 0;
}

static inline int scope_push(gad_tensor *t) {
    scope_state *s = &gad__this_thread()->scopes;
    if (GAD_UNLIKELY(s->len == s->cap) && scope_grow(s)) return -1;
    s->items[s->len++] = t;
    return 0;
}

#define KEPT_BIT ((uintptr_t)1)

GAD_HOT void gad_scope_end(void) {
    scope_state *s = &gad__this_thread()->scopes;
    if (s->lost) {
        s->lost--;
        return;
    }
    if (s->depth == 0) return;
    size_t start = s->marks[--s->depth];
    /* Release in reverse creation order (LIFO suits the buffer cache), then
     * move kept tensors, in order, into the parent scope (or to the caller
     * when no scope remains). */
    for (size_t i = s->len; i-- > start;) {
        gad_tensor *t = s->items[i];
        /* two stages ahead: the header of the 8th next tensor, then, once
         * it has come in, the storage and node of the 4th */
        if (i >= start + 8) GAD_PREFETCH_W((uintptr_t)s->items[i - 8] & ~KEPT_BIT, 64);
        if (i >= start + 4) {
            const gad_tensor *u = (const gad_tensor *)((uintptr_t)s->items[i - 4] & ~KEPT_BIT);
            GAD_PREFETCH_W(u->st, 64);
            GAD_PREFETCH_W(u->node, 128);
        }
        if (!((uintptr_t)t & KEPT_BIT)) {
            gad_release(t);
            s->items[i] = NULL;
        }
    }
    size_t end = s->len;
    s->len = start;
    if (s->depth == 0) return;
    for (size_t i = start; i < end; i++)
        if (s->items[i])
            s->items[s->len++] =
                (gad_tensor *)((uintptr_t)s->items[i] & ~KEPT_BIT);
}

static GAD_COLD gad_tensor *own_slow(gad_tensor *t) {
    if (scope_push(t) != 0) {
        gad_release(t);
        return gad__err(GAD_ERR_MEMORY, "scope", "cannot grow the scope");
    }
    return t;
}

GAD_HOT gad_tensor *gad__own(gad_tensor *t) {
    scope_state *s = &gad__this_thread()->scopes;
    if (!t || s->depth == 0) return t;
    if (GAD_UNLIKELY(s->len == s->cap)) return own_slow(t); /* no frame here */
    s->items[s->len++] = t;
    return t;
}

GAD_HOT bool gad__unown_last(gad_tensor *t) {
    scope_state *s = &gad__this_thread()->scopes;
    if (!t || s->depth == 0 || s->lost || s->len <= s->marks[s->depth - 1] ||
        s->items[s->len - 1] != t)
        return false;
    s->len--;
    return true;
}

gad_tensor *gad_keep(gad_tensor *t) {
    /* Under a scope that failed to open, t already lives in the scope that
     * encloses it. */
    if (t && gad__released(t)) return gad__err_released("keep");
    if (!t || gad__tl.scopes.depth == 0 || gad__tl.scopes.lost) return t;
    gad_retain(t);
    if (scope_push((gad_tensor *)((uintptr_t)t | KEPT_BIT)) != 0) {
        /* Not kept: t stays owned by the inner scope. */
        gad_release(t);
        return gad__err(GAD_ERR_MEMORY, "keep", "cannot grow the scope");
    }
    return t;
}

void gad__scopes_close(void) {
    scope_state *s = &gad__tl.scopes;
    while (s->depth > 0 || s->lost > 0) gad_scope_end();
}

void gad__scope_arrays_free(scope_state *s) {
    if (s->depth != 0 || s->lost) return; /* their tensors are still owned there */
    gad__free(s->items, s->cap * sizeof(gad_tensor *));
    if (s->marks != s->marks_small)
        gad__free(s->marks, (size_t)s->mark_cap * sizeof(size_t));
    *s = (scope_state){0};
}
