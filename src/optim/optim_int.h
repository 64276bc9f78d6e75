/* optim_int.h: what the files of src/optim share: the optimizer object
 * (optim.c makes and steps it, state.c saves and loads its state) and the
 * helpers that the optimizers and clipping (clip.c) both use. */
#ifndef GAD_OPTIM_INT_H
#define GAD_OPTIM_INT_H

#include "gad.h"

#include <stddef.h>
#include <stdint.h>

/* A name: "momentum." plus up to 10 digits plus NUL fits in 24 bytes. */
#define OPTIM_NAME_CAP 24

typedef enum optim_kind { OPTIM_SGD, OPTIM_ADAMW } optim_kind;

/* Per-parameter scratch for one step (kept to avoid a malloc per step). */
typedef struct optim_work {
    gad_tensor *g;      /* the contiguous gradient (scope-owned), or NULL */
    gad_tensor *s1;     /* the state tensor written (AdamW's m, SGD's buffer) */
    gad_tensor *fresh;  /* SGD: a momentum buffer made by this step */
    /* Where a graph shares the parameter's storage (or its copy's), phase 2
     * allocates a fresh one for the new values and phase 3 installs it,
     * instead of copying the old values first (gad__swap_storage); phase 3
     * then holds the old storage here until the update has read it. */
    struct gad_storage *st, *copy_st;
} optim_work;

/* A parameter group: its own lr and weight decay (every other setting is
 * the optimizer's). */
typedef struct optim_group {
    double lr, weight_decay;
} optim_group;

/* A live optimizer's magic word; gad_optim_free overwrites it with
 * OPTIM_FREED, so that any later call on the pointer is an error. */
#define OPTIM_LIVE 0x6f7074696d4c4956ull  /* "optimLIV" */
#define OPTIM_FREED 0x6f7074696d444541ull /* "optimDEA" */

struct gad_optim {
    uint64_t magic; /* OPTIM_LIVE, then OPTIM_FREED */
    optim_kind kind;
    int n;
    int ngroups;
    optim_group *groups; /* ngroups of them */
    int *group_of;       /* params[i] is in groups[group_of[i]] */
    gad_tensor **params; /* retained */
    gad_tensor **s1;     /* AdamW: m; SGD: momentum buffer (NULL until made) */
    gad_tensor **s2;     /* AdamW: v; SGD: unused (NULL) */
    char (*name1)[OPTIM_NAME_CAP]; /* "m.<i>" or "momentum.<i>" */
    char (*name2)[OPTIM_NAME_CAP]; /* "v.<i>" (AdamW only) */
    optim_work *work;
    struct gad_optim_item *items; /* the update's items (backend.h), n */
    /* Mixed precision (amp.c): copies[i], when set, is a half (or other
     * float) leaf the model computes with; params[i] is its master. NULL
     * array until gad_optim_set_copies. */
    gad_tensor **copies;
    double momentum;               /* SGD */
    int nesterov;
    double beta1, beta2, eps;      /* AdamW */
    int64_t step;                  /* updates made so far */
};

/* Zeroed memory for count items of size bytes, through gad's allocator. */
void *gad__optim_zalloc(size_t count, size_t size);

/* A memory error for op unless gad already recorded why a call failed. */
gad_status gad__optim_fail_memory(const char *op);

/* 0 when o is a live optimizer; else -1 with a domain error under op
 * (NULL, or freed). */
int gad__optim_bad(const char *op, const gad_optim *o);

/* Set dup[i] = 1 for every entry of ts[0..n) that repeats an earlier one
 * (0 otherwise). Returns the number of repeats, or -1 on a memory error. */
int gad__find_duplicates(gad_tensor *const *ts, int n, char *dup);

/* t's shape as "[2,3]" (gad_shape_format). */
static inline const char *optim_shape_str(char *buf, size_t cap, const gad_tensor *t) {
    return gad_shape_format(buf, cap, gad_shape(t), gad_rank(t));
}

static inline int optim_same_shape(gad_tensor *a, gad_tensor *b) {
    int r = gad_rank(a);
    if (r != gad_rank(b)) return 0;
    const int64_t *sa = gad_shape(a), *sb = gad_shape(b);
    for (int i = 0; i < r; i++)
        if (sa[i] != sb[i]) return 0;
    return 1;
}

static inline int optim_is_float(gad_dtype_t d) { return d == GAD_F32 || d == GAD_F64; }

/* After a successful update of params[i]: its copy, if any, made writable
 * beforehand (phase 2: packed and private, or work[i].copy_st allocated
 * where a graph shares it), gets the master's values rounded (amp.c). */
int gad__optim_copy_writable(gad_optim *o, int i);
void gad__optim_copy_write(gad_optim *o, int i);

/* gad_optim_step with grads given, where a NULL grads[i] skips params[i]
 * (as an empty slot does) instead of being an error. */
gad_status gad__optim_step_skipping(gad_optim *opt, gad_tensor *const *grads);

#endif
