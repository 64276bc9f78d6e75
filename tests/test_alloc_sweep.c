/* test_alloc_sweep.c: allocation-failure sweep over a whole training step
 * (issue "Reliability", item 3).
 *
 * A tiny HELIX language model (fused embedding, two HELIX blocks, RMS norm
 * * gain, logits, mean cross-entropy; AdamW) takes one full step: forward,
 * gad_grad, gad_optim_step, gad_optim_state and gad_save of the parameters
 * and the optimizer state to a checkpoint. Every byte gad takes goes
 * through a test allocator (gad_set_allocator), which first counts the
 * allocations of one step (N), then, for every k in 0..N, refuses exactly
 * the k-th one. For every k:
 *
 *   - the step either succeeds, with the loss, the parameters, the
 *     optimizer state and the checkpoint file bit-identical to a run that
 *     never failed, and no error pending; or the failing call reports it
 *     cleanly: NULL or a status equal to gad_last_error()->kind, which is a
 *     memory error naming an op;
 *   - what the failed call must not touch is intact: the parameters and the
 *     optimizer state (as gad_optim_state shows them) are bit-identical to
 *     their values before the step when the failure came before the
 *     optimizer's update finished, and to the never-failed run's values
 *     after it otherwise; the previous checkpoint file is bit-identical and
 *     no temporary file is left next to it;
 *   - nothing leaks: once the step's scope is closed and the caches are
 *     trimmed, the live tensor/storage/byte counters and the blocks and
 *     bytes held from the allocator are back to their values before the
 *     step; every free gives back the size that was allocated;
 *   - the next step with the default allocator succeeds and gives the loss,
 *     parameters, state and checkpoint of the never-failed run.
 *
 * The sweep runs with the default buffer cache and with the cache off
 * (gad_set_cache_limit(0): every freed storage goes straight back to the
 * allocator, so later allocations cannot be served from the cache and the
 * retry-after-trim path of the storage allocator is never taken). Two
 * narrower sweeps call gad_save and gad_optim_step with no scope open right
 * after gad_set_allocator, when the thread's scope arrays do not exist yet
 * (the first gad_scope_begin of a thread allocates them).
 *
 * Options: --quick (the two narrow sweeps and every 7th k of the full
 * ones), -v (one line per k). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "test_tmpdir.h"

/* ======================================================================== */
/* The allocator hook                                                        */
/* ======================================================================== */

/* Each block carries a header just below the pointer handed out: the base
 * of the system block, the size asked for and a magic number, so that a
 * free with the wrong size or a pointer gad never got is caught. */
#define HOOK_MAGIC 0x6761645f686f6f6bULL

typedef struct hook {
    atomic_long calls;      /* allocations asked for since the last reset */
    atomic_long fail_at;    /* the call to refuse (0-based), -1: none */
    atomic_long refused;    /* calls refused */
    atomic_long live;       /* blocks handed out and not yet freed */
    atomic_llong live_bytes;
    atomic_long bad_free;   /* frees with a wrong size or an unknown pointer */
    atomic_long foreign;    /* allocations made by another thread */
    pthread_t owner;
} hook;

static hook H;

static void *hook_alloc(void *ctx, size_t size, size_t align) {
    hook *h = ctx;
    if (!pthread_equal(pthread_self(), h->owner)) atomic_fetch_add(&h->foreign, 1);
    long i = atomic_fetch_add(&h->calls, 1);
    if (i == atomic_load(&h->fail_at)) {
        atomic_fetch_add(&h->refused, 1);
        return NULL;
    }
    size_t a = align < 32 ? 32 : align;
    void *base = NULL;
    if (size > SIZE_MAX - a || posix_memalign(&base, a, a + size) != 0) return NULL;
    uint64_t *q = (uint64_t *)((char *)base + a);
    q[-1] = HOOK_MAGIC;
    q[-2] = (uint64_t)size;
    q[-3] = (uint64_t)(uintptr_t)base;
    atomic_fetch_add(&h->live, 1);
    atomic_fetch_add(&h->live_bytes, (long long)size);
    return q;
}

static void hook_free(void *ctx, void *ptr, size_t size) {
    hook *h = ctx;
    if (!ptr) return;
    uint64_t *q = ptr;
    if (q[-1] != HOOK_MAGIC) { /* not ours: report, do not touch */
        atomic_fetch_add(&h->bad_free, 1);
        return;
    }
    if (q[-2] != (uint64_t)size) atomic_fetch_add(&h->bad_free, 1);
    atomic_fetch_sub(&h->live, 1);
    atomic_fetch_sub(&h->live_bytes, (long long)q[-2]);
    q[-1] = 0;
    free((void *)(uintptr_t)q[-3]);
}

static const gad_allocator hook_allocator = {hook_alloc, hook_free, &H};

/* Reinstall the hook: gad empties this thread's caches (and, with no scope
 * open, its scope arrays) and gives them back through it. */
static void hook_reinstall(void) { gad_set_allocator(&hook_allocator); }

static void hook_arm(long fail_at) {
    atomic_store(&H.calls, 0);
    atomic_store(&H.refused, 0);
    atomic_store(&H.fail_at, fail_at);
}

static void hook_disarm(void) { atomic_store(&H.fail_at, -1); }

/* ======================================================================== */
/* The model                                                                 */
/* ======================================================================== */

#define V 12
#define D 8
#define NL 2
#define B 2
#define T 5
#define MAXT 128
#include "test_helix_model.h"

typedef struct model {
    gad_tensor *p[NP];
    char names[NP][16];
    gad_optim *opt;
} model;

/* Parameters (test_helix_model.h) and AdamW. No scope is open: the model
 * owns them. 0 or -1. */
static int model_init(model *m, uint64_t seed) {
    memset(m, 0, sizeof *m);
    for (int k = 0; k < NP; k++) hx_param_name(k, m->names[k]);
    if (hx_params_init(m->p, seed)) return -1;
    gad_adamw_opts o = {.lr = 1e-2, .weight_decay = 0.01};
    m->opt = gad_adamw_new(m->p, NP, &o);
    return m->opt ? 0 : -1;
}

static void model_free(model *m) {
    gad_optim_free(m->opt);
    hx_params_free(m->p);
    memset(m, 0, sizeof *m);
}

/* The batch of a step: a fixed token pattern that depends on the step. */
static void batch(int64_t step, int64_t *in, int64_t *tg) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t <= T; t++) {
            int64_t tok = (3 * t + 5 * b + 7 * step + (t * t) % 5) % V;
            if (t < T) in[b * T + t] = tok;
            if (t > 0) tg[b * T + t - 1] = tok;
        }
}

/* The loss of a batch, in the current scope (NULL and the first error if
 * any op failed: the whole expression is checked once). */
static gad_tensor *model_loss(model *m, gad_tensor *x, gad_tensor *targets) {
    return hx_loss(m->p, x, targets);
}

/* ======================================================================== */
/* One training step, phase by phase                                         */
/* ======================================================================== */

enum phase { PH_SCOPE, PH_FORWARD, PH_GRAD, PH_OPTIM, PH_STATE, PH_SAVE, PH_DONE };
static const char *const phase_name[] = {"scope_begin", "forward", "grad", "optim_step",
                                         "optim_state", "save", "done"};

/* What a step did. */
typedef struct outcome {
    int phase;          /* the phase that failed, or PH_DONE */
    double loss;        /* the loss (NaN when the forward pass failed) */
    int status_ok;      /* a returned status matched the recorded error */
    gad_status status;  /* the status returned (GAD_OK for a NULL return) */
    gad_error err;      /* the recorded error (kind GAD_OK if none) */
} outcome;

static char ckpt_path[256];
static char work_dir[200];

/* End the step: record the pending error (if any) for phase ph. */
static outcome finish(int ph, double loss, int has_status, gad_status st) {
    outcome o = {ph, loss, 1, st, {0}};
    const gad_error *e = gad_last_error();
    if (e) o.err = *e;
    else o.err.kind = GAD_OK;
    if (has_status) o.status_ok = e ? st == e->kind : st == GAD_OK;
    gad_clear_error();
    return o;
}

/* One step in a scope of its own, as a careful training loop writes it:
 * every call is checked, the first failure ends the step. `step` numbers
 * the batch. */
static outcome train_step(model *m, int64_t step) {
    gad_scope_begin();
    if (gad_last_error()) { /* the scope could not open: it owns nothing */
        gad_scope_end();
        return finish(PH_SCOPE, NAN, 0, GAD_OK);
    }
    int64_t in[B * T], tg[B * T];
    batch(step, in, tg);
    gad_tensor *x = gad_from_i64(in, (int64_t[]){B, T}, 2);
    gad_tensor *y = gad_from_i64(tg, (int64_t[]){B * T}, 1);
    gad_tensor *loss = model_loss(m, x, y);
    if (!loss) {
        gad_scope_end();
        return finish(PH_FORWARD, NAN, 0, GAD_OK);
    }
    double lv = gad_item(loss);
    gad_tensor *grads[NP];
    gad_status st = gad_grad(loss, m->p, NP, grads);
    if (st != GAD_OK) {
        gad_scope_end();
        return finish(PH_GRAD, lv, 1, st);
    }
    st = gad_optim_step(m->opt, grads);
    if (st != GAD_OK) {
        gad_scope_end();
        return finish(PH_OPTIM, lv, 1, st);
    }
    /* the checkpoint: parameters, then the optimizer state */
    const char *names[MAXT], *snames[MAXT];
    gad_tensor *ts[MAXT], *sts[MAXT];
    char buf[MAXT][32];
    int ns = gad_optim_state(m->opt, snames, sts, MAXT - NP);
    if (ns < 0) {
        gad_scope_end();
        return finish(PH_STATE, lv, 0, GAD_OK);
    }
    for (int i = 0; i < NP; i++) {
        names[i] = m->names[i];
        ts[i] = m->p[i];
    }
    for (int i = 0; i < ns; i++) {
        snprintf(buf[i], sizeof buf[i], "opt.%s", snames[i]);
        names[NP + i] = buf[i];
        ts[NP + i] = sts[i];
    }
    st = gad_save(ckpt_path, names, ts, NP + ns);
    gad_scope_end();
    if (st != GAD_OK) return finish(PH_SAVE, lv, 1, st);
    return finish(PH_DONE, lv, 1, GAD_OK);
}

/* ======================================================================== */
/* Snapshots: parameters, optimizer state, the checkpoint file               */
/* ======================================================================== */

#define NSTATE (1 + 2 * NP)

typedef struct snapshot {
    size_t nvals;
    float *vals;       /* every parameter, then every m and v, in order */
    int64_t opt_step;  /* "step" of gad_optim_state */
    int nstate;
    unsigned char *file; /* the checkpoint's bytes (NULL: no file) */
    size_t file_len;
} snapshot;

static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (len == cap) buf = realloc(buf, cap *= 2);
        size_t r = fread(buf + len, 1, cap - len, f);
        if (r == 0) break;
        len += r;
    }
    fclose(f);
    *n = len;
    return buf;
}

/* Read everything; 0, or -1 if gad failed (an error is then pending). */
static int take_snapshot(model *m, snapshot *s) {
    memset(s, 0, sizeof *s);
    size_t n = 0;
    for (int i = 0; i < NP; i++) n += 3 * (size_t)gad_numel(m->p[i]);
    s->vals = calloc(n, sizeof *s->vals);
    int rc = 0;
    size_t k = 0;
    for (int i = 0; i < NP && rc == 0; i++) {
        size_t c = (size_t)gad_numel(m->p[i]);
        if (gad_read_f32(m->p[i], s->vals + k, c) != GAD_OK) rc = -1;
        k += c;
    }
    gad_scope_begin();
    const char *names[NSTATE];
    gad_tensor *ts[NSTATE];
    s->nstate = gad_optim_state(m->opt, names, ts, NSTATE);
    if (s->nstate != NSTATE) rc = -1;
    for (int i = 0; i < s->nstate && rc == 0; i++) {
        if (!strcmp(names[i], "step")) {
            if (gad_read_i64(ts[i], &s->opt_step, 1) != GAD_OK) rc = -1;
            continue;
        }
        size_t c = (size_t)gad_numel(ts[i]);
        if (k + c > n || gad_read_f32(ts[i], s->vals + k, c) != GAD_OK) rc = -1;
        k += c;
    }
    gad_scope_end();
    s->nvals = k;
    s->file = read_file(ckpt_path, &s->file_len);
    return rc;
}

static void free_snapshot(snapshot *s) {
    free(s->vals);
    free(s->file);
    memset(s, 0, sizeof *s);
}

/* "" when a and b hold the same bits, else what differs. */
static const char *snapshot_diff(const snapshot *a, const snapshot *b, int with_file) {
    if (a->nvals != b->nvals || a->nstate != b->nstate) return "sizes differ";
    if (memcmp(a->vals, b->vals, a->nvals * sizeof *a->vals))
        return "parameters or optimizer state differ";
    if (a->opt_step != b->opt_step) return "optimizer step counts differ";
    if (!with_file) return "";
    if (!a->file || !b->file) return a->file == b->file ? "" : "a checkpoint file is missing";
    if (a->file_len != b->file_len || memcmp(a->file, b->file, a->file_len))
        return "checkpoint files differ";
    return "";
}

static int file_diff(const snapshot *a, const snapshot *b) {
    return !a->file || !b->file || a->file_len != b->file_len ||
           memcmp(a->file, b->file, a->file_len) != 0;
}

/* Entries of the work directory other than the checkpoint itself. */
static int stray_files(char *first, size_t cap) {
    DIR *d = opendir(work_dir);
    int n = 0;
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !strcmp(e->d_name, "ckpt.safetensors"))
            continue;
        if (n++ == 0) snprintf(first, cap, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

/* ======================================================================== */
/* The sweep                                                                 */
/* ======================================================================== */

static int verbose = 0, quick = 0;

/* The reference run: after the warm-up step (S0), after step 1 (S1) and
 * after step 2 (S2), with the losses of steps 1 and 2. */
typedef struct reference {
    snapshot s[3];
    double loss[3]; /* loss[1], loss[2] */
} reference;

/* A fresh model with one warm-up step taken (so that the optimizer state is
 * not all zero and a checkpoint file exists). */
static int setup(model *m) {
    unlink(ckpt_path);
    if (model_init(m, 42) != 0) return -1;
    outcome o = train_step(m, 0);
    /* gad_grad leaves this step's gradients in the leaf slots; empty them,
     * so that the slots hold nothing when a step's memory is counted */
    gad_optim_zero_grad(m->opt);
    return o.phase == PH_DONE ? 0 : -1;
}

static void make_reference(reference *r) {
    model m;
    memset(r, 0, sizeof *r);
    CHECK(setup(&m) == 0);
    CHECK(take_snapshot(&m, &r->s[0]) == 0);
    for (int s = 1; s <= 2; s++) {
        outcome o = train_step(&m, s);
        CHECK_MSG(o.phase == PH_DONE, "reference step %d failed in %s: %s", s,
                  phase_name[o.phase], o.err.text);
        r->loss[s] = o.loss;
        CHECK(take_snapshot(&m, &r->s[s]) == 0);
        CHECK(isfinite(o.loss));
    }
    model_free(&m);
}

typedef struct tally {
    long trials, succeeded, failed[PH_DONE + 1], absorbed;
    long bad; /* trials with at least one failed check */
} tally;

/* Check a step that failed (or succeeded) under the hook at k. */
static int check_trial(long k, const outcome *o, const reference *r, model *m,
                       const snapshot *before, gad_mem_stats *base, long live0,
                       long long bytes0) {
    int fails0 = test_failures_;
    /* 1. the report */
    if (o->phase == PH_DONE) {
        CHECK_MSG(o->err.kind == GAD_OK, "k=%ld: the step succeeded with an error pending: %s", k,
                  o->err.text);
        CHECK_MSG(memcmp(&o->loss, &r->loss[1], sizeof o->loss) == 0,
                  "k=%ld: the step succeeded with loss %.9g, never-failed run %.9g", k, o->loss,
                  r->loss[1]);
    } else {
        CHECK_MSG(o->err.kind == GAD_ERR_MEMORY,
                  "k=%ld: %s failed with %s (expected a memory error)", k, phase_name[o->phase],
                  o->err.kind == GAD_OK ? "no error recorded" : o->err.text);
        CHECK_MSG(o->err.op[0] != 0, "k=%ld: the error names no op", k);
        CHECK_MSG(o->status_ok, "k=%ld: %s returned %s but recorded %s", k, phase_name[o->phase],
                  gad_status_str(o->status), gad_status_str(o->err.kind));
        if (o->phase >= PH_GRAD)
            CHECK_MSG(memcmp(&o->loss, &r->loss[1], sizeof o->loss) == 0,
                      "k=%ld: forward gave loss %.9g, never-failed run %.9g", k, o->loss,
                      r->loss[1]);
    }
    /* 2. no leak: counters and the allocator's books back where they were
     * (the leaf slots are state gad_grad fills, cleared as before the step;
     * what a failed gad_grad leaves in them is not specified) */
    gad_optim_zero_grad(m->opt);
    hook_reinstall();
    gad_mem_stats now;
    gad_mem_stats_get(&now);
    CHECK_MSG(now.live_tensors == base->live_tensors && now.live_storages == base->live_storages &&
                  now.live_bytes == base->live_bytes,
              "k=%ld (%s): leaked %lld tensors, %lld storages, %lld bytes", k,
              phase_name[o->phase], (long long)(now.live_tensors - base->live_tensors),
              (long long)(now.live_storages - base->live_storages),
              (long long)(now.live_bytes - base->live_bytes));
    long live = atomic_load(&H.live);
    long long bytes = atomic_load(&H.live_bytes);
    CHECK_MSG(live == live0 && bytes == bytes0,
              "k=%ld (%s): %ld blocks / %lld bytes still held from the allocator", k,
              phase_name[o->phase], live - live0, bytes - bytes0);
    CHECK_MSG(atomic_load(&H.bad_free) == 0, "k=%ld: %ld frees with a wrong size or pointer", k,
              atomic_load(&H.bad_free));
    /* 3. state intact: before the optimizer's update finished, everything as
     * it was; after it, the never-failed run's values; the old file either way */
    snapshot after;
    CHECK(take_snapshot(m, &after) == 0);
    CHECK_OK();
    const snapshot *want = o->phase <= PH_OPTIM ? before : &r->s[1];
    const char *d = snapshot_diff(&after, want, 0);
    CHECK_MSG(!*d, "k=%ld (%s failed): %s (vs %s)", k, phase_name[o->phase], d,
              o->phase <= PH_OPTIM ? "before the step" : "the never-failed step");
    const snapshot *want_file = o->phase == PH_DONE ? &r->s[1] : before;
    CHECK_MSG(!file_diff(&after, want_file), "k=%ld (%s): the checkpoint file is not %s", k,
              phase_name[o->phase], o->phase == PH_DONE ? "the new one" : "the previous one");
    char stray[256] = "";
    int ns = stray_files(stray, sizeof stray);
    CHECK_MSG(ns == 0, "k=%ld (%s): %d stray files in the checkpoint directory (%s)", k,
              phase_name[o->phase], ns, stray);
    free_snapshot(&after);
    /* 4. the next step, with the default allocator's behavior, picks up
     * where the never-failed run is */
    int next = o->phase >= PH_STATE ? 2 : 1;
    outcome n = train_step(m, next);
    CHECK_MSG(n.phase == PH_DONE, "k=%ld: the next step failed in %s: %s", k, phase_name[n.phase],
              n.err.text);
    if (n.phase == PH_DONE) {
        CHECK_MSG(memcmp(&n.loss, &r->loss[next], sizeof n.loss) == 0,
                  "k=%ld: the next step's loss %.9g, never-failed run %.9g", k, n.loss,
                  r->loss[next]);
        snapshot s2;
        CHECK(take_snapshot(m, &s2) == 0);
        d = snapshot_diff(&s2, &r->s[next], 1);
        CHECK_MSG(!*d, "k=%ld: after the next step: %s", k, d);
        free_snapshot(&s2);
    }
    return test_failures_ != fails0;
}

typedef enum sweep_kind {
    SWEEP_STEP,       /* the whole training step, in a scope */
    SWEEP_SAVE_BARE,  /* gad_save alone, no scope open, scope arrays fresh */
    SWEEP_OPTIM_BARE  /* gad_optim_step alone (grads in the leaf slots), likewise */
} sweep_kind;

static const char *const kind_name[] = {"training step", "gad_save at scope depth 0",
                                        "gad_optim_step at scope depth 0"};

/* The step of the narrow sweeps. The gradients of step 1 are put in the
 * leaf slots beforehand (gad_backward), with the default behavior. */
static outcome bare_call(model *m, sweep_kind kind) {
    if (kind == SWEEP_SAVE_BARE) {
        const char *names[3] = {m->names[0], m->names[1], m->names[2]};
        gad_status st = gad_save(ckpt_path, names, m->p, 3);
        return finish(st == GAD_OK ? PH_DONE : PH_SAVE, NAN, 1, st);
    }
    gad_status st = gad_optim_step(m->opt, NULL);
    return finish(st == GAD_OK ? PH_DONE : PH_OPTIM, NAN, 1, st);
}

static int fill_leaf_grads(model *m) {
    int64_t in[B * T], tg[B * T];
    batch(1, in, tg);
    gad_scope_begin();
    gad_tensor *x = gad_from_i64(in, (int64_t[]){B, T}, 2);
    gad_tensor *y = gad_from_i64(tg, (int64_t[]){B * T}, 1);
    gad_tensor *loss = model_loss(m, x, y);
    gad_status st = loss ? gad_backward(loss) : GAD_ERR_MEMORY;
    gad_scope_end();
    return st == GAD_OK ? 0 : -1;
}

/* Checks for the narrow sweeps: a clean report, nothing leaked, the state
 * untouched on failure, and the call succeeds when repeated. */
static int check_bare(long k, sweep_kind kind, const outcome *o, model *m,
                      const snapshot *before, const snapshot *ok_after, gad_mem_stats *base,
                      long live0, long long bytes0) {
    int fails0 = test_failures_;
    if (o->phase == PH_DONE) {
        CHECK_MSG(o->err.kind == GAD_OK,
                  "k=%ld: %s returned GAD_OK with an error pending: %s", k, kind_name[kind],
                  o->err.text);
    } else {
        CHECK_MSG(o->err.kind == GAD_ERR_MEMORY && o->status_ok,
                  "k=%ld: %s returned %s, recorded %s (expected a memory error)", k,
                  kind_name[kind], gad_status_str(o->status),
                  o->err.kind == GAD_OK ? "nothing" : o->err.text);
    }
    hook_reinstall();
    gad_mem_stats now;
    gad_mem_stats_get(&now);
    CHECK_MSG(now.live_tensors == base->live_tensors && now.live_storages == base->live_storages,
              "k=%ld (%s, %s): leaked %lld tensors, %lld storages", k, kind_name[kind],
              o->phase == PH_DONE ? "succeeded" : "failed",
              (long long)(now.live_tensors - base->live_tensors),
              (long long)(now.live_storages - base->live_storages));
    long live = atomic_load(&H.live);
    long long bytes = atomic_load(&H.live_bytes);
    CHECK_MSG(live == live0 && bytes == bytes0,
              "k=%ld (%s): %ld blocks / %lld bytes still held from the allocator", k,
              kind_name[kind], live - live0, bytes - bytes0);
    CHECK_MSG(atomic_load(&H.bad_free) == 0, "k=%ld: frees with a wrong size or pointer", k);
    snapshot after;
    CHECK(take_snapshot(m, &after) == 0);
    CHECK_OK();
    const snapshot *want = o->phase == PH_DONE ? ok_after : before;
    const char *d = snapshot_diff(&after, want, 1);
    CHECK_MSG(!*d, "k=%ld (%s %s): %s", k, kind_name[kind],
              o->phase == PH_DONE ? "succeeded" : "failed", d);
    char stray[256] = "";
    int ns = stray_files(stray, sizeof stray);
    CHECK_MSG(ns == 0, "k=%ld (%s): %d stray files (%s)", k, kind_name[kind], ns, stray);
    free_snapshot(&after);
    if (o->phase != PH_DONE) {
        outcome n = bare_call(m, kind);
        CHECK_MSG(n.phase == PH_DONE, "k=%ld: %s failed again with the default behavior: %s", k,
                  kind_name[kind], n.err.text);
        snapshot s2;
        CHECK(take_snapshot(m, &s2) == 0);
        d = snapshot_diff(&s2, ok_after, 1);
        CHECK_MSG(!*d, "k=%ld: after repeating %s: %s", k, kind_name[kind], d);
        free_snapshot(&s2);
    }
    return test_failures_ != fails0;
}

static void sweep(sweep_kind kind, int cache_off, const reference *r) {
    size_t old_limit = gad_set_cache_limit(cache_off ? 0 : ((size_t)256 << 20));
    /* the allocations of one step */
    model m;
    snapshot before, ok_after = {0};
    CHECK(setup(&m) == 0);
    if (kind != SWEEP_STEP) CHECK(fill_leaf_grads(&m) == 0);
    CHECK(take_snapshot(&m, &before) == 0);
    const char *d = snapshot_diff(&before, &r->s[0], 1);
    CHECK_MSG(!*d, "the set-up is not the reference's: %s", d);
    hook_reinstall();
    hook_arm(-1);
    outcome o = kind == SWEEP_STEP ? train_step(&m, 1) : bare_call(&m, kind);
    long count = atomic_load(&H.calls);
    CHECK_MSG(o.phase == PH_DONE, "counting run failed in %s: %s", phase_name[o.phase],
              o.err.text);
    if (kind != SWEEP_STEP) CHECK(take_snapshot(&m, &ok_after) == 0);
    free_snapshot(&before);
    model_free(&m);
    printf("  %s, cache %s: %ld allocations\n", kind_name[kind], cache_off ? "off" : "on", count);
    fflush(stdout);

    tally t = {0};
    long stride = quick && kind == SWEEP_STEP ? 7 : 1;
    for (long k = 0; k <= count; k += stride) {
        CHECK(setup(&m) == 0);
        if (kind != SWEEP_STEP) CHECK(fill_leaf_grads(&m) == 0);
        CHECK(take_snapshot(&m, &before) == 0);
        gad_clear_error();
        hook_reinstall(); /* same starting point every time: caches empty */
        gad_mem_stats base;
        gad_mem_stats_get(&base);
        long live0 = atomic_load(&H.live);
        long long bytes0 = atomic_load(&H.live_bytes);
        hook_arm(k);
        o = kind == SWEEP_STEP ? train_step(&m, 1) : bare_call(&m, kind);
        hook_disarm();
        long refused = atomic_load(&H.refused);
        int bad = kind == SWEEP_STEP
                      ? check_trial(k, &o, r, &m, &before, &base, live0, bytes0)
                      : check_bare(k, kind, &o, &m, &before, &ok_after, &base, live0, bytes0);
        t.trials++;
        t.bad += bad;
        if (o.phase == PH_DONE) {
            t.succeeded++;
            if (refused) t.absorbed++;
        } else {
            t.failed[o.phase]++;
        }
        if (verbose || bad)
            printf("    k=%ld: %s%s%s\n", k, o.phase == PH_DONE ? "ok" : phase_name[o.phase],
                   o.phase == PH_DONE ? "" : ": ", o.phase == PH_DONE ? "" : o.err.text);
        free_snapshot(&before);
        model_free(&m);
        gad_clear_error();
        hook_reinstall();
        CHECK_MSG(atomic_load(&H.live) == 0, "k=%ld: %ld blocks held after freeing the model", k,
                  atomic_load(&H.live));
        if (atomic_load(&H.live) != 0) break; /* the books are off: stop here */
    }
    printf("  %ld trials: %ld succeeded (%ld with a refused allocation absorbed), failed in",
           t.trials, t.succeeded, t.absorbed);
    for (int p = 0; p < PH_DONE; p++)
        if (t.failed[p]) printf(" %s %ld,", phase_name[p], t.failed[p]);
    printf(" %ld with a failed check\n", t.bad);
    CHECK(atomic_load(&H.foreign) == 0);
    free_snapshot(&ok_after);
    gad_set_cache_limit(old_limit);
}

/* ======================================================================== */

static reference REF;

TEST(reference_run_is_deterministic) {
    reference r2;
    make_reference(&r2);
    for (int s = 0; s < 3; s++) {
        const char *d = snapshot_diff(&r2.s[s], &REF.s[s], 1);
        CHECK_MSG(!*d, "reference step %d: %s", s, d);
    }
    CHECK(memcmp(r2.loss, REF.loss, sizeof r2.loss) == 0);
    for (int s = 0; s < 3; s++) free_snapshot(&r2.s[s]);
    printf("  losses: step 1 %.7f, step 2 %.7f\n", REF.loss[1], REF.loss[2]);
}

TEST(sweep_training_step_cache_on) { sweep(SWEEP_STEP, 0, &REF); }
TEST(sweep_training_step_cache_off) { sweep(SWEEP_STEP, 1, &REF); }
TEST(sweep_save_at_depth_0) { sweep(SWEEP_SAVE_BARE, 0, &REF); }
TEST(sweep_optim_step_at_depth_0) { sweep(SWEEP_OPTIM_BARE, 0, &REF); }

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "-v")) verbose = 1;
        else {
            fprintf(stderr, "usage: %s [--quick] [-v]\n", argv[0]);
            return 2;
        }
    }
    if (test_make_tmpdir(work_dir, sizeof work_dir, "gad_sweep", 1)) return 1;
    snprintf(ckpt_path, sizeof ckpt_path, "%s/ckpt.safetensors", work_dir);
    /* the hook sees every byte from the first tensor on */
    H.owner = pthread_self();
    atomic_store(&H.fail_at, -1);
    hook_reinstall();
    make_reference(&REF);
    RUN(reference_run_is_deterministic);
    RUN(sweep_training_step_cache_on);
    RUN(sweep_training_step_cache_off);
    RUN(sweep_save_at_depth_0);
    RUN(sweep_optim_step_at_depth_0);
    for (int s = 0; s < 3; s++) free_snapshot(&REF.s[s]);
    gad_set_allocator(NULL);
    CHECK_MSG(atomic_load(&H.live) == 0, "%ld blocks never given back", atomic_load(&H.live));
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0 && ms.live_storages == 0);
    test_remove_tree(work_dir, 0);
    return test_summary();
}
