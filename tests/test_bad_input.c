/* test_bad_input.c: the bad-input table. Every public function of gad.h
 * is driven with each class of bad input it can receive (NULL, wrong dtype,
 * wrong rank, incompatible shape, axis or index out of range, NaN/Inf where
 * it matters, empty tensors, non-leaves, shapes whose element count
 * overflows, unreadable or malformed files, a failing allocator), and with
 * the odd but valid inputs that the header says must NOT fail.
 *
 * Each row names the function, the input class, the input in words, what
 * the function returns, the expected error kind and op (GAD_OK: no error),
 * an optional text the message must contain (the offending shape or value),
 * and a body that makes the call and returns 1 when the function returned
 * what the header documents (NULL, a status, NaN, -1, or the valid result).
 * The runner runs every row in a fresh scope and checks the returned value,
 * the error record (kind, op, a non-empty message, "<kind> error in <op>:"
 * in the text, the needle) and that live tensors and storages are back to
 * where they were.
 *
 * The rows are written once, at the end of this file, as ROW(...) lines:
 * the file includes itself twice, once to define a function per row and
 * once to build the table from the same lines.
 *
 *   test_bad_input              run the table, check the coverage of
 *                               include/gad.h and that docs/errors.md is
 *                               what --markdown prints
 *   test_bad_input --markdown   print docs/errors.md
 *   test_bad_input --verbose    also print every row and its error text
 */
#ifndef BAD_ROWS_PASS /* ================================== the harness */

#define _DEFAULT_SOURCE /* MAP_ANONYMOUS: a page with nothing mapped before it */
#include <sys/mman.h>

#include "test.h"
#include "test_tmpdir.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ the rows */

/* Row flags. */
enum {
    ISOLATE = 1, /* run in a child process: the call may crash */
    NOSCOPE = 2, /* no scope around the row (it releases what it makes) */
    NOMSG = 4    /* the message may be empty (gad_error_set with no fmt) */
};

typedef struct bad_row {
    const char *area;   /* a section heading (an AREA line), else NULL */
    const char *fn;     /* the function under test, "gad_add" */
    const char *cls;    /* the input class */
    const char *what;   /* the input, in words */
    const char *ret;    /* what the function returns ("status": the kind) */
    gad_status kind;    /* the expected error kind; GAD_OK: no error */
    const char *op;     /* the expected op name */
    const char *needle; /* text the message must contain, or NULL */
    unsigned flags;
    int (*call)(void); /* 1 when the return value is the documented one */
    const char *id;
} bad_row;

/* Short names for the kinds. */
#define E_OK GAD_OK
#define E_SHAPE GAD_ERR_SHAPE
#define E_DTYPE GAD_ERR_DTYPE
#define E_INDEX GAD_ERR_INDEX
#define E_DOMAIN GAD_ERR_DOMAIN
#define E_UNIQUE GAD_ERR_NOT_UNIQUE
#define E_UNSUP GAD_ERR_UNSUPPORTED
#define E_MEM GAD_ERR_MEMORY
#define E_IO GAD_ERR_IO
#define E_FORMAT GAD_ERR_FORMAT
#define E_DEVICE GAD_ERR_DEVICE

/* The input classes (the doc explains each). */
static const char *const class_names[][2] = {
    {"NULL", "a NULL tensor, array or object"},
    {"released", "a tensor already released (or freed with the scope that owned it), "
                 "a freed optimizer"},
    {"dtype", "a dtype the function does not take, or mixed dtypes"},
    {"rank", "a rank the function does not take"},
    {"shape", "shapes that do not fit together"},
    {"axis", "an axis out of range or given twice"},
    {"index", "an index or position out of range"},
    {"value", "a bad scalar argument (negative count, p >= 1, ...)"},
    {"NaN/Inf", "NaN or infinite values or arguments"},
    {"empty", "tensors with no elements"},
    {"rank 0", "scalars (rank-0 tensors)"},
    {"huge", "shapes whose element count overflows"},
    {"non-leaf", "a tensor that is not a leaf where a leaf is required"},
    {"tracked", "the output of a tracked op where it must be written"},
    {"io", "a file that cannot be opened, read or written"},
    {"format", "a malformed file or state"},
    {"memory", "the allocator fails"},
    {"odd", "other odd but valid input"},
};
#define NCLASSES ((int)(sizeof class_names / sizeof class_names[0]))

/* A call that must fail with NULL and the error (kind, op). */
#define TBAD(id, fn, cls, what, kind, op, needle, ...)                         \
    ROW(id, fn, cls, what, "NULL", kind, op, needle, 0,                        \
        return (__VA_ARGS__) == NULL;)
/* A call returning a gad_status that must fail with kind. */
#define SBAD(id, fn, cls, what, kind, op, needle, ...)                         \
    ROW(id, fn, cls, what, "status", kind, op, needle, 0,                      \
        return (__VA_ARGS__) == (kind);)
/* A call that must not fail; the expression checks its result. */
#define GOOD(id, fn, cls, what, result, ...)                                   \
    ROW(id, fn, cls, what, result, E_OK, "", NULL, 0, return (__VA_ARGS__);)

/* ------------------------------------------------------------ fixtures */

#define NDIMS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define DIMS(...) (const int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__)
#define AX(...) (const int[]){__VA_ARGS__}
#define BIG ((int64_t)1 << 40)

/* A new tensor of the shape with small distinct values (i64: 0 and 1,
 * valid indices for any axis of size 2 or more). */
static gad_tensor *mk(gad_dtype_t dt, const int64_t *shape, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    gad_tensor *t = gad_zeros(shape, rank, dt);
    void *p = t && n > 0 ? gad_data_mut(t) : NULL;
    for (int64_t i = 0; p && i < n; i++) {
        if (dt == GAD_F32) ((float *)p)[i] = 0.25f * (float)(i % 8) - 0.75f;
        else if (dt == GAD_F64) ((double *)p)[i] = 0.25 * (double)(i % 8) - 0.75;
        else if (dt == GAD_BOOL) ((uint8_t *)p)[i] = (uint8_t)(i % 2);
        else ((int64_t *)p)[i] = i % 2;
    }
    return t;
}
#define F32T(...) mk(GAD_F32, DIMS(__VA_ARGS__))
#define F64T(...) mk(GAD_F64, DIMS(__VA_ARGS__))
#define I64T(...) mk(GAD_I64, DIMS(__VA_ARGS__))
#define BOOLT(...) mk(GAD_BOOL, DIMS(__VA_ARGS__))
#define LEAF32(...) gad_requires_grad(F32T(__VA_ARGS__))
#define LEAF64(...) gad_requires_grad(F64T(__VA_ARGS__))
#define S32(v) gad_scalar_f32(v)
#define S64(v) gad_scalar_f64(v)

static gad_tensor *idx_(const int64_t *v, int64_t n) {
    return gad_from_i64(v, &n, 1);
}
static gad_tensor *vals32_(const float *v, int64_t n) {
    return gad_from_f32(v, &n, 1);
}
/* 1-D tensors of the given values. */
#define IDX(...) idx_((const int64_t[]){__VA_ARGS__}, NDIMS(__VA_ARGS__))
#define VALS32(...)                                                            \
    vals32_((const float[]){__VA_ARGS__},                                      \
            (int64_t)(sizeof((float[]){__VA_ARGS__}) / sizeof(float)))

/* A rank-2 view of one f32 element broadcast to [d0, d1] (no memory). */
static gad_tensor *bview(int64_t d0, int64_t d1) {
    const int64_t s[2] = {d0, d1};
    return gad_broadcast_to(gad_ones(NULL, 0, GAD_F32), s, 2);
}
/* A non-contiguous [3,2] view. */
static gad_tensor *noncontig(void) { return gad_transpose(F32T(2, 3)); }
/* An output of a tracked op. */
static gad_tensor *tracked(void) { return gad_mul_scalar(LEAF32(2, 3), 2.0); }

/* t has exactly this shape (and exists). */
static int shape_is_(gad_tensor *t, const int64_t *s, int r) {
    if (!t || gad_rank(t) != r) return 0;
    for (int i = 0; i < r; i++)
        if (gad_shape(t)[i] != s[i]) return 0;
    return 1;
}
#define SHAPE_IS(t, ...) shape_is_((t), DIMS(__VA_ARGS__))
#define SCALAR_IS(t) shape_is_((t), NULL, 0)

/* Element i of t as a double (NaN when t is NULL or too small). */
static double at(gad_tensor *t, int64_t i) {
    int64_t n = gad_numel(t);
    if (!t || i >= n) return NAN;
    double *v = malloc((size_t)n * sizeof *v);
    double r = v && gad_read_f64(t, v, (size_t)n) == GAD_OK ? v[i] : NAN;
    free(v);
    return r;
}
/* Every element of t is NaN (and there is at least one). */
static int all_nan(gad_tensor *t) {
    int64_t n = gad_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (!isnan(at(t, i))) return 0;
    return n > 0;
}
/* Every element of t is 0 (t exists). */
static int all_zero(gad_tensor *t) {
    int64_t n = gad_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (at(t, i) != 0) return 0;
    return t != NULL;
}

/* A shared generator for rows that need one (not a tensor). */
static gad_rng *g_rng;

/* An allocator that always fails (its free matches the default one). */
static void *fail_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx, (void)size, (void)align;
    return NULL;
}
static void plain_free(void *ctx, void *p, size_t size) {
    (void)ctx, (void)size;
    free(p);
}
static void failing_allocator(int on) {
    static const gad_allocator failing = {fail_alloc, plain_free, NULL};
    gad_set_allocator(on ? &failing : NULL);
}

/* Functions for gad_gradcheck and gad_gradgradcheck. */
static gad_tensor *fn_square(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)n;
    return gad_square(in[0]);
}
static gad_tensor *fn_null(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)in, (void)n;
    return NULL;
}
static gad_tensor *fn_i64(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)in, (void)n;
    return gad_argmax(in[0], 0, 0);
}
static gad_tensor *fn_bad_add(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)n;
    return gad_add(in[0], F64T(5));
}

/* --------------------------------------------------------------- files */

static char g_tmpdir[64];

/* A path in the temporary directory (four rotating buffers). */
static const char *tpath(const char *name) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_tmpdir, name);
    return buf[k];
}

static int write_bytes(const char *name, const void *p, size_t n) {
    FILE *f = fopen(tpath(name), "wb");
    if (!f) return 0;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* A safetensors file: the header length, the JSON header, data bytes. */
static int write_st(const char *name, const char *json, size_t data_len) {
    size_t h = strlen(json), n = 8 + h + data_len;
    unsigned char *b = calloc(n, 1);
    if (!b) return 0;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, json, h);
    int ok = write_bytes(name, b, n);
    free(b);
    return ok;
}

/* The file good.st holds "a" (f32 [2,3]) and "b" (i64 [2]). */
static const char *good_path(void) { return tpath("good.st"); }

static int make_good_file(void) {
    gad_scope_begin();
    const char *names[2] = {"a", "b"};
    gad_tensor *ts[2] = {F32T(2, 3), IDX(0, 1)};
    gad_status st = gad_save(good_path(), names, ts, 2);
    gad_scope_end();
    return st == GAD_OK;
}

/* Loads good.st, runs nothing else: the caller frees it. */
static gad_checkpoint *good_ckpt(void) { return gad_load(good_path()); }

/* An optimizer over one f32 [2,3] leaf (retained by it). */
static gad_optim *sgd1(double momentum) {
    gad_tensor *p = LEAF32(2, 3);
    gad_sgd_opts o = {.momentum = momentum};
    return gad_sgd_new(&p, 1, &o);
}
static gad_optim *adamw1(void) {
    gad_tensor *p = LEAF32(2, 3);
    return gad_adamw_new(&p, 1, NULL);
}

/* A parameter set of "a" (f32 [2,3]) and "a.b" (f32 [3]); the caller
 * frees it. The tensors are made in the caller's scope and held by the set. */
static gad_params *set2(void) {
    gad_params *ps = gad_params_new();
    gad_params_add(ps, "a", F32T(2, 3));
    gad_params_add(ps, "a.b", F32T(3));
    return ps;
}

/* A released tensor: made in an inner scope, kept past it, released. Its
 * header waits in the quarantine, poisoned. */
static gad_tensor *dead(void) {
    gad_scope_begin();
    gad_tensor *t = gad_retain(F32T(2, 3));
    gad_scope_end();
    gad_release(t);
    return t;
}

/* A freed optimizer (the struct waits in the optimizers' quarantine). */
static gad_optim *dead_optim(void) {
    gad_optim *o = sgd1(0);
    gad_optim_free(o);
    return o;
}

/* Valid HELIX weights for D = 2 (f32), scope-owned. */
static gad_helix_weights helix_w(void) {
    gad_helix_weights w = {F32T(3, 2), F32T(2, 2), F32T(2, 2), F32T(2, 4),
                           F32T(4, 2), F32T(2),    F32T(2),    F32T(2),
                           F32T(2)};
    return w;
}

/* Text gad_fprint writes for t, into buf. */
static int fprint_text(gad_tensor *t, char *buf, size_t cap) {
    FILE *f = tmpfile();
    if (!f) return 0;
    gad_fprint(f, t);
    rewind(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return 1;
}

/* sort, sampling: a generator for the rows that draw (kept for the whole
 * run), and a [2,3] f32 of weights or logits */
static gad_rng *row_rng(void) {
    static gad_rng *r;
    if (!r) r = gad_rng_new(27);
    return r;
}
static gad_tensor *w23(float a, float b, float c, float d, float e, float f) {
    return gad_reshape(VALS32(a, b, c, d, e, f), DIMS(2, 3));
}
#define SOPTS(...) (&(const gad_sample_opts){__VA_ARGS__})

/* ============================================ the rows, twice included */

#define BAD_ROWS_PASS 1
#define AREA(name)
#define ROW(id, fn, cls, what, ret, kind, op, needle, flags, ...)              \
    static int row_##id(void) { __VA_ARGS__ }
#include "test_bad_input.c"
#undef AREA
#undef ROW

#define AREA(name) {name, NULL, NULL, NULL, NULL, GAD_OK, NULL, NULL, 0, NULL, NULL},
#define ROW(id, fn, cls, what, ret, kind, op, needle, flags, ...)              \
    {NULL, fn, cls, what, ret, kind, op, needle, flags, row_##id, #id},
static const bad_row rows[] = {
#include "test_bad_input.c"
};
#undef AREA
#undef ROW
#define NROWS ((int)(sizeof rows / sizeof rows[0]))

/* ------------------------------------------------------------ runner */

/* The statuses' enum names, from gad.h's own list (every status has one). */
static const char *const kind_enum[] = {
#define KIND_ENUM_(code, name) #code,
    GAD_STATUS_LIST(KIND_ENUM_)
#undef KIND_ENUM_
};
_Static_assert(sizeof kind_enum / sizeof kind_enum[0] == GAD_STATUS_COUNT_,
               "a name for every status");

static int g_verbose;

static void row_fail(const bad_row *r, const char *fmt, const char *a,
                     const char *b) {
    fprintf(stderr, "FAIL %s [%s] %s (row %s): ", r->fn, r->cls, r->what, r->id);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

/* Run one row in this process. Returns the number of failed checks. */
static int run_row_here(const bad_row *r) {
    int bad = 0;
    char got[400];
    gad_mem_stats before, after;
    gad_clear_error();
    gad_mem_stats_get(&before);
    int depth0 = gad_scope_depth();
    if (!(r->flags & NOSCOPE)) gad_scope_begin();
    int depth = gad_scope_depth();

    int ret_ok = r->call();

    const gad_error *e = gad_last_error();
    if (e) snprintf(got, sizeof got, "%s", e->text);
    else snprintf(got, sizeof got, "no error");
    if (g_verbose) printf("%-28s %-9s %-40.40s -> %s\n", r->fn, r->cls, r->what, got);
    if (!ret_ok) {
        row_fail(r, "the call did not return %s (error: %s)", r->ret, got);
        bad++;
    }
    if (r->kind == GAD_OK) {
        if (e) {
            row_fail(r, "expected no error, got %s%s", got, "");
            bad++;
        }
    } else if (!e || e->kind != r->kind || strcmp(e->op, r->op) != 0) {
        char want[96];
        snprintf(want, sizeof want, "%s error in %s", gad_status_str(r->kind),
                 r->op);
        row_fail(r, "expected %s, got %s", want, got);
        bad++;
    } else {
        char head[96];
        snprintf(head, sizeof head, "%s error in %s:", gad_status_str(r->kind),
                 r->op);
        if (!(r->flags & NOMSG) && e->message[0] == 0) {
            row_fail(r, "the message is empty%s%s", "", "");
            bad++;
        }
        if (strncmp(e->text, head, strlen(head)) != 0) {
            row_fail(r, "the text \"%s\" does not start with \"%s\"", e->text,
                     head);
            bad++;
        }
        if (r->needle && !strstr(e->message, r->needle)) {
            row_fail(r, "the message \"%s\" does not contain \"%s\"",
                     e->message, r->needle);
            bad++;
        }
    }
    gad_clear_error();
    if (gad_scope_depth() != depth) {
        row_fail(r, "the scope depth changed%s%s", "", "");
        bad++;
    }
    while (gad_scope_depth() > depth0) gad_scope_end();
    /* thread-wide modes must be as they were */
    if (!gad_grad_enabled()) {
        row_fail(r, "left no-grad mode on%s%s", "", "");
        bad++;
        while (!gad_grad_enabled()) gad_no_grad_end();
    }
    if (gad_set_anomaly(0)) {
        row_fail(r, "left anomaly mode on%s%s", "", "");
        bad++;
    }
    gad_mem_stats_get(&after);
    if (after.live_tensors != before.live_tensors ||
        after.live_storages != before.live_storages) {
        char a[64], b[64];
        snprintf(a, sizeof a, "%lld tensors, %lld storages",
                 (long long)before.live_tensors, (long long)before.live_storages);
        snprintf(b, sizeof b, "%lld tensors, %lld storages",
                 (long long)after.live_tensors, (long long)after.live_storages);
        row_fail(r, "leaked: %s before, %s after", a, b);
        bad++;
    }
    gad_clear_error();
    return bad;
}

/* Run a row that may crash in a child process. */
static int run_row_isolated(const bad_row *r) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        row_fail(r, "fork failed: %s%s", strerror(errno), "");
        return 1;
    }
    if (pid == 0) {
        int bad = run_row_here(r);
        fflush(stdout);
        fflush(stderr);
        _exit(bad ? 1 : 0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) {
        char sig[16];
        snprintf(sig, sizeof sig, "%d", WTERMSIG(status));
        row_fail(r, "crashed (signal %s)%s", sig, "");
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char code[16];
        snprintf(code, sizeof code, "%d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        row_fail(r, "failed in its child process (exit status %s; a sanitizer "
                    "report or the checks above say why)%s", code, "");
        return 1;
    }
    return 0;
}

/* ------------------------------------------------- coverage of gad.h */

typedef struct name_list {
    char (*v)[64];
    int n, cap;
} name_list;

static int list_has(const name_list *l, const char *s) {
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0) return 1;
    return 0;
}

static void list_add(name_list *l, const char *s) {
    if (list_has(l, s)) return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v) abort();
    }
    snprintf(l->v[l->n++], sizeof l->v[0], "%s", s);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    while (s) {
        if (n + 4096 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
        }
        size_t k = fread(s + n, 1, cap - n - 1, f);
        n += k;
        if (k == 0) break;
    }
    fclose(f);
    if (s) s[n] = 0;
    if (len) *len = n;
    return s;
}

/* The functions gad.h declares: every "gad_<name>(" outside comments. */
static int header_functions(name_list *out) {
    char *src = read_file(GAD_SOURCE_DIR "/include/gad.h", NULL);
    if (!src) return 0;
    /* blank out comments */
    for (char *p = src; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            char *q = strstr(p + 2, "*/");
            char *end = q ? q + 2 : p + strlen(p);
            for (; p < end; p++)
                if (*p != '\n') *p = ' ';
            p--;
        } else if (p[0] == '/' && p[1] == '/') {
            for (; *p && *p != '\n'; p++) *p = ' ';
            if (!*p) break;
        }
    }
    for (char *p = src; *p; p++) {
        if (strncmp(p, "gad_", 4) != 0) continue;
        if (p > src && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                        (p[-1] >= 'A' && p[-1] <= 'Z') ||
                        (p[-1] >= '0' && p[-1] <= '9')))
            continue;
        char *q = p + 4;
        while ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_')
            q++;
        char *r = q;
        while (*r == ' ' || *r == '\t' || *r == '\n') r++;
        if (*r == '(' && q - p < 64) {
            char name[64];
            memcpy(name, p, (size_t)(q - p));
            name[q - p] = 0;
            list_add(out, name);
        }
        p = q - 1;
    }
    free(src);
    return 1;
}

/* ------------------------------------------------------ the markdown */

static const char doc_intro[] =
    "# Errors: what every function does with bad input\n"
    "\n"
    "<!-- Generated from the table in tests/test_bad_input.c by\n"
    "     `test_bad_input --markdown > docs/errors.md`; do not edit by hand.\n"
    "     The test fails when this file differs from what it prints. -->\n"
    "\n"
    "This page lists, for every public function of `gad.h`, each class of bad\n"
    "input it can receive and what it then does, and the odd inputs that are\n"
    "valid and must not fail. Every line is a row of the test\n"
    "`tests/test_bad_input.c`, which makes the call and checks the result, the\n"
    "error record and that nothing leaked, so this page and the library cannot\n"
    "drift apart.\n"
    "\n"
    "## The error model\n"
    "\n"
    "- **Nothing aborts.** A function that fails returns `NULL` (or a\n"
    "  `gad_status`, or NaN, or -1, as its declaration says) and records the\n"
    "  *first* error of the calling thread: a kind, the name of the op that\n"
    "  failed and a message naming the offending shapes or values.\n"
    "- **Read it once.** Every op given a `NULL` tensor returns `NULL` and keeps\n"
    "  the error already recorded, so a whole expression such as\n"
    "  `gad_sum_all(gad_matmul(a, b))` can be checked once at the end:\n"
    "\n"
    "  ```c\n"
    "  gad_tensor *y = gad_sum_all(gad_matmul(a, b));\n"
    "  if (!y) {\n"
    "      const gad_error *e = gad_last_error();\n"
    "      fprintf(stderr, \"%s\\n\", e->text); /* shape error in matmul: ... */\n"
    "      gad_clear_error();\n"
    "  }\n"
    "  ```\n"
    "\n"
    "- `gad_last_error()` returns the pending record (or `NULL`); its `text` is\n"
    "  `\"<kind> error in <op>: <message>\"`. `gad_clear_error()` forgets it;\n"
    "  until then later errors are not recorded.\n"
    "- **IEEE arithmetic is not an error**: `log(-1)` is NaN, `1/0` is inf, the\n"
    "  mean of nothing is NaN. Only arguments whose NaN has no meaning (a clamp\n"
    "  bound, an epsilon, a probability, a fill value for i64) are errors.\n"
    "- A call that fails leaks nothing, and the calls that change state in\n"
    "  place (optimizer steps, state loads, saves) change nothing when they\n"
    "  fail.\n"
    "\n"
    "The kinds:\n"
    "\n"
    "| kind | meaning |\n"
    "|---|---|\n"
    "| `shape` | a bad shape, rank, axis, broadcast, or an element count that overflows |\n"
    "| `dtype` | a wrong or mixed dtype (there is no implicit promotion: use `gad_cast`) |\n"
    "| `index` | an index outside its bound (the message names the index and the bound) |\n"
    "| `domain` | a bad argument value, or a `NULL` argument |\n"
    "| `not-unique` | the tensor must be written in place but is the output of a tracked op |\n"
    "| `unsupported` | valid, but not supported here (e.g. an F16 checkpoint) |\n"
    "| `memory` | an allocation failed |\n"
    "| `io` | a file could not be opened, read or written |\n"
    "| `format` | a malformed file or optimizer state |\n"
    "\n"
    "A `NULL` shape, axis or range array where entries are needed is a `shape`\n"
    "error (it is a bad shape); a `NULL` tensor, array of tensors, object or\n"
    "output pointer is a `domain` error.\n";

static void md_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else fputc(*s, f);
    }
}

static void md_row(FILE *f, const bad_row *r) {
    fprintf(f, "| %s | ", r->cls);
    md_text(f, r->what);
    fputs(" | ", f);
    if (strcmp(r->ret, "status") == 0) fprintf(f, "`%s`", kind_enum[r->kind]);
    else md_text(f, r->ret);
    if (r->kind == GAD_OK) fputs(" | none |\n", f);
    else fprintf(f, " | %s in `%s` |\n", gad_status_str(r->kind), r->op);
}

/* Each area's functions in the order they first appear, each with all its
 * rows of that area (the rows an op's X-macro row makes come first, its
 * own special cases may follow later). */
static void print_markdown(FILE *f) {
    fputs(doc_intro, f);
    fputs("\nThe input classes:\n\n| class | what |\n|---|---|\n", f);
    for (int c = 0; c < NCLASSES; c++)
        fprintf(f, "| %s | %s |\n", class_names[c][0], class_names[c][1]);
    int nrows = 0;
    name_list fns = {0}, done = {0};
    for (int i = 0; i < NROWS; i++) {
        const bad_row *r = &rows[i];
        if (r->area) {
            fprintf(f, "\n## %s\n", r->area);
            free(done.v);
            done = (name_list){0};
            continue;
        }
        nrows++;
        list_add(&fns, r->fn);
        if (list_has(&done, r->fn)) continue;
        list_add(&done, r->fn);
        fprintf(f, "\n### `%s`\n\n| class | input | returns | error |\n"
                   "|---|---|---|---|\n",
                r->fn);
        for (int j = i; j < NROWS && !rows[j].area; j++)
            if (strcmp(rows[j].fn, r->fn) == 0) md_row(f, &rows[j]);
    }
    fprintf(f, "\n---\n\n%d rows over %d functions.\n", nrows, fns.n);
    free(fns.v);
    free(done.v);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
    gad_debug_quarantine(1); /* the default (GAD_QUARANTINE=0 is not): these tests need it */
    if (argc > 1 && strcmp(argv[1], "--markdown") == 0) {
        print_markdown(stdout);
        return 0;
    }
    g_verbose = argc > 1 && strcmp(argv[1], "--verbose") == 0;
    if (test_make_tmpdir(g_tmpdir, sizeof g_tmpdir, "gad_bad", 0)) return 1;
    g_rng = gad_rng_new(42);
    CHECK(g_rng != NULL);
    CHECK(make_good_file());

    /* the table: the rows of one function in one area, classes known */
    int failed = 0, nrows = 0;
    name_list table_fns = {0}, pairs = {0}, seen_before = {0}, seen_here = {0};
    for (int i = 0; i < NROWS; i++) {
        const bad_row *r = &rows[i];
        if (r->area) {
            for (int k = 0; k < seen_here.n; k++) list_add(&seen_before, seen_here.v[k]);
            free(seen_here.v);
            seen_here = (name_list){0};
            continue;
        }
        nrows++;
        CHECK_MSG(!list_has(&seen_before, r->fn),
                  "the rows of %s are in two areas (row %s)", r->fn, r->id);
        list_add(&seen_here, r->fn);
        list_add(&table_fns, r->fn);
        int known = 0;
        for (int c = 0; c < NCLASSES; c++) known |= strcmp(class_names[c][0], r->cls) == 0;
        CHECK_MSG(known, "row %s has an unknown class \"%s\"", r->id, r->cls);
        char pair[160];
        snprintf(pair, sizeof pair, "%.80s/%.60s", r->fn, r->cls);
        list_add(&pairs, pair);
        int bad = (r->flags & ISOLATE) ? run_row_isolated(r) : run_row_here(r);
        test_checks_++;
        if (bad) {
            failed++;
            test_failures_++;
        }
    }

    /* every function of gad.h has rows, and every row names one */
    name_list decl = {0};
    CHECK_MSG(header_functions(&decl), "cannot read %s", GAD_SOURCE_DIR "/include/gad.h");
    int missing = 0;
    for (int i = 0; i < decl.n; i++)
        if (!list_has(&table_fns, decl.v[i])) {
            fprintf(stderr, "MISSING: %s (declared in gad.h) has no row\n", decl.v[i]);
            missing++;
        }
    for (int i = 0; i < table_fns.n; i++)
        CHECK_MSG(list_has(&decl, table_fns.v[i]),
                  "%s has rows but is not declared in gad.h", table_fns.v[i]);
    CHECK_MSG(missing == 0, "%d functions of gad.h are missing from the table",
              missing);

    /* docs/errors.md is what --markdown prints */
    char *doc = read_file(GAD_SOURCE_DIR "/docs/errors.md", NULL);
    char *gen = NULL;
    size_t gen_len = 0;
    FILE *mf = open_memstream(&gen, &gen_len);
    if (mf) {
        print_markdown(mf);
        fclose(mf);
    }
    CHECK_MSG(doc && gen && strcmp(doc, gen) == 0,
              "docs/errors.md %s; regenerate it: test_bad_input --markdown > "
              "%s/docs/errors.md",
              doc ? "differs from the table" : "is missing", GAD_SOURCE_DIR);
    free(doc);
    free(gen);

    printf("bad-input table: %d rows, %d functions (%d declared in gad.h, %d "
           "missing), %d function x class pairs, %d classes; %d rows failed\n",
           nrows, table_fns.n, decl.n, missing, pairs.n, NCLASSES, failed);
    free(decl.v);
    free(table_fns.v);
    free(pairs.v);
    free(seen_before.v);
    free(seen_here.v);
    gad_rng_free(g_rng);
    test_remove_tree(g_tmpdir, 0);
    gad_cache_trim();
    return test_summary();
}

#else /* ========================================================= the rows */
/* ROW(id, "gad_fn", class, input in words, returns, kind, op, needle,
 *     flags, body returning 1 when the call returned the documented value)
 * TBAD: a tensor (pointer) call that must return NULL with the error;
 * SBAD: a gad_status call that must return the kind; GOOD: no error. The
 * rows of one function stay together; AREA starts a section of the doc. */

AREA("Types and errors")

GOOD(dtype_name_bad, "gad_dtype_name", "odd", "dtype 99 or GAD_DTYPE_INVALID", "\"?\"",
     strcmp(gad_dtype_name((gad_dtype_t)99), "?") == 0 &&
     strcmp(gad_dtype_name(GAD_DTYPE_INVALID), "?") == 0 &&
     strcmp(gad_dtype_name(GAD_I64), "i64") == 0)
GOOD(dtype_size_bad, "gad_dtype_size", "odd", "dtype 99 or GAD_DTYPE_INVALID", "0",
     gad_dtype_size((gad_dtype_t)99) == 0 && gad_dtype_size(GAD_DTYPE_INVALID) == 0 &&
     gad_dtype_size(GAD_F32) == 4)
GOOD(status_str_bad, "gad_status_str", "odd", "status 999 or -1", "\"unknown\"",
     strcmp(gad_status_str((gad_status)999), "unknown") == 0 &&
     strcmp(gad_status_str((gad_status)-1), "unknown") == 0 &&
     strcmp(gad_status_str(GAD_ERR_NOT_UNIQUE), "not-unique") == 0)
GOOD(last_error_none, "gad_last_error", "odd", "no error pending", "NULL",
     gad_last_error() == NULL)
ROW(last_error_after_clear, "gad_last_error", "odd", "after gad_clear_error", "NULL",
    E_OK, "", NULL, 0,
    gad_error_set(GAD_ERR_SHAPE, "x", "y");
    gad_clear_error();
    return gad_last_error() == NULL;)
ROW(clear_error_none, "gad_clear_error", "odd", "no error pending", "nothing",
    E_OK, "", NULL, 0,
    gad_clear_error();
    gad_clear_error();
    return gad_last_error() == NULL;)
ROW(error_set_ok_kind, "gad_error_set", "value", "kind GAD_OK", "NULL", E_DOMAIN,
    "my_op", "value 3", 0,
    return gad_error_set(GAD_OK, "my_op", "value %d", 3) == NULL;)
ROW(error_set_null_op, "gad_error_set", "NULL", "op NULL", "NULL", E_SHAPE, "?",
    "bad", 0,
    return gad_error_set(GAD_ERR_SHAPE, NULL, "bad") == NULL;)
ROW(error_set_null_fmt, "gad_error_set", "NULL", "fmt NULL", "NULL (empty message)",
    E_INDEX, "my_op", NULL, NOMSG,
    return gad_error_set(GAD_ERR_INDEX, "my_op", NULL) == NULL &&
           gad_last_error()->message[0] == 0;)
ROW(error_set_pending, "gad_error_set", "odd", "an error is already pending",
    "NULL (the first error stays)", E_SHAPE, "first", "one", 0,
    gad_error_set(GAD_ERR_SHAPE, "first", "one");
    return gad_error_set(GAD_ERR_INDEX, "second", "two") == NULL;)
ROW(error_set_long_op, "gad_error_set", "odd", "an op name of 40 characters",
    "NULL (the name is cut to 31)", E_DOMAIN, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "x", 0,
    return gad_error_set(GAD_ERR_DOMAIN, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                         "x") == NULL;)

AREA("Memory, scopes and the allocator")

GOOD(retain_null, "gad_retain", "NULL", "t NULL", "NULL", gad_retain(NULL) == NULL)
TBAD(retain_released, "gad_retain", "released", "t released", E_DOMAIN, "retain",
     "use of a released tensor", gad_retain(dead()))
ROW(release_null, "gad_release", "NULL", "t NULL", "nothing (a no-op)", E_OK, "", NULL, 0,
    gad_release(NULL);
    return 1;)
ROW(release_twice, "gad_release", "released", "t released already (a newer tensor made since)",
    "nothing (the newer tensor lives on)", E_DOMAIN, "release", "use of a released tensor", 0,
    gad_tensor *t = dead();
    gad_tensor *u = F32T(2, 3);
    gad_release(t);
    return at(u, 1) == -0.5;)
ROW(scope_begin_deep, "gad_scope_begin", "odd", "100 nested scopes", "nothing",
    E_OK, "", NULL, 0,
    int d = gad_scope_depth();
    for (int i = 0; i < 100; i++) { gad_scope_begin(); F32T(2); }
    int ok = gad_scope_depth() == d + 100;
    for (int i = 0; i < 100; i++) gad_scope_end();
    return ok && gad_scope_depth() == d;)
ROW(scope_end_none, "gad_scope_end", "odd", "no scope open", "nothing (a no-op)",
    E_OK, "", NULL, NOSCOPE,
    gad_scope_end();
    return gad_scope_depth() == 0;)
ROW(scope_end_released, "gad_scope_end", "released", "a tensor of the scope released by hand",
    "nothing (it is not released twice)", E_DOMAIN, "release", "use of a released tensor", 0,
    gad_scope_begin();
    gad_tensor *t = F32T(2);
    gad_release(t);
    gad_scope_end();
    return 1;)
ROW(scope_depth_none, "gad_scope_depth", "odd", "no scope open", "0", E_OK, "",
    NULL, NOSCOPE, return gad_scope_depth() == 0;)
GOOD(keep_null, "gad_keep", "NULL", "t NULL", "NULL", gad_keep(NULL) == NULL)
TBAD(keep_released, "gad_keep", "released", "t released", E_DOMAIN, "keep",
     "use of a released tensor", gad_keep(dead()))
ROW(keep_noscope, "gad_keep", "odd", "no scope open", "t (the caller owns it)",
    E_OK, "", NULL, NOSCOPE,
    gad_tensor *t = gad_zeros(DIMS(2), GAD_F32);
    int ok = gad_keep(t) == t && t != NULL;
    gad_release(t);
    return ok;)
ROW(keep_one_scope, "gad_keep", "odd", "one scope open",
    "t, handed to the caller", E_OK, "", NULL, NOSCOPE,
    gad_scope_begin();
    gad_tensor *t = gad_keep(gad_zeros(DIMS(2), GAD_F32));
    gad_scope_end();
    int ok = t && gad_numel(t) == 2;
    gad_release(t);
    return ok;)
ROW(set_allocator_null, "gad_set_allocator", "NULL", "allocator NULL",
    "nothing (the default allocator)", E_OK, "", NULL, 0,
    gad_set_allocator(NULL);
    return F32T(2) != NULL;)
ROW(set_allocator_nullfn, "gad_set_allocator", "NULL", "alloc or free NULL",
    "nothing (the default allocator)", E_OK, "", NULL, 0,
    gad_allocator a = {NULL, plain_free, NULL};
    gad_set_allocator(&a);
    return F32T(2) != NULL;)
ROW(mem_alloc_max, "gad_mem_alloc", "huge", "n = SIZE_MAX", "NULL (no error)",
    E_OK, "", NULL, 0,
    return gad_mem_alloc(SIZE_MAX) == NULL && gad_mem_alloc(SIZE_MAX - 8) == NULL;)
ROW(mem_alloc_zero, "gad_mem_alloc", "empty", "n = 0", "a pointer to free",
    E_OK, "", NULL, 0,
    void *p = gad_mem_alloc(0);
    gad_mem_free(p);
    return p != NULL;)
ROW(mem_alloc_fail, "gad_mem_alloc", "memory", "the allocator fails", "NULL (no error)",
    E_OK, "", NULL, 0,
    failing_allocator(1);
    void *p = gad_mem_alloc(16);
    failing_allocator(0);
    return p == NULL;)
ROW(mem_realloc_max, "gad_mem_realloc", "huge", "n = SIZE_MAX",
    "NULL; p stays valid (no error)", E_OK, "", NULL, 0,
    char *p = gad_mem_alloc(4);
    if (!p) return 0;
    memcpy(p, "abc", 4);
    void *q = gad_mem_realloc(p, SIZE_MAX);
    int ok = q == NULL && strcmp(p, "abc") == 0;
    gad_mem_free(p);
    return ok;)
ROW(mem_realloc_null, "gad_mem_realloc", "NULL", "p NULL", "a new block (as malloc)",
    E_OK, "", NULL, 0,
    void *p = gad_mem_realloc(NULL, 32);
    gad_mem_free(p);
    return p != NULL;)
ROW(mem_free_null, "gad_mem_free", "NULL", "p NULL", "nothing (a no-op)", E_OK, "",
    NULL, 0,
    gad_mem_free(NULL);
    return 1;)
ROW(host_alloc_max, "gad_host_alloc", "huge", "n = SIZE_MAX", "NULL", E_MEM, "host_alloc",
    "more than memory holds", 0, return gad_host_alloc(SIZE_MAX) == NULL;)
ROW(host_alloc_zero, "gad_host_alloc", "empty", "n = 0", "a pointer to free", E_OK, "", NULL, 0,
    void *p = gad_host_alloc(0);
    gad_host_free(p);
    return p != NULL;)
ROW(host_alloc_plain, "gad_host_alloc", "odd", "no CUDA device (this machine)",
    "ordinary memory, 16-byte aligned, written and freed", E_OK, "", NULL, 0,
    if (gad_device_count(GAD_DEVICE_CUDA) > 0) return 1; /* pinned there: check.sh */
    char *p = gad_host_alloc(1000);
    int ok = p && !gad_host_is_pinned(p) && ((uintptr_t)p & 15) == 0;
    if (p) memset(p, 7, 1000);
    gad_host_free(p);
    return ok;)
GOOD(host_is_pinned_null, "gad_host_is_pinned", "NULL", "p NULL", "0",
     gad_host_is_pinned(NULL) == 0)
GOOD(host_free_null, "gad_host_free", "NULL", "p NULL", "nothing (a no-op)",
     (gad_host_free(NULL), 1))
ROW(host_free_foreign, "gad_host_free", "odd", "memory from gad_mem_alloc",
    "nothing freed; an error", E_DOMAIN, "host_free", "not a live block of gad_host_alloc", 0,
    char *p = gad_mem_alloc(256);
    if (!p) return 0;
    memset(p, 0, 256);
    gad_host_free(p + 64);
    gad_mem_free(p);
    return 1;)
ROW(host_free_twice, "gad_host_free", "odd", "a block freed twice",
    "the second is an error, nothing freed", E_DOMAIN, "host_free", "freed already", 0,
    void *p = gad_host_alloc(100);
    if (!p) return 0;
    gad_host_free(p);
    if (gad_last_error()) return 0;
    gad_host_free(p);
    return 1;)
ROW(host_free_page_start, "gad_host_free", "odd", "the first byte of a mapped page",
    "an error; nothing read before it", E_DOMAIN, "host_free", "not a live block", 0,
    /* a header read before p would fault: the page before is unmapped */
    long pg = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)(2 * pg), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 0;
    munmap(m, (size_t)pg);
    gad_host_free(m + pg);
    munmap(m + pg, (size_t)pg);
    return 1;)
ROW(cache_trim_twice, "gad_cache_trim", "odd", "called twice, with tensors alive",
    "nothing", E_OK, "", NULL, 0,
    gad_tensor *t = F32T(4, 4);
    gad_cache_trim();
    gad_cache_trim();
    return at(t, 1) == -0.5;)
ROW(mem_stats_null, "gad_mem_stats_get", "NULL", "out NULL", "nothing (a no-op)",
    E_OK, "", NULL, 0,
    gad_mem_stats_get(NULL);
    return 1;)
ROW(debug_track_twice, "gad_debug_track", "odd", "on twice, then off",
    "the previous setting (0, 1, 1)", E_OK, "", NULL, 0,
    int a = gad_debug_track(1), b = gad_debug_track(1), c = gad_debug_track(0);
    return a == 0 && b == 1 && c == 1;)
ROW(debug_report_null, "gad_debug_live_report", "NULL", "f NULL (tracking off)",
    "0 (the report goes to stderr)", E_OK, "", NULL, 0,
    return gad_debug_live_report(NULL) == 0;)
ROW(cache_limit_zero, "gad_set_cache_limit", "odd", "limit 0 (no cache)",
    "the previous limit", E_OK, "", NULL, 0,
    size_t old = gad_set_cache_limit(0);
    gad_tensor *t = F32T(100);
    size_t zero = gad_set_cache_limit(old);
    return t && zero == 0 && old > 0;)

AREA("Runtime configuration")

ROW(set_threads_zero, "gad_set_num_threads", "value", "n = 0 or n = -5",
    "nothing (the default count)", E_OK, "", NULL, 0,
    int old = gad_num_threads();
    gad_set_num_threads(0);
    int a = gad_num_threads();
    gad_set_num_threads(-5);
    int b = gad_num_threads();
    gad_set_num_threads(old);
    return a >= 1 && b == a;)
GOOD(num_threads_pos, "gad_num_threads", "odd", "no setting made", ">= 1",
     gad_num_threads() >= 1)
GOOD(blas_available_01, "gad_blas_available", "odd", "any build", "0 or 1",
     gad_blas_available() == 0 || gad_blas_available() == 1)
ROW(set_blas_odd, "gad_set_blas", "value", "enabled = 7 (any nonzero)",
    "the previous setting (0 without BLAS)", E_OK, "", NULL, 0,
    int old = gad_set_blas(7);
    int now = gad_set_blas(old);
    return gad_blas_available() ? now == 1 : (old == 0 && now == 0);)
ROW(matmul_precision_range, "gad_set_matmul_precision", "value",
    "p = 7 or p = -1 (no such precision)", "ignored: the current setting is returned and kept",
    E_OK, "", NULL, 0,
    gad_matmul_precision old = gad_set_matmul_precision(GAD_MATMUL_MEDIUM);
    gad_matmul_precision a = gad_set_matmul_precision((gad_matmul_precision)7);
    gad_matmul_precision b = gad_set_matmul_precision((gad_matmul_precision)-1);
    gad_matmul_precision now = gad_matmul_precision_get();
    gad_set_matmul_precision(old);
    return a == GAD_MATMUL_MEDIUM && b == GAD_MATMUL_MEDIUM && now == GAD_MATMUL_MEDIUM;)
GOOD(matmul_precision_default, "gad_matmul_precision_get", "odd", "no setting made",
     "GAD_MATMUL_HIGHEST", gad_matmul_precision_get() == GAD_MATMUL_HIGHEST)
GOOD(matmul_medium_native_01, "gad_matmul_medium_native", "odd", "any CPU", "0 or 1",
     gad_matmul_medium_native() == 0 || gad_matmul_medium_native() == 1)
GOOD(version_str, "gad_version", "odd", "any build", "\"0.1.0\"",
     strcmp(gad_version(), GAD_VERSION_STRING) == 0)

AREA("Constructors")

TBAD(from_f32_nodata, "gad_from_f32", "NULL", "data NULL for shape [2,3]", E_DOMAIN,
     "from_f32", "6 elements", gad_from_f32(NULL, DIMS(2, 3)))
TBAD(from_f32_noshape, "gad_from_f32", "NULL", "shape NULL with rank 2", E_SHAPE,
     "from_f32", NULL, gad_from_f32((const float[]){1, 2}, NULL, 2))
TBAD(from_f32_negdim, "gad_from_f32", "shape", "shape [2,-3]", E_SHAPE, "from_f32",
     "[2,-3]", gad_from_f32((const float[]){1}, DIMS(2, -3)))
TBAD(from_f32_rank9, "gad_from_f32", "rank", "rank 9", E_SHAPE, "from_f32", "rank 9",
     gad_from_f32((const float[]){1}, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)))
TBAD(from_f32_rankneg, "gad_from_f32", "rank", "rank -1", E_SHAPE, "from_f32",
     "rank -1", gad_from_f32((const float[]){1}, (const int64_t[]){1}, -1))
TBAD(from_f32_huge, "gad_from_f32", "huge", "shape [2^40,2^40]", E_SHAPE, "from_f32",
     "overflows", gad_from_f32((const float[]){1}, DIMS(BIG, BIG)))
ROW(from_f32_nomem, "gad_from_f32", "memory", "the allocator fails", "NULL", E_MEM,
    "from_f32", NULL, 0,
    failing_allocator(1);
    gad_tensor *t = gad_from_f32((const float[]){1, 2}, DIMS(2));
    failing_allocator(0);
    return t == NULL;)
GOOD(from_f32_empty, "gad_from_f32", "empty", "shape [0,3] with data NULL",
     "a [0,3] tensor", SHAPE_IS(gad_from_f32(NULL, DIMS(0, 3)), 0, 3))
GOOD(from_f32_rank0, "gad_from_f32", "rank 0", "rank 0 with shape NULL", "a scalar",
     at(gad_from_f32((const float[]){2.5f}, NULL, 0), 0) == 2.5)
GOOD(from_f32_nan, "gad_from_f32", "NaN/Inf", "data holding NaN and inf",
     "the values as given", isnan(at(VALS32(NAN, INFINITY), 0)) &&
     isinf(at(VALS32(NAN, INFINITY), 1)))
TBAD(from_f64_nodata, "gad_from_f64", "NULL", "data NULL for shape [4]", E_DOMAIN,
     "from_f64", "4 elements", gad_from_f64(NULL, DIMS(4)))
TBAD(from_f64_negdim, "gad_from_f64", "shape", "shape [-1]", E_SHAPE, "from_f64",
     "[-1]", gad_from_f64((const double[]){1}, DIMS(-1)))
TBAD(from_f64_huge, "gad_from_f64", "huge", "shape [2^40,2^40]", E_SHAPE, "from_f64",
     "overflows", gad_from_f64((const double[]){1}, DIMS(BIG, BIG)))
GOOD(from_f64_empty, "gad_from_f64", "empty", "shape [0] with data NULL",
     "a [0] tensor", SHAPE_IS(gad_from_f64(NULL, DIMS(0)), 0))
TBAD(from_i64_nodata, "gad_from_i64", "NULL", "data NULL for shape [2]", E_DOMAIN,
     "from_i64", "2 elements", gad_from_i64(NULL, DIMS(2)))
TBAD(from_i64_rank9, "gad_from_i64", "rank", "rank 9", E_SHAPE, "from_i64", "rank 9",
     gad_from_i64((const int64_t[]){1}, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)))
TBAD(from_i64_huge, "gad_from_i64", "huge", "shape [2^40,2^40]", E_SHAPE, "from_i64",
     "overflows", gad_from_i64((const int64_t[]){1}, DIMS(BIG, BIG)))
GOOD(from_i64_empty, "gad_from_i64", "empty", "shape [3,0] with data NULL",
     "a [3,0] tensor", SHAPE_IS(gad_from_i64(NULL, DIMS(3, 0)), 3, 0))
TBAD(from_bool_nodata, "gad_from_bool", "NULL", "data NULL for shape [2]", E_DOMAIN,
     "from_bool", "2 elements", gad_from_bool(NULL, DIMS(2)))
TBAD(from_bool_rank9, "gad_from_bool", "rank", "rank 9", E_SHAPE, "from_bool", "rank 9",
     gad_from_bool((const uint8_t[]){1}, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)))
GOOD(from_bool_empty, "gad_from_bool", "empty", "shape [3,0] with data NULL",
     "a [3,0] tensor", SHAPE_IS(gad_from_bool(NULL, DIMS(3, 0)), 3, 0))
GOOD(from_bool_bytes, "gad_from_bool", "odd", "bytes 0, 2, 255",
     "false, true, true (stored as 0, 1, 1)",
     at(gad_from_bool((const uint8_t[]){0, 2, 255}, DIMS(3)), 2) == 1)
/* dtypes (issue 29, helper dtype) */
TBAD(from_raw_dtype, "gad_from_raw", "dtype", "dtype 99 (not a dtype)", E_DTYPE, "from_raw",
     "99", gad_from_raw((gad_dtype_t)99, (const uint16_t[]){0}, DIMS(1)))
TBAD(from_raw_null, "gad_from_raw", "NULL", "data NULL for 2 f16 elements", E_DOMAIN,
     "from_raw", "NULL", gad_from_raw(GAD_F16, NULL, DIMS(2)))
TBAD(from_raw_bool, "gad_from_raw", "value", "bool byte 2", E_DOMAIN, "from_raw", "not 0 or 1",
     gad_from_raw(GAD_BOOL, (const uint8_t[]){1, 2}, DIMS(2)))
TBAD(from_raw_shape, "gad_from_raw", "shape", "bf16, a negative dim", E_SHAPE, "from_raw", NULL,
     gad_from_raw(GAD_BF16, (const uint16_t[]){0}, DIMS(-1)))
GOOD(from_raw_empty, "gad_from_raw", "empty", "data NULL for [0] i32", "a [0] tensor",
     SHAPE_IS(gad_from_raw(GAD_I32, NULL, DIMS(0)), 0))
GOOD(from_raw_nan, "gad_from_raw", "NaN/Inf", "an f16 signalling NaN 0x7c01", "kept as given",
     ((const uint16_t *)gad_data(gad_from_raw(GAD_F16, (const uint16_t[]){0x7c01}, DIMS(1))))[0]
         == 0x7c01)

TBAD(zeros_negdim, "gad_zeros", "shape", "shape [2,-1]", E_SHAPE, "zeros", "[2,-1]",
     gad_zeros(DIMS(2, -1), GAD_F32))
TBAD(zeros_noshape, "gad_zeros", "NULL", "shape NULL with rank 1", E_SHAPE, "zeros",
     NULL, gad_zeros(NULL, 1, GAD_F32))
TBAD(zeros_rank9, "gad_zeros", "rank", "rank 9", E_SHAPE, "zeros", "rank 9",
     gad_zeros(DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1), GAD_F32))
TBAD(zeros_dtype, "gad_zeros", "dtype", "dtype 8 (not a dtype)", E_DTYPE, "zeros",
     "8", gad_zeros(DIMS(2), (gad_dtype_t)8))
TBAD(zeros_dtype_invalid, "gad_zeros", "dtype", "GAD_DTYPE_INVALID", E_DTYPE, "zeros",
     "-1", gad_zeros(DIMS(2), GAD_DTYPE_INVALID))
TBAD(zeros_huge, "gad_zeros", "huge", "shape [2^40,2^40]", E_SHAPE, "zeros",
     "[1099511627776,1099511627776]", gad_zeros(DIMS(BIG, BIG), GAD_F32))
TBAD(zeros_huge3, "gad_zeros", "huge", "shape [2^21,2^21,2^21] (2^63 elements)",
     E_SHAPE, "zeros", "overflows",
     gad_zeros(DIMS((int64_t)1 << 21, (int64_t)1 << 21, (int64_t)1 << 21), GAD_F64))
ROW(zeros_nomem, "gad_zeros", "memory", "the allocator fails", "NULL", E_MEM, "zeros",
    NULL, 0,
    failing_allocator(1);
    gad_tensor *t = gad_zeros(DIMS(2, 3), GAD_F32);
    failing_allocator(0);
    return t == NULL;)
ROW(zeros_empty_huge, "gad_zeros", "huge",
    "shape [0,2^40,2^40] (no elements, but its strides overflow)", "NULL", E_SHAPE,
    "zeros", "[0,1099511627776,1099511627776]", ISOLATE,
    return gad_zeros(DIMS(0, BIG, BIG), GAD_F32) == NULL;)
GOOD(zeros_empty_big, "gad_zeros", "empty", "shape [0,2^40]", "an empty tensor",
     SHAPE_IS(gad_zeros(DIMS(0, BIG), GAD_F32), 0, BIG))
GOOD(zeros_rank0, "gad_zeros", "rank 0", "rank 0 with shape NULL", "a scalar 0",
     at(gad_zeros(NULL, 0, GAD_I64), 0) == 0)
TBAD(ones_negdim, "gad_ones", "shape", "shape [-2]", E_SHAPE, "ones", "[-2]",
     gad_ones(DIMS(-2), GAD_F64))
TBAD(ones_dtype, "gad_ones", "dtype", "dtype 8 (not a dtype)", E_DTYPE, "ones", NULL,
     gad_ones(DIMS(2), (gad_dtype_t)8))
TBAD(ones_huge, "gad_ones", "huge", "shape [2^40,2^40]", E_SHAPE, "ones", "overflows",
     gad_ones(DIMS(BIG, BIG), GAD_I64))
GOOD(ones_empty, "gad_ones", "empty", "shape [0]", "a [0] tensor",
     SHAPE_IS(gad_ones(DIMS(0), GAD_F32), 0))
TBAD(full_i64_nan, "gad_full", "NaN/Inf", "i64 with value NaN", E_DOMAIN, "full",
     "nan", gad_full(DIMS(2), GAD_I64, NAN))
TBAD(full_i64_big, "gad_full", "value", "i64 with value 1e19 (outside i64)", E_DOMAIN,
     "full", "1e+19", gad_full(DIMS(2), GAD_I64, 1e19))
TBAD(full_i64_inf, "gad_full", "NaN/Inf", "i64 with value -inf", E_DOMAIN, "full",
     "inf", gad_full(DIMS(2), GAD_I64, -INFINITY))
TBAD(full_negdim, "gad_full", "shape", "shape [3,-3]", E_SHAPE, "full", "[3,-3]",
     gad_full(DIMS(3, -3), GAD_F32, 1))
TBAD(full_dtype, "gad_full", "dtype", "dtype 9 (not a dtype)", E_DTYPE, "full", NULL,
     gad_full(DIMS(2), (gad_dtype_t)9, 1))
TBAD(full_huge, "gad_full", "huge", "shape [2^40,2^40]", E_SHAPE, "full", "overflows",
     gad_full(DIMS(BIG, BIG), GAD_F32, 1))
GOOD(full_f32_nan, "gad_full", "NaN/Inf", "f32 with value NaN", "a tensor of NaN",
     all_nan(gad_full(DIMS(2, 2), GAD_F32, NAN)))
GOOD(full_i64_trunc, "gad_full", "value", "i64 with value -2.7", "-2 (truncated)",
     at(gad_full(DIMS(1), GAD_I64, -2.7), 0) == -2)
TBAD(scalar_i64_nan, "gad_scalar", "NaN/Inf", "i64 with value NaN", E_DOMAIN, "scalar",
     "nan", gad_scalar(NAN, GAD_I64))
TBAD(scalar_dtype, "gad_scalar", "dtype", "dtype 9 (not a dtype)", E_DTYPE, "scalar",
     NULL, gad_scalar(1, (gad_dtype_t)9))
GOOD(scalar_f64_inf, "gad_scalar", "NaN/Inf", "f64 with value inf", "a scalar inf",
     isinf(at(gad_scalar(INFINITY, GAD_F64), 0)))
GOOD(scalar_f32_nan, "gad_scalar_f32", "NaN/Inf", "value NaN", "a scalar NaN",
     isnan(at(gad_scalar_f32(NAN), 0)))
GOOD(scalar_f64_nan, "gad_scalar_f64", "NaN/Inf", "value -inf", "a scalar -inf",
     at(gad_scalar_f64(-INFINITY), 0) == -INFINITY)
TBAD(zeros_like_null, "gad_zeros_like", "NULL", "t NULL", E_DOMAIN, "zeros_like",
     NULL, gad_zeros_like(NULL))
GOOD(zeros_like_empty, "gad_zeros_like", "empty", "t [0,2]", "a [0,2] tensor",
     SHAPE_IS(gad_zeros_like(F32T(0, 2)), 0, 2))
GOOD(zeros_like_view, "gad_zeros_like", "odd", "t a broadcast view",
     "a contiguous tensor", gad_is_contiguous(gad_zeros_like(bview(2, 3))))
TBAD(full_like_null, "gad_full_like", "NULL", "t NULL", E_DOMAIN, "full_like", NULL,
     gad_full_like(NULL, 1))
TBAD(full_like_i64_nan, "gad_full_like", "NaN/Inf", "i64 t with value NaN", E_DOMAIN,
     "full_like", "nan", gad_full_like(I64T(2), NAN))
GOOD(full_like_rank0, "gad_full_like", "rank 0", "a scalar t", "a scalar",
     at(gad_full_like(S32(1), 3), 0) == 3)

TBAD(arange_step0, "gad_arange", "value", "step 0", E_SHAPE, "arange", "0",
     gad_arange(0, 5, 0, GAD_F32))
TBAD(arange_nan, "gad_arange", "NaN/Inf", "end NaN", E_SHAPE, "arange", "nan",
     gad_arange(0, NAN, 1, GAD_F32))
TBAD(arange_inf, "gad_arange", "NaN/Inf", "end inf", E_SHAPE, "arange", "inf",
     gad_arange(0, INFINITY, 1, GAD_F64))
TBAD(arange_nanstep, "gad_arange", "NaN/Inf", "step NaN", E_SHAPE, "arange", "nan",
     gad_arange(0, 1, NAN, GAD_F64))
TBAD(arange_dtype, "gad_arange", "dtype", "dtype 10 (not a dtype)", E_DTYPE, "arange",
     NULL, gad_arange(0, 5, 1, (gad_dtype_t)10))
TBAD(arange_i64_step, "gad_arange", "value", "i64 with step 0.5 (truncates to 0)",
     E_SHAPE, "arange", "0.5", gad_arange(0, 5, 0.5, GAD_I64))
TBAD(arange_huge, "gad_arange", "huge", "(0, 1e18, 1): 10^18 elements", E_SHAPE,
     "arange", "too many", gad_arange(0, 1e18, 1, GAD_F64))
TBAD(arange_stall, "gad_arange", "value", "f32 (2^24, 2^24 + 4, 0.5): x + step == x in f32",
     E_SHAPE, "arange", "too many", gad_arange(16777216.0, 16777220.0, 0.5, GAD_F32))
GOOD(arange_empty, "gad_arange", "empty", "start >= end with step > 0", "a [0] tensor",
     SHAPE_IS(gad_arange(5, 0, 1, GAD_F32), 0))
GOOD(arange_neg, "gad_arange", "odd", "(3, 0, -1) as i64", "[3, 2, 1]",
     at(gad_arange(3, 0, -1, GAD_I64), 2) == 1)
/* dtypes (issue 29, helper dtype) */
TBAD(arange_bool, "gad_arange", "dtype", "dtype bool", E_DTYPE, "arange", "bool",
     gad_arange(0, 3, 1, GAD_BOOL))
GOOD(arange_f16, "gad_arange", "odd", "(0, 4, 1) as f16", "[0, 1, 2, 3] in f16",
     at(gad_arange(0, 4, 1, GAD_F16), 3) == 3)
TBAD(linspace_i64, "gad_linspace", "dtype", "dtype i64", E_DTYPE, "linspace", "i64",
     gad_linspace(0, 1, 5, GAD_I64))
TBAD(linspace_neg, "gad_linspace", "value", "num -1", E_SHAPE, "linspace", "-1",
     gad_linspace(0, 1, -1, GAD_F32))
TBAD(linspace_huge, "gad_linspace", "huge", "num 2^62", E_SHAPE, "linspace",
     "overflows", gad_linspace(0, 1, (int64_t)1 << 62, GAD_F32))
GOOD(linspace_zero, "gad_linspace", "empty", "num 0", "a [0] tensor",
     SHAPE_IS(gad_linspace(0, 1, 0, GAD_F64), 0))
GOOD(linspace_one, "gad_linspace", "odd", "num 1", "[start]",
     at(gad_linspace(4, 9, 1, GAD_F64), 0) == 4)
GOOD(linspace_nan, "gad_linspace", "NaN/Inf", "end NaN",
     "NaN everywhere, the start too (0 * NaN, as NumPy and PyTorch)",
     all_nan(gad_linspace(0, NAN, 3, GAD_F64)) && all_nan(gad_linspace(0, NAN, 3, GAD_F32)))
/* dtypes (issue 29, helper dtype) */
TBAD(linspace_u8, "gad_linspace", "dtype", "dtype u8", E_DTYPE, "linspace", "u8",
     gad_linspace(0, 1, 3, GAD_U8))
TBAD(eye_neg, "gad_eye", "value", "n = -1", E_SHAPE, "eye", "[-1,-1]",
     gad_eye(-1, GAD_F32))
TBAD(eye_dtype, "gad_eye", "dtype", "dtype 11 (not a dtype)", E_DTYPE, "eye", NULL,
     gad_eye(3, (gad_dtype_t)11))
TBAD(eye_huge, "gad_eye", "huge", "n = 2^40", E_SHAPE, "eye", "overflows",
     gad_eye(BIG, GAD_F64))
GOOD(eye_zero, "gad_eye", "empty", "n = 0", "a [0,0] tensor",
     SHAPE_IS(gad_eye(0, GAD_I64), 0, 0))
TBAD(randn_negdim, "gad_randn", "shape", "shape [-4]", E_SHAPE, "randn", "[-4]",
     gad_randn(DIMS(-4), 1))
TBAD(randn_rank9, "gad_randn", "rank", "rank 9", E_SHAPE, "randn", "rank 9",
     gad_randn(DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1), 1))
TBAD(randn_huge, "gad_randn", "huge", "shape [2^40,2^40]", E_SHAPE, "randn",
     "overflows", gad_randn(DIMS(BIG, BIG), 1))
GOOD(randn_empty, "gad_randn", "empty", "shape [0,5]", "a [0,5] tensor",
     SHAPE_IS(gad_randn(DIMS(0, 5), 1), 0, 5))
GOOD(randn_rank0, "gad_randn", "rank 0", "rank 0 with shape NULL", "a scalar",
     SCALAR_IS(gad_randn(NULL, 0, 7)))

AREA("Random number generators")

ROW(rng_new_nomem, "gad_rng_new", "memory", "the allocator fails", "NULL", E_MEM,
    "rng_new", NULL, 0,
    failing_allocator(1);
    gad_rng *r = gad_rng_new(1);
    failing_allocator(0);
    gad_rng_free(r);
    return r == NULL;)
ROW(rng_new_zero, "gad_rng_new", "odd", "seed 0", "a generator", E_OK, "", NULL, 0,
    gad_rng *r = gad_rng_new(0);
    uint64_t a = gad_rng_next(r), b = gad_rng_next(r);
    gad_rng_free(r);
    return r && a != b;)
ROW(rng_free_null, "gad_rng_free", "NULL", "rng NULL", "nothing (a no-op)", E_OK, "",
    NULL, 0, gad_rng_free(NULL); return 1;)
ROW(rng_seed_null, "gad_rng_seed", "NULL", "rng NULL", "nothing (a no-op)", E_OK, "",
    NULL, 0, gad_rng_seed(NULL, 5); return 1;)
GOOD(rng_next_null, "gad_rng_next", "NULL", "rng NULL", "0", gad_rng_next(NULL) == 0)
GOOD(rng_uniform_null, "gad_rng_uniform", "NULL", "rng NULL", "0",
     gad_rng_uniform(NULL) == 0)
GOOD(rng_normal_null, "gad_rng_normal", "NULL", "rng NULL", "0",
     gad_rng_normal(NULL) == 0)
GOOD(rng_int_null, "gad_rng_int", "NULL", "rng NULL", "lo", gad_rng_int(NULL, 3, 9) == 3)
GOOD(rng_int_empty, "gad_rng_int", "value", "hi <= lo", "lo",
     gad_rng_int(g_rng, 5, 5) == 5 && gad_rng_int(g_rng, 5, -5) == 5)
ROW(rng_int_full, "gad_rng_int", "huge", "the whole range [INT64_MIN, INT64_MAX)",
    "a value in the range", E_OK, "", NULL, 0,
    int64_t v = gad_rng_int(g_rng, INT64_MIN, INT64_MAX);
    return v < INT64_MAX;)
TBAD(rng_ut_null, "gad_rng_uniform_tensor", "NULL", "rng NULL", E_DOMAIN,
     "rng_uniform", NULL, gad_rng_uniform_tensor(NULL, DIMS(2), GAD_F32, 0, 1))
TBAD(rng_ut_dtype, "gad_rng_uniform_tensor", "dtype", "dtype i64", E_DTYPE,
     "rng_uniform", "i64", gad_rng_uniform_tensor(g_rng, DIMS(2), GAD_I64, 0, 1))
TBAD(rng_ut_order, "gad_rng_uniform_tensor", "value", "lo 1 > hi 0", E_DOMAIN,
     "rng_uniform", "1, 0", gad_rng_uniform_tensor(g_rng, DIMS(2), GAD_F32, 1, 0))
TBAD(rng_ut_nan, "gad_rng_uniform_tensor", "NaN/Inf", "lo NaN", E_DOMAIN,
     "rng_uniform", "nan", gad_rng_uniform_tensor(g_rng, DIMS(2), GAD_F32, NAN, 1))
TBAD(rng_ut_inf, "gad_rng_uniform_tensor", "NaN/Inf", "hi inf", E_DOMAIN,
     "rng_uniform", "inf", gad_rng_uniform_tensor(g_rng, DIMS(2), GAD_F64, 0, INFINITY))
TBAD(rng_ut_negdim, "gad_rng_uniform_tensor", "shape", "shape [-1,2]", E_SHAPE,
     "rng_uniform", "[-1,2]", gad_rng_uniform_tensor(g_rng, DIMS(-1, 2), GAD_F32, 0, 1))
TBAD(rng_ut_huge, "gad_rng_uniform_tensor", "huge", "shape [2^40,2^40]", E_SHAPE,
     "rng_uniform", "overflows",
     gad_rng_uniform_tensor(g_rng, DIMS(BIG, BIG), GAD_F32, 0, 1))
GOOD(rng_ut_point, "gad_rng_uniform_tensor", "value", "lo == hi", "lo everywhere",
     at(gad_rng_uniform_tensor(g_rng, DIMS(3), GAD_F64, 2, 2), 2) == 2)
GOOD(rng_ut_empty, "gad_rng_uniform_tensor", "empty", "shape [0]", "a [0] tensor",
     SHAPE_IS(gad_rng_uniform_tensor(g_rng, DIMS(0), GAD_F32, 0, 1), 0))
/* dtypes (issue 29, helper dtype) */
TBAD(rng_uniform_i32, "gad_rng_uniform_tensor", "dtype", "dtype i32", E_DTYPE, "rng_uniform",
     "i32", gad_rng_uniform_tensor(row_rng(), DIMS(2), GAD_I32, 0, 1))
TBAD(rng_nt_null, "gad_rng_normal_tensor", "NULL", "rng NULL", E_DOMAIN, "rng_normal",
     NULL, gad_rng_normal_tensor(NULL, DIMS(2), GAD_F32, 0, 1))
TBAD(rng_nt_dtype, "gad_rng_normal_tensor", "dtype", "dtype i64", E_DTYPE,
     "rng_normal", "i64", gad_rng_normal_tensor(g_rng, DIMS(2), GAD_I64, 0, 1))
TBAD(rng_nt_std, "gad_rng_normal_tensor", "value", "std -1", E_DOMAIN, "rng_normal",
     "-1", gad_rng_normal_tensor(g_rng, DIMS(2), GAD_F32, 0, -1))
TBAD(rng_nt_nan, "gad_rng_normal_tensor", "NaN/Inf", "mean NaN", E_DOMAIN,
     "rng_normal", "nan", gad_rng_normal_tensor(g_rng, DIMS(2), GAD_F32, NAN, 1))
TBAD(rng_nt_huge, "gad_rng_normal_tensor", "huge", "shape [2^40,2^40]", E_SHAPE,
     "rng_normal", "overflows",
     gad_rng_normal_tensor(g_rng, DIMS(BIG, BIG), GAD_F64, 0, 1))
GOOD(rng_nt_std0, "gad_rng_normal_tensor", "value", "std 0", "mean everywhere",
     at(gad_rng_normal_tensor(g_rng, DIMS(2), GAD_F32, 3, 0), 1) == 3)
TBAD(rng_it_null, "gad_rng_int_tensor", "NULL", "rng NULL", E_DOMAIN, "rng_int", NULL,
     gad_rng_int_tensor(NULL, DIMS(2), 0, 5))
TBAD(rng_it_empty, "gad_rng_int_tensor", "value", "hi <= lo ([5, 5))", E_DOMAIN,
     "rng_int", "[5, 5)", gad_rng_int_tensor(g_rng, DIMS(2), 5, 5))
TBAD(rng_it_negdim, "gad_rng_int_tensor", "shape", "shape [-3]", E_SHAPE, "rng_int",
     "[-3]", gad_rng_int_tensor(g_rng, DIMS(-3), 0, 5))
TBAD(rng_it_huge, "gad_rng_int_tensor", "huge", "shape [2^40,2^40]", E_SHAPE,
     "rng_int", "overflows", gad_rng_int_tensor(g_rng, DIMS(BIG, BIG), 0, 5))
GOOD(rng_it_rank0, "gad_rng_int_tensor", "rank 0", "rank 0", "a scalar in range",
     at(gad_rng_int_tensor(g_rng, NULL, 0, 7, 8), 0) == 7)

AREA("Accessors and reading")

GOOD(rank_null, "gad_rank", "NULL", "t NULL", "-1 (no error)", gad_rank(NULL) == -1)
ROW(rank_released, "gad_rank", "released", "t released", "-1", E_DOMAIN, "rank",
    "use of a released tensor", 0, return gad_rank(dead()) == -1;)
GOOD(rank_0, "gad_rank", "rank 0", "a scalar", "0", gad_rank(S32(1)) == 0)
GOOD(shape_null, "gad_shape", "NULL", "t NULL", "NULL (no error)", gad_shape(NULL) == NULL)
GOOD(strides_null, "gad_strides", "NULL", "t NULL", "NULL (no error)",
     gad_strides(NULL) == NULL)
GOOD(strides_bcast, "gad_strides", "odd", "a broadcast view", "0 on stretched axes",
     gad_strides(bview(2, 3))[0] == 0)
GOOD(numel_null, "gad_numel", "NULL", "t NULL", "0 (no error)", gad_numel(NULL) == 0)
GOOD(numel_empty, "gad_numel", "empty", "t [0,2^40]", "0",
     gad_numel(gad_zeros(DIMS(0, BIG), GAD_F32)) == 0)
GOOD(dtype_null, "gad_dtype", "NULL", "t NULL", "GAD_DTYPE_INVALID (no error)",
     gad_dtype(NULL) == GAD_DTYPE_INVALID)
ROW(dim_null, "gad_dim", "NULL", "t NULL", "-1", E_DOMAIN, "dim", NULL, 0,
    return gad_dim(NULL, 0) == -1;)
ROW(dim_axis, "gad_dim", "axis", "axis 2 of a [2,3] tensor", "-1", E_SHAPE, "dim",
    "axis 2", 0, return gad_dim(F32T(2, 3), 2) == -1;)
ROW(dim_negaxis, "gad_dim", "axis", "axis -3 of a [2,3] tensor", "-1", E_SHAPE, "dim",
    "axis -3", 0, return gad_dim(F32T(2, 3), -3) == -1;)
ROW(dim_rank0, "gad_dim", "rank 0", "axis 0 of a scalar", "-1", E_SHAPE, "dim",
    "rank 0", 0, return gad_dim(S32(1), 0) == -1;)
GOOD(dim_neg_ok, "gad_dim", "axis", "axis -1 of a [2,3] tensor", "3",
     gad_dim(F32T(2, 3), -1) == 3)
GOOD(is_contig_null, "gad_is_contiguous", "NULL", "t NULL", "0",
     gad_is_contiguous(NULL) == 0)
GOOD(is_contig_bcast, "gad_is_contiguous", "odd", "a broadcast view [2,3] of one element",
     "0", gad_is_contiguous(bview(2, 3)) == 0)
ROW(item_null, "gad_item", "NULL", "t NULL", "NaN", E_DOMAIN, "item", NULL, 0,
    return isnan(gad_item(NULL));)
ROW(item_released, "gad_item", "released", "t released", "NaN", E_DOMAIN, "item",
    "use of a released tensor", 0, return isnan(gad_item(dead()));)
ROW(item_many, "gad_item", "shape", "t [2,3]", "NaN", E_SHAPE, "item", "[2,3]", 0,
    return isnan(gad_item(F32T(2, 3)));)
ROW(item_empty, "gad_item", "empty", "t [0]", "NaN", E_SHAPE, "item", "[0]", 0,
    return isnan(gad_item(F32T(0)));)
GOOD(item_one, "gad_item", "odd", "t [1,1,1]", "its value", gad_item(F32T(1, 1, 1)) == -0.75)
GOOD(item_nan, "gad_item", "NaN/Inf", "a NaN scalar", "NaN (no error)",
     isnan(gad_item(S32(NAN))))
ROW(read_f32_null, "gad_read_f32", "NULL", "t NULL", "status", E_DOMAIN, "read_f32",
    NULL, 0, float d[4]; return gad_read_f32(NULL, d, 4) == E_DOMAIN;)
ROW(read_f32_small, "gad_read_f32", "shape", "n = 5 for a [2,3] tensor", "status",
    E_SHAPE, "read_f32", "[2,3]", 0,
    float d[6]; return gad_read_f32(F32T(2, 3), d, 5) == E_SHAPE;)
ROW(read_f32_nodst, "gad_read_f32", "NULL", "dst NULL", "status", E_DOMAIN,
    "read_f32", "NULL", 0, return gad_read_f32(F32T(2), NULL, 2) == E_DOMAIN;)
GOOD(read_f32_empty, "gad_read_f32", "empty", "a [0] tensor into dst NULL, n = 0",
     "GAD_OK", gad_read_f32(F32T(0), NULL, 0) == GAD_OK)
/* dtypes (issue 29, helper dtype) */
SBAD(read_f32_short_bf16, "gad_read_f32", "shape", "bf16 [3] into 2 floats", E_SHAPE,
     "read_f32", "2", gad_read_f32(gad_cast(F32T(3), GAD_BF16), (float[2]){0}, 2))
ROW(read_f64_null, "gad_read_f64", "NULL", "t NULL", "status", E_DOMAIN, "read_f64",
    NULL, 0, double d[4]; return gad_read_f64(NULL, d, 4) == E_DOMAIN;)
ROW(read_f64_small, "gad_read_f64", "shape", "n = 0 for a [2] tensor", "status",
    E_SHAPE, "read_f64", "[2]", 0,
    double d[2]; return gad_read_f64(F64T(2), d, 0) == E_SHAPE;)
ROW(read_f64_view, "gad_read_f64", "odd", "a non-contiguous view, i64 to f64",
    "GAD_OK, values in row-major order", E_OK, "", NULL, 0,
    double d[6] = {0};
    gad_tensor *t = gad_transpose(I64T(2, 3));
    return gad_read_f64(t, d, 6) == GAD_OK && d[1] == 1 && d[2] == 1;)
ROW(read_i64_null, "gad_read_i64", "NULL", "t NULL", "status", E_DOMAIN, "read_i64",
    NULL, 0, int64_t d[4]; return gad_read_i64(NULL, d, 4) == E_DOMAIN;)
ROW(read_i64_small, "gad_read_i64", "shape", "n = 1 for a [2,2] tensor", "status",
    E_SHAPE, "read_i64", "[2,2]", 0,
    int64_t d[4]; return gad_read_i64(I64T(2, 2), d, 1) == E_SHAPE;)
ROW(read_i64_nan, "gad_read_i64", "NaN/Inf", "f32 NaN, inf and -inf",
    "GAD_OK: 0, INT64_MAX, INT64_MIN", E_OK, "", NULL, 0,
    int64_t d[3] = {7, 7, 7};
    return gad_read_i64(VALS32(NAN, INFINITY, -INFINITY), d, 3) == GAD_OK &&
           d[0] == 0 && d[1] == INT64_MAX && d[2] == INT64_MIN;)
ROW(read_bool_null, "gad_read_bool", "NULL", "t NULL", "status", E_DOMAIN, "read_bool",
    NULL, 0, uint8_t d[4]; return gad_read_bool(NULL, d, 4) == E_DOMAIN;)
ROW(read_bool_small, "gad_read_bool", "shape", "n = 1 for a [2,2] tensor", "status",
    E_SHAPE, "read_bool", "[2,2]", 0,
    uint8_t d[4]; return gad_read_bool(I64T(2, 2), d, 1) == E_SHAPE;)
ROW(read_bool_nan, "gad_read_bool", "NaN/Inf", "f32 NaN, -0 and -inf",
    "GAD_OK: 1, 0, 1 (nonzero is true)", E_OK, "", NULL, 0,
    uint8_t d[3] = {7, 7, 7};
    return gad_read_bool(VALS32(NAN, -0.0f, -INFINITY), d, 3) == GAD_OK &&
           d[0] == 1 && d[1] == 0 && d[2] == 1;)
SBAD(write_f32_null, "gad_write_f32", "NULL", "t NULL", E_DOMAIN, "write_f32", NULL,
     gad_write_f32(NULL, (const float[]){1}, 1))
SBAD(write_f32_released, "gad_write_f32", "released", "t released", E_DOMAIN, "write_f32",
     "use of a released tensor", gad_write_f32(dead(), (const float[6]){0}, 6))
SBAD(write_f32_dtype, "gad_write_f32", "dtype", "an f64 tensor", E_DTYPE, "write_f32",
     "is f64, the values f32", gad_write_f32(F64T(2), (const float[]){1, 2}, 2))
SBAD(write_f32_count, "gad_write_f32", "shape", "5 values for a [2,3] tensor", E_SHAPE,
     "write_f32", "5 values for a tensor [2,3] of 6",
     gad_write_f32(F32T(2, 3), (const float[5]){0}, 5))
SBAD(write_f32_nosrc, "gad_write_f32", "NULL", "src NULL for 2 values", E_DOMAIN, "write_f32",
     "NULL", gad_write_f32(F32T(2), NULL, 2))
SBAD(write_f32_tracked, "gad_write_f32", "odd", "the output of a tracked op", E_UNIQUE,
     "write_f32", "tracked op", gad_write_f32(tracked(), (const float[6]){0}, 6))
GOOD(write_f32_empty, "gad_write_f32", "empty", "a [0] tensor from src NULL, n = 0", "GAD_OK",
     gad_write_f32(F32T(0), NULL, 0) == GAD_OK)
ROW(write_f32_view, "gad_write_f32", "odd", "a transposed view of a tensor",
    "GAD_OK; the view packed and written, the tensor keeps its values", E_OK, "", NULL, 0,
    gad_tensor *a = VALS32(1, 2, 3, 4);
    gad_tensor *v = gad_transpose(gad_reshape(a, (const int64_t[]){2, 2}, 2));
    return gad_write_f32(v, (const float[]){5, 6, 7, 8}, 4) == GAD_OK && at(v, 1) == 6 &&
           at(a, 1) == 2 && gad_is_contiguous(v);)
SBAD(write_f64_count, "gad_write_f64", "shape", "3 values for a [2] tensor", E_SHAPE,
     "write_f64", "3 values", gad_write_f64(F64T(2), (const double[3]){0}, 3))
ROW(write_f64_values, "gad_write_f64", "odd", "NaN and -0.0 into an f64 [2] tensor",
    "GAD_OK; the bits as given", E_OK, "", NULL, 0,
    gad_tensor *t = F64T(2);
    double d[2];
    return gad_write_f64(t, (const double[]){NAN, -0.0}, 2) == GAD_OK &&
           gad_read_f64(t, d, 2) == GAD_OK && isnan(d[0]) && d[1] == 0 && signbit(d[1]);)
SBAD(write_i64_dtype, "gad_write_i64", "dtype", "an f32 tensor", E_DTYPE, "write_i64",
     "is f32, the values i64", gad_write_i64(F32T(1), (const int64_t[]){1}, 1))
ROW(write_i64_limits, "gad_write_i64", "huge", "INT64_MIN and INT64_MAX", "GAD_OK; exact",
    E_OK, "", NULL, 0,
    gad_tensor *t = I64T(2);
    int64_t d[2];
    return gad_write_i64(t, (const int64_t[]){INT64_MIN, INT64_MAX}, 2) == GAD_OK &&
           gad_read_i64(t, d, 2) == GAD_OK && d[0] == INT64_MIN && d[1] == INT64_MAX;)
TBAD(data_null, "gad_data", "NULL", "t NULL", E_DOMAIN, "data", NULL, gad_data(NULL))
TBAD(data_released, "gad_data", "released", "t released", E_DOMAIN, "data",
     "use of a released tensor", gad_data(dead()))
TBAD(data_noncontig, "gad_data", "shape", "a non-contiguous [3,2] view", E_SHAPE,
     "data", "[3,2]", gad_data(noncontig()))
TBAD(data_bcast, "gad_data", "shape", "a broadcast view [2,3]", E_SHAPE, "data",
     "[2,3]", gad_data(bview(2, 3)))
GOOD(data_empty, "gad_data", "empty", "a [0] tensor", "a pointer (not NULL)",
     gad_data(F32T(0)) != NULL)
TBAD(data_mut_null, "gad_data_mut", "NULL", "t NULL", E_DOMAIN, "data_mut", NULL,
     gad_data_mut(NULL))
TBAD(data_mut_tracked, "gad_data_mut", "tracked", "t the output of a tracked op",
     E_UNIQUE, "data_mut", "mul_scalar", gad_data_mut(tracked()))
ROW(data_mut_leaf, "gad_data_mut", "non-leaf", "t a leaf (allowed)",
    "a pointer; t stays a leaf", E_OK, "", NULL, 0,
    gad_tensor *t = LEAF32(2);
    float *p = gad_data_mut(t);
    if (p) p[0] = 5;
    return p && gad_is_leaf(t) && at(t, 0) == 5;)
ROW(data_mut_shared, "gad_data_mut", "odd", "t a view sharing storage",
    "a pointer to a private copy; the other tensor keeps its values", E_OK, "", NULL, 0,
    gad_tensor *a = F32T(2, 3);
    gad_tensor *v = gad_transpose(a);
    float *p = gad_data_mut(v);
    if (p) p[0] = 9;
    return p && at(a, 0) == -0.75 && at(v, 0) == 9;)
ROW(data_mut_bcast, "gad_data_mut", "odd", "t a broadcast view [2,3]",
    "a pointer to 6 private elements", E_OK, "", NULL, 0,
    gad_tensor *v = bview(2, 3);
    float *p = gad_data_mut(v);
    if (p) p[5] = 4;
    return p && at(v, 5) == 4 && at(v, 0) == 1 && gad_is_contiguous(v);)
GOOD(is_unique_null, "gad_is_unique", "NULL", "t NULL", "0", gad_is_unique(NULL) == 0)
GOOD(is_unique_view, "gad_is_unique", "odd", "a tensor with a view alive", "0",
     gad_is_unique(gad_transpose(F32T(2, 2))) == 0)
ROW(fprint_null, "gad_fprint", "NULL", "t NULL", "writes \"tensor(NULL)\"", E_OK, "",
    NULL, 0,
    char buf[64];
    return fprint_text(NULL, buf, sizeof buf) && strcmp(buf, "tensor(NULL)\n") == 0;)
ROW(fprint_nullfile, "gad_fprint", "NULL", "f NULL", "nothing (must not crash)",
    E_IO, "fprint", NULL, ISOLATE,
    gad_fprint(NULL, F32T(2));
    return 1;)
ROW(fprint_empty, "gad_fprint", "empty", "t [2,0]", "writes the shape and dtype",
    E_OK, "", NULL, 0,
    char buf[128];
    return fprint_text(F32T(2, 0), buf, sizeof buf) && strstr(buf, "shape=[2,0]");)
ROW(fprint_huge, "gad_fprint", "huge", "a broadcast view [2^20,2^20]",
    "a summary with \"...\"", E_OK, "", NULL, 0,
    char buf[2048];
    return fprint_text(bview((int64_t)1 << 20, (int64_t)1 << 20), buf, sizeof buf) &&
           strstr(buf, "...");)
ROW(fprint_nan, "gad_fprint", "NaN/Inf", "t holding NaN and -inf", "writes nan and -inf",
    E_OK, "", NULL, 0,
    char buf[128];
    return fprint_text(VALS32(NAN, -INFINITY), buf, sizeof buf) && strstr(buf, "nan") &&
           strstr(buf, "-inf");)
ROW(print_null, "gad_print", "NULL", "t NULL", "prints \"tensor(NULL)\"", E_OK, "",
    NULL, 0, gad_print(NULL); return 1;)
GOOD(snprint_null, "gad_snprint", "NULL", "t NULL", "12 (the length of \"tensor(NULL)\")",
     gad_snprint((char[32]){0}, 32, NULL) == 12)
GOOD(snprint_nobuf, "gad_snprint", "NULL", "buf NULL with cap 0",
     "the length of the repr; nothing written",
     gad_snprint(NULL, 0, S32(1)) == strlen("tensor(1., dtype=f32)"))
ROW(snprint_nobuf_cap, "gad_snprint", "NULL", "buf NULL with cap 10",
    "the length of the repr; nothing written (as snprintf)", E_OK, "", NULL, ISOLATE,
    return gad_snprint(NULL, 10, S32(1)) == strlen("tensor(1., dtype=f32)");)
ROW(snprint_cap1, "gad_snprint", "value", "cap 1", "the full length; buf \"\"",
    E_OK, "", NULL, 0,
    char buf[4] = "xyz";
    return gad_snprint(buf, 1, S32(1)) > 1 && buf[0] == 0 && buf[1] == 'y';)
ROW(shape_format_nobuf, "gad_shape_format", "NULL", "buf NULL, or cap 0",
    "buf; nothing written", E_OK, "", NULL, 0,
    char buf[2] = "x";
    return gad_shape_format(NULL, 0, DIMS(2, 3)) == NULL &&
           gad_shape_format(NULL, 16, DIMS(2, 3)) == NULL &&
           gad_shape_format(buf, 0, DIMS(2, 3)) == buf && buf[0] == 'x';)
GOOD(shape_format_noshape, "gad_shape_format", "NULL", "shape NULL with rank 2",
     "buf, holding \"[rank 2]\"",
     strcmp(gad_shape_format((char[16]){0}, 16, NULL, 2), "[rank 2]") == 0)
ROW(shape_format_cap, "gad_shape_format", "value", "cap 4 for the shape [12,345]",
    "buf, holding \"[12\" (cut to cap - 1 bytes)", E_OK, "", NULL, 0,
    char buf[8]; /* a canary past the cut: bytes beyond cap stay as they were */
    memset(buf, 'x', sizeof buf);
    return gad_shape_format(buf, 4, DIMS(12, 345)) == buf && strcmp(buf, "[12") == 0 &&
           buf[4] == 'x';)
GOOD(shape_format_rank, "gad_shape_format", "rank", "rank 9 or -1",
     "buf, holding \"[rank 9]\" or \"[rank -1]\"",
     strcmp(gad_shape_format((char[16]){0}, 16, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)),
            "[rank 9]") == 0 &&
     strcmp(gad_shape_format((char[16]){0}, 16, NULL, -1), "[rank -1]") == 0)
GOOD(shape_format_rank0, "gad_shape_format", "rank 0", "rank 0, shape NULL", "buf, holding \"[]\"",
     strcmp(gad_shape_format((char[4]){0}, 4, NULL, 0), "[]") == 0)
GOOD(shape_format_huge, "gad_shape_format", "huge", "eight dims of INT64_MAX",
     "the whole text, in GAD_SHAPE_FORMAT_CAP bytes",
     strlen(gad_shape_format((char[GAD_SHAPE_FORMAT_CAP]){0}, GAD_SHAPE_FORMAT_CAP,
                             DIMS(INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX,
                                  INT64_MAX, INT64_MAX, INT64_MAX))) == 8 * 19 + 7 + 2)

AREA("Copies and conversion")

TBAD(contiguous_null, "gad_contiguous", "NULL", "t NULL", E_DOMAIN, "contiguous", NULL,
     gad_contiguous(NULL))
GOOD(contiguous_bcast, "gad_contiguous", "odd", "a broadcast view [2,3] of one element",
     "a packed [2,3] copy", gad_is_contiguous(gad_contiguous(bview(2, 3))))
GOOD(contiguous_empty, "gad_contiguous", "empty", "a [3,0] view (a [0,3] tensor transposed)",
     "a contiguous [3,0] tensor",
     SHAPE_IS(gad_contiguous(gad_transpose(F32T(0, 3))), 3, 0) &&
     gad_is_contiguous(gad_contiguous(gad_transpose(F32T(0, 3)))))
ROW(contiguous_nomem, "gad_contiguous", "memory", "a non-contiguous view; the allocator fails",
    "NULL", E_MEM, "contiguous", NULL, 0,
    gad_tensor *v = noncontig();
    failing_allocator(1);
    gad_tensor *c = gad_contiguous(v);
    failing_allocator(0);
    return v && c == NULL;)
TBAD(clone_null, "gad_clone", "NULL", "t NULL", E_DOMAIN, "clone", NULL, gad_clone(NULL))
GOOD(clone_rank0, "gad_clone", "rank 0", "a scalar", "a scalar", SCALAR_IS(gad_clone(S64(2))))
TBAD(cast_null, "gad_cast", "NULL", "t NULL", E_DOMAIN, "cast", NULL,
     gad_cast(NULL, GAD_F32))
TBAD(cast_dtype, "gad_cast", "dtype", "dtype 12 (not a dtype)", E_DTYPE, "cast", "12",
     gad_cast(F32T(2), (gad_dtype_t)12))
TBAD(cast_invalid, "gad_cast", "dtype", "GAD_DTYPE_INVALID", E_DTYPE, "cast", "-1",
     gad_cast(F32T(2), GAD_DTYPE_INVALID))
GOOD(cast_nan, "gad_cast", "NaN/Inf", "f32 NaN, inf, -inf to i64",
     "0, INT64_MAX, INT64_MIN (no error)",
     at(gad_cast(VALS32(NAN, INFINITY, -INFINITY), GAD_I64), 0) == 0)
GOOD(cast_empty, "gad_cast", "empty", "a [0] tensor", "a [0] tensor",
     SHAPE_IS(gad_cast(F32T(0), GAD_F64), 0))
/* dtypes (issue 29, helper dtype) */
GOOD(cast_f16_overflow, "gad_cast", "huge", "f32 1e6 to f16", "inf (rounds past 65504)",
     isinf(gad_item(gad_cast(gad_scalar_f32(1e6f), GAD_F16))))
GOOD(cast_nan_u8, "gad_cast", "NaN/Inf", "f16 NaN to u8, i32", "0 (saturating casts send NaN to 0)",
     gad_item(gad_cast(gad_cast(gad_scalar_f32(NAN), GAD_F16), GAD_U8)) == 0 &&
         gad_item(gad_cast(gad_cast(gad_scalar_f32(NAN), GAD_BF16), GAD_I32)) == 0)
GOOD(cast_bf16_u8_sat, "gad_cast", "huge", "bf16 -1e30 and 1e30 to u8", "0 and 255 (saturate)",
     gad_item(gad_cast(gad_cast(gad_scalar_f32(-1e30f), GAD_BF16), GAD_U8)) == 0 &&
         gad_item(gad_cast(gad_cast(gad_scalar_f32(1e30f), GAD_BF16), GAD_U8)) == 255)
TBAD(cast_dtype_f16, "gad_cast", "dtype", "f16 to dtype 42", E_DTYPE, "cast", "42",
     gad_cast(gad_cast(gad_scalar_f32(1), GAD_F16), (gad_dtype_t)42))

AREA("Devices")

GOOD(device_count_bad_type, "gad_device_count", "value", "type 7 (not a device type)", "0",
     gad_device_count((gad_device_type)7) == 0 && gad_device_count(GAD_DEVICE_CPU) == 1)
ROW(cuda_missing, "gad_cuda", "value", "index -1, and one past the GPUs found", "-1",
    E_DEVICE, "cuda", "no CUDA device", 0,
    return gad_cuda(-1) == -1 && gad_cuda(gad_device_count(GAD_DEVICE_CUDA)) == -1;)
GOOD(device_type_of_bad, "gad_device_type_of", "value", "device -1 and 99", "-1",
     gad_device_type_of(-1) == -1 && gad_device_type_of(99) == -1)
GOOD(device_name_bad, "gad_device_name", "value", "device -1 and 99", "\"?\"",
     strcmp(gad_device_name(-1), "?") == 0 && strcmp(gad_device_name(99), "?") == 0 &&
     strcmp(gad_device_name(GAD_CPU), "cpu") == 0)
SBAD(device_memory_bad, "gad_device_memory", "value", "device 99", E_DEVICE, "device_memory",
     "99 names no device", gad_device_memory(99, NULL, NULL))
GOOD(device_memory_null_out, "gad_device_memory", "NULL", "both outputs NULL (the CPU)",
     "GAD_OK", gad_device_memory(GAD_CPU, NULL, NULL) == GAD_OK)
SBAD(device_mem_stats_bad, "gad_device_mem_stats", "value", "device 99", E_DEVICE,
     "device_mem_stats", "99 names no device", gad_device_mem_stats(99, NULL, NULL))
GOOD(device_mem_stats_null_out, "gad_device_mem_stats", "NULL", "both outputs NULL (the CPU)",
     "GAD_OK", gad_device_mem_stats(GAD_CPU, NULL, NULL) == GAD_OK)
SBAD(device_sync_bad, "gad_device_sync", "value", "device -1", E_DEVICE, "device_sync",
     "-1 names no device", gad_device_sync(-1))
ROW(device_of_null, "gad_device_of", "NULL", "t NULL", "-1", E_DOMAIN, "device_of", NULL, 0,
    return gad_device_of(NULL) == -1;)
TBAD(to_device_null, "gad_to_device", "NULL", "t NULL", E_DOMAIN, "to_device", NULL,
     gad_to_device(NULL, GAD_CPU))
TBAD(to_device_bad, "gad_to_device", "value", "device 99", E_DEVICE, "to_device",
     "99 names no device", gad_to_device(F32T(2), 99))
ROW(to_device_same, "gad_to_device", "odd", "the device t is on", "t itself", E_OK, "", NULL, 0,
    gad_tensor *t = F32T(2);
    return gad_to_device(t, GAD_CPU) == t;)
ROW(set_default_device_bad, "gad_set_default_device", "value", "device 99", "-1 (unchanged)",
    E_DEVICE, "set_default_device", "99 names no device", 0,
    return gad_set_default_device(99) == -1 && gad_default_device() == GAD_CPU;)
GOOD(default_device_first, "gad_default_device", "odd", "a thread that never set one",
     "GAD_CPU", gad_default_device() == GAD_CPU)
TBAD(device_ptr_null, "gad_device_ptr", "NULL", "t NULL", E_DOMAIN, "device_ptr", NULL,
     gad_device_ptr(NULL))
GOOD(debug_quarantine_twice, "gad_debug_quarantine", "odd", "on (the default), then on again",
     "the previous setting (1)", gad_debug_quarantine(1) == 1 && gad_debug_quarantine(1) == 1)
GOOD(set_tf32_twice, "gad_set_tf32", "odd", "on, then off (no GPU here)", "the previous setting",
     gad_set_tf32(1) >= 0 && gad_set_tf32(0) >= 0)

AREA("Views")

TBAD(reshape_null, "gad_reshape", "NULL", "t NULL", E_DOMAIN, "reshape", NULL,
     gad_reshape(NULL, DIMS(2)))
TBAD(reshape_count, "gad_reshape", "shape", "[2,3] to [4]", E_SHAPE, "reshape", "[2,3]",
     gad_reshape(F32T(2, 3), DIMS(4)))
TBAD(reshape_two_infer, "gad_reshape", "shape", "[2,3] to [-1,-1]", E_SHAPE, "reshape",
     "[-1,-1]", gad_reshape(F32T(2, 3), DIMS(-1, -1)))
TBAD(reshape_negdim, "gad_reshape", "shape", "[2,3] to [-2,-3]", E_SHAPE, "reshape",
     "-2", gad_reshape(F32T(2, 3), DIMS(-2, -3)))
TBAD(reshape_rank9, "gad_reshape", "rank", "to rank 9", E_SHAPE, "reshape", "9",
     gad_reshape(F32T(1), DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)))
TBAD(reshape_noshape, "gad_reshape", "NULL", "shape NULL with rank 2", E_SHAPE,
     "reshape", NULL, gad_reshape(F32T(2), NULL, 2))
TBAD(reshape_huge, "gad_reshape", "huge", "[2,3] to [2^40,2^40]", E_SHAPE, "reshape",
     "[2,3]", gad_reshape(F32T(2, 3), DIMS(BIG, BIG)))
GOOD(reshape_infer_empty, "gad_reshape", "empty", "[0,3] to [2,-1]", "[2,0] (as NumPy)",
     SHAPE_IS(gad_reshape(F32T(0, 3), DIMS(2, -1)), 2, 0))
TBAD(reshape_infer_zero, "gad_reshape", "empty", "[0,3] to [0,-1,2] (3 is not a multiple of 2)",
     E_SHAPE, "reshape", "[0,3]", gad_reshape(F32T(0, 3), DIMS(0, -1, 2)))
GOOD(reshape_empty, "gad_reshape", "empty", "[0,3] to [0,-1]", "[0,3]",
     SHAPE_IS(gad_reshape(F32T(0, 3), DIMS(0, -1)), 0, 3))
GOOD(reshape_rank0, "gad_reshape", "rank 0", "[1,1] to rank 0", "a scalar",
     SCALAR_IS(gad_reshape(F32T(1, 1), NULL, 0)))
GOOD(reshape_noncontig, "gad_reshape", "odd", "a non-contiguous [3,2] view to [6]",
     "a copy [6]", SHAPE_IS(gad_reshape(noncontig(), DIMS(6)), 6))
TBAD(view_null, "gad_view", "NULL", "t NULL", E_DOMAIN, "view", NULL,
     gad_view(NULL, DIMS(2)))
TBAD(view_strides, "gad_view", "shape", "a non-contiguous [3,2] view to [6]", E_SHAPE,
     "view", "[3,2]", gad_view(noncontig(), DIMS(6)))
TBAD(view_count, "gad_view", "shape", "[2,3] to [5]", E_SHAPE, "view", "[2,3]",
     gad_view(F32T(2, 3), DIMS(5)))
GOOD(view_bcast, "gad_view", "odd", "a broadcast [2,3] view to [2,3,1]", "a view",
     SHAPE_IS(gad_view(bview(2, 3), DIMS(2, 3, 1)), 2, 3, 1))
TBAD(flatten_null, "gad_flatten", "NULL", "t NULL", E_DOMAIN, "flatten", NULL,
     gad_flatten(NULL))
GOOD(flatten_rank0, "gad_flatten", "rank 0", "a scalar", "[1]",
     SHAPE_IS(gad_flatten(S32(1)), 1))
GOOD(flatten_empty, "gad_flatten", "empty", "[2,0,3]", "[0]",
     SHAPE_IS(gad_flatten(F32T(2, 0, 3)), 0))
TBAD(permute_null, "gad_permute", "NULL", "t NULL", E_DOMAIN, "permute", NULL,
     gad_permute(NULL, AX(0), 1))
TBAD(permute_count, "gad_permute", "rank", "3 axes for a [2,3] tensor", E_SHAPE,
     "permute", "3 axes", gad_permute(F32T(2, 3), AX(0, 1, 2), 3))
TBAD(permute_dup, "gad_permute", "axis", "axes {0, -2} (the same twice)", E_SHAPE,
     "permute", "duplicate", gad_permute(F32T(2, 3), AX(0, -2), 2))
TBAD(permute_range, "gad_permute", "axis", "axes {0, 5}", E_SHAPE, "permute", "axis 5",
     gad_permute(F32T(2, 3), AX(0, 5), 2))
TBAD(permute_noaxes, "gad_permute", "NULL", "axes NULL with n = 2", E_SHAPE, "permute",
     NULL, gad_permute(F32T(2, 3), NULL, 2))
GOOD(permute_rank0, "gad_permute", "rank 0", "a scalar with n = 0", "a scalar",
     SCALAR_IS(gad_permute(S32(1), NULL, 0)))
TBAD(transpose_null, "gad_transpose", "NULL", "t NULL", E_DOMAIN, "transpose", NULL,
     gad_transpose(NULL))
TBAD(transpose_rank1, "gad_transpose", "rank", "a [3] tensor", E_SHAPE, "transpose",
     "got 1", gad_transpose(F32T(3)))
TBAD(transpose_rank0, "gad_transpose", "rank 0", "a scalar", E_SHAPE, "transpose",
     "got 0", gad_transpose(S32(1)))
GOOD(transpose_empty, "gad_transpose", "empty", "[0,3]", "[3,0]",
     SHAPE_IS(gad_transpose(F32T(0, 3)), 3, 0))
TBAD(swapaxes_null, "gad_swapaxes", "NULL", "t NULL", E_DOMAIN, "swapaxes", NULL,
     gad_swapaxes(NULL, 0, 1))
TBAD(swapaxes_range, "gad_swapaxes", "axis", "axes 0 and 2 of a [2,3] tensor", E_SHAPE,
     "swapaxes", "axis 2", gad_swapaxes(F32T(2, 3), 0, 2))
TBAD(swapaxes_rank0, "gad_swapaxes", "rank 0", "axes 0 and 0 of a scalar", E_SHAPE,
     "swapaxes", "rank 0", gad_swapaxes(S32(1), 0, 0))
GOOD(swapaxes_same, "gad_swapaxes", "odd", "the same axis twice", "t's shape",
     SHAPE_IS(gad_swapaxes(F32T(2, 3), 1, -1), 2, 3))
TBAD(slice_null, "gad_slice", "NULL", "t NULL", E_DOMAIN, "slice", NULL,
     gad_slice(NULL, (gad_range[]){GAD_ALL}, 1))
TBAD(slice_count, "gad_slice", "rank", "3 ranges for a [2,3] tensor", E_SHAPE, "slice",
     "3 ranges", gad_slice(F32T(2, 3), (gad_range[]){GAD_ALL, GAD_ALL, GAD_ALL}, 3))
TBAD(slice_neg_n, "gad_slice", "value", "n = -1", E_SHAPE, "slice", "-1",
     gad_slice(F32T(2, 3), (gad_range[]){GAD_ALL}, -1))
TBAD(slice_noranges, "gad_slice", "NULL", "ranges NULL with n = 1", E_SHAPE, "slice",
     NULL, gad_slice(F32T(2, 3), NULL, 1))
TBAD(slice_step0, "gad_slice", "index", "step 0", E_INDEX, "slice", "step 0",
     gad_slice(F32T(4), (gad_range[]){GAD_RANGE_STEP(0, 4, 0)}, 1))
TBAD(slice_before, "gad_slice", "index", "start -100, step -1 on a [3] tensor",
     E_INDEX, "slice", "negative", gad_slice(F32T(3),
     (gad_range[]){GAD_RANGE_STEP(-100, GAD_NIL, -1)}, 1))
GOOD(slice_empty_rev, "gad_slice", "empty", "[::-1] of a [0] tensor",
     "a [0] tensor (as Python)",
     SHAPE_IS(gad_slice(F32T(0), &GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1), 1), 0))
GOOD(slice_clamp, "gad_slice", "index", "start 10, end 20 on a [3] tensor",
     "a [0] tensor (clamped, as Python)",
     SHAPE_IS(gad_slice(F32T(3), (gad_range[]){GAD_RANGE(10, 20)}, 1), 0))
GOOD(slice_hugestep, "gad_slice", "huge", "step INT64_MAX", "the first element",
     SHAPE_IS(gad_slice(F32T(5), (gad_range[]){GAD_RANGE_STEP(0, 5, INT64_MAX)}, 1), 1))
GOOD(slice_rank0, "gad_slice", "rank 0", "a scalar with n = 0", "a scalar",
     SCALAR_IS(gad_slice(S32(1), NULL, 0)))
TBAD(select_null, "gad_select", "NULL", "t NULL", E_DOMAIN, "select", NULL,
     gad_select(NULL, 0, 0))
TBAD(select_axis, "gad_select", "axis", "axis 2 of a [2,3] tensor", E_SHAPE, "select",
     "axis 2", gad_select(F32T(2, 3), 2, 0))
TBAD(select_index, "gad_select", "index", "index 3 on an axis of 3", E_INDEX, "select",
     "3", gad_select(F32T(2, 3), 1, 3))
TBAD(select_negindex, "gad_select", "index", "index -4 on an axis of 3", E_INDEX,
     "select", "-4", gad_select(F32T(2, 3), 1, -4))
TBAD(select_empty, "gad_select", "empty", "index 0 on an axis of 0", E_INDEX, "select",
     "0", gad_select(F32T(0, 3), 0, 0))
TBAD(select_rank0, "gad_select", "rank 0", "axis 0 of a scalar", E_SHAPE, "select",
     "rank 0", gad_select(S32(1), 0, 0))
GOOD(select_neg, "gad_select", "index", "index -1", "the last row",
     at(gad_select(F32T(2, 3), 0, -1), 0) == 0)
TBAD(squeeze_null, "gad_squeeze", "NULL", "t NULL", E_DOMAIN, "squeeze", NULL,
     gad_squeeze(NULL, 0))
TBAD(squeeze_axis, "gad_squeeze", "axis", "axis 3 of a [2,1,3] tensor", E_SHAPE,
     "squeeze", "axis 3", gad_squeeze(F32T(2, 1, 3), 3))
TBAD(squeeze_size, "gad_squeeze", "shape", "axis 0 of a [2,1,3] tensor (size 2)",
     E_SHAPE, "squeeze", "[2,1,3]", gad_squeeze(F32T(2, 1, 3), 0))
TBAD(squeeze_empty, "gad_squeeze", "empty", "axis 0 of a [0,1] tensor (size 0)",
     E_SHAPE, "squeeze", "[0,1]", gad_squeeze(F32T(0, 1), 0))
GOOD(squeeze_ok, "gad_squeeze", "axis", "axis -2 of a [2,1,3] tensor", "[2,3]",
     SHAPE_IS(gad_squeeze(F32T(2, 1, 3), -2), 2, 3))
TBAD(squeeze_all_null, "gad_squeeze_all", "NULL", "t NULL", E_DOMAIN, "squeeze_all",
     NULL, gad_squeeze_all(NULL))
GOOD(squeeze_all_rank0, "gad_squeeze_all", "rank 0", "a scalar", "a scalar",
     SCALAR_IS(gad_squeeze_all(S32(1))))
GOOD(squeeze_all_ones, "gad_squeeze_all", "odd", "[1,1,1]", "a scalar",
     SCALAR_IS(gad_squeeze_all(F32T(1, 1, 1))))
GOOD(squeeze_all_empty, "gad_squeeze_all", "empty", "[1,0,1]", "[0]",
     SHAPE_IS(gad_squeeze_all(F32T(1, 0, 1)), 0))
TBAD(unsqueeze_null, "gad_unsqueeze", "NULL", "t NULL", E_DOMAIN, "unsqueeze", NULL,
     gad_unsqueeze(NULL, 0))
TBAD(unsqueeze_axis, "gad_unsqueeze", "axis", "axis 3 of a [2] tensor", E_SHAPE,
     "unsqueeze", "axis 3", gad_unsqueeze(F32T(2), 3))
TBAD(unsqueeze_negaxis, "gad_unsqueeze", "axis", "axis -3 of a [2] tensor", E_SHAPE,
     "unsqueeze", "axis -3", gad_unsqueeze(F32T(2), -3))
TBAD(unsqueeze_rank8, "gad_unsqueeze", "rank", "a rank-8 tensor", E_SHAPE, "unsqueeze",
     "rank 8", gad_unsqueeze(F32T(1, 1, 1, 1, 1, 1, 1, 1), 0))
GOOD(unsqueeze_rank0, "gad_unsqueeze", "rank 0", "axis -1 of a scalar", "[1]",
     SHAPE_IS(gad_unsqueeze(S32(1), -1), 1))
TBAD(bcast_null, "gad_broadcast_to", "NULL", "t NULL", E_DOMAIN, "broadcast_to", NULL,
     gad_broadcast_to(NULL, DIMS(2)))
TBAD(bcast_smaller, "gad_broadcast_to", "rank", "[2,3] to [3]", E_SHAPE, "broadcast_to",
     "[2,3]", gad_broadcast_to(F32T(2, 3), DIMS(3)))
TBAD(bcast_incompat, "gad_broadcast_to", "shape", "[2,3] to [2,4]", E_SHAPE,
     "broadcast_to", "[2,4]", gad_broadcast_to(F32T(2, 3), DIMS(2, 4)))
TBAD(bcast_negdim, "gad_broadcast_to", "shape", "[1] to [-1]", E_SHAPE, "broadcast_to",
     "[-1]", gad_broadcast_to(F32T(1), DIMS(-1)))
TBAD(bcast_rank9, "gad_broadcast_to", "rank", "[1] to rank 9", E_SHAPE, "broadcast_to",
     "rank 9", gad_broadcast_to(F32T(1), DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1)))
TBAD(bcast_noshape, "gad_broadcast_to", "NULL", "shape NULL with rank 2", E_SHAPE,
     "broadcast_to", NULL, gad_broadcast_to(F32T(1), NULL, 2))
TBAD(bcast_huge, "gad_broadcast_to", "huge", "[1,1] to [2^40,2^40]", E_SHAPE,
     "broadcast_to", "overflows", gad_broadcast_to(F32T(1, 1), DIMS(BIG, BIG)))
GOOD(bcast_empty, "gad_broadcast_to", "empty", "[1] to [0] (1 stretches to 0)", "[0]",
     SHAPE_IS(gad_broadcast_to(F32T(1), DIMS(0)), 0))
GOOD(bcast_rank0, "gad_broadcast_to", "rank 0", "a scalar to [2,3]", "[2,3]",
     SHAPE_IS(gad_broadcast_to(S32(1), DIMS(2, 3)), 2, 3))
ROW(bcast_empty_huge, "gad_broadcast_to", "huge",
    "[1] to [0,2^40,2^40] (no elements, but its strides overflow)", "NULL", E_SHAPE,
    "broadcast_to", "[0,1099511627776,1099511627776]", ISOLATE,
    return gad_broadcast_to(F32T(1), DIMS(0, BIG, BIG)) == NULL;)
GOOD(bcast_big_ok, "gad_broadcast_to", "huge", "[1] to [2^59] (fits)", "a view",
     SHAPE_IS(gad_broadcast_to(F32T(1), DIMS((int64_t)1 << 59)), (int64_t)1 << 59))
#define SH(...) (const int64_t[]){__VA_ARGS__}
TBAD(flip_null, "gad_flip", "NULL", "x NULL", E_DOMAIN, "flip", NULL, gad_flip(NULL, AX(0), 1))
TBAD(flip_nodims, "gad_flip", "NULL", "dims NULL with ndims = 1", E_SHAPE, "flip", "n = 1",
     gad_flip(F32T(2, 3), NULL, 1))
TBAD(flip_axis, "gad_flip", "axis", "dims {2} for a [2,3] tensor", E_SHAPE, "flip", "axis 2",
     gad_flip(F32T(2, 3), AX(2), 1))
TBAD(flip_dup, "gad_flip", "axis", "dims {1, -1} (the same twice)", E_SHAPE, "flip",
     "duplicate", gad_flip(F32T(2, 3), AX(1, -1), 2))
GOOD(flip_empty, "gad_flip", "empty", "[0,3] along 0", "[0,3]",
     SHAPE_IS(gad_flip(F32T(0, 3), AX(0), 1), 0, 3))
GOOD(flip_rank0, "gad_flip", "rank 0", "a scalar, no dims", "a copy",
     SCALAR_IS(gad_flip(S32(1), NULL, 0)))
GOOD(flip_i64, "gad_flip", "dtype", "i64 {0, 1} along 0", "{1, 0}",
     at(gad_flip(I64T(2), AX(0), 1), 0) == 1)
TBAD(roll_null, "gad_roll", "NULL", "x NULL", E_DOMAIN, "roll", NULL,
     gad_roll(NULL, SH(1), AX(0), 1))
TBAD(roll_noshifts, "gad_roll", "NULL", "shifts NULL", E_SHAPE, "roll", "n = 1",
     gad_roll(F32T(2, 3), NULL, AX(0), 1))
TBAD(roll_none, "gad_roll", "value", "n = 0", E_SHAPE, "roll", "n = 0",
     gad_roll(F32T(2, 3), SH(1), AX(0), 0))
TBAD(roll_flat2, "gad_roll", "shape", "2 shifts, dims NULL", E_SHAPE, "roll", "2 shifts",
     gad_roll(F32T(2, 3), SH(1, 2), NULL, 2))
TBAD(roll_axis, "gad_roll", "axis", "dim -3 for a [2,3] tensor", E_SHAPE, "roll", "axis -3",
     gad_roll(F32T(2, 3), SH(1), AX(-3), 1))
GOOD(roll_empty, "gad_roll", "empty", "[0,3] by 5, along 0 and flattened", "[0,3]",
     SHAPE_IS(gad_roll(F32T(0, 3), SH(5), AX(0), 1), 0, 3) &&
         SHAPE_IS(gad_roll(F32T(0, 3), SH(5), NULL, 1), 0, 3))
GOOD(roll_huge_shift, "gad_roll", "huge", "[3] by INT64_MIN (1 modulo 3)", "x rolled by 1",
     at(gad_roll(F32T(3), SH(INT64_MIN), AX(0), 1), 0) == -0.25)
GOOD(roll_rank0, "gad_roll", "rank 0", "a scalar by 3, dims NULL", "a copy",
     SCALAR_IS(gad_roll(S32(1), SH(3), NULL, 1)))

AREA("Elementwise ops")

#define BINARY_ROWS(name)                                                      \
    TBAD(name##_null_a, "gad_" #name, "NULL", "a NULL", E_DOMAIN, #name, NULL, \
         gad_##name(NULL, F32T(2, 3)))                                         \
    TBAD(name##_null_b, "gad_" #name, "NULL", "b NULL", E_DOMAIN, #name, NULL, \
         gad_##name(F32T(2, 3), NULL))                                         \
    TBAD(name##_released, "gad_" #name, "released", "a released", E_DOMAIN,    \
         #name, "use of a released tensor", gad_##name(dead(), F32T(2, 3)))    \
    TBAD(name##_mixed, "gad_" #name, "dtype", "a f32, b f64", E_DTYPE, #name,  \
         "f32 and f64", gad_##name(F32T(2, 3), F64T(2, 3)))                    \
    TBAD(name##_i64, "gad_" #name, "dtype", "a and b i64", E_DTYPE, #name,     \
         "i64", gad_##name(I64T(2, 3), I64T(2, 3)))                            \
    TBAD(name##_shape, "gad_" #name, "shape", "[2,3] with [4]", E_SHAPE,       \
         #name, "[2,3] vs [4]", gad_##name(F32T(2, 3), F32T(4)))               \
    TBAD(name##_huge, "gad_" #name, "huge",                                    \
         "[2^40,1] with [1,2^40] (broadcast views)", E_SHAPE, #name,           \
         "overflows", gad_##name(bview(BIG, 1), bview(1, BIG)))                \
    GOOD(name##_empty, "gad_" #name, "empty", "[0,3] with [3]", "[0,3]",       \
         SHAPE_IS(gad_##name(F32T(0, 3), F32T(3)), 0, 3))                      \
    GOOD(name##_zero_one, "gad_" #name, "empty", "[0] with [1] (0 against 1)", \
         "[0]", SHAPE_IS(gad_##name(F32T(0), F32T(1)), 0))                     \
    GOOD(name##_rank0, "gad_" #name, "rank 0", "a scalar with [2,3]", "[2,3]", \
         SHAPE_IS(gad_##name(S32(2), F32T(2, 3)), 2, 3))                       \
    GOOD(name##_nan, "gad_" #name, "NaN/Inf", "NaN with a number", "NaN",      \
         all_nan(gad_##name(S32(NAN), S32(1))))

/* every binary elementwise op's rows, from its row in elementwise.def */
#define BINARY(ID, name, ...) BINARY_ROWS(name)
#include "backend/elementwise.def"
GOOD(div_zero, "gad_div", "NaN/Inf", "1 / 0 and 0 / 0", "inf and NaN (no error)",
     isinf(at(gad_div(S32(1), S32(0)), 0)) && isnan(at(gad_div(S32(0), S32(0)), 0)))

#define UNARY_ROWS(name)                                                       \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL))                                                     \
    TBAD(name##_released, "gad_" #name, "released", "x released", E_DOMAIN,    \
         #name, "use of a released tensor", gad_##name(dead()))                \
    TBAD(name##_i64, "gad_" #name, "dtype", "x i64", E_DTYPE, #name, "i64",    \
         gad_##name(I64T(2, 3)))                                               \
    GOOD(name##_empty, "gad_" #name, "empty", "x [0,3]", "[0,3]",              \
         SHAPE_IS(gad_##name(F32T(0, 3)), 0, 3))                               \
    GOOD(name##_rank0, "gad_" #name, "rank 0", "a scalar", "a scalar",         \
         SCALAR_IS(gad_##name(S64(0.5))))                                      \
    GOOD(name##_inf, "gad_" #name, "NaN/Inf", "x holding NaN, inf and -inf",   \
         "the IEEE values (no error)",                                         \
         SHAPE_IS(gad_##name(VALS32(NAN, INFINITY, -INFINITY)), 3))

/* the rows of every elementwise op of one argument, from its row in
 * elementwise.def (a new op there is covered here without an edit); the
 * parametrized ones, which each check their arguments, are below */
#define UNARY_ROWS_ARGS0(name) UNARY_ROWS(name)
#define UNARY_ROWS_ARGS1(name)
#define UNARY_ROWS_ARGS2(name)
#define UNARY(ID, name, args, ...) UNARY_ROWS_ARGS##args(name)
#include "backend/elementwise.def"

GOOD(relu_nan, "gad_relu", "NaN/Inf", "x NaN", "0 (as g)", at(gad_relu(S32(NAN)), 0) == 0)
GOOD(exp_big, "gad_exp", "NaN/Inf", "x 1000", "inf (no error)",
     isinf(at(gad_exp(S64(1000)), 0)))
/* issue 29: f16/bf16 operands (and i32, still refused) */
TBAD(half_add_f64, "gad_add", "dtype", "bf16 [2] and f64 [2]", E_DTYPE, "add", "bf16",
     gad_add(gad_cast(F32T(2), GAD_BF16), F64T(2)))
TBAD(half_mul_f16_bf16, "gad_mul", "dtype", "f16 [2] and bf16 [2]", E_DTYPE, "mul", "f16",
     gad_mul(gad_cast(F32T(2), GAD_F16), gad_cast(F32T(2), GAD_BF16)))
GOOD(half_add_0d_f32, "gad_add", "rank 0", "bf16 [2] and a 0-d f32", "bf16 [2]",
     gad_dtype(gad_add(gad_cast(F32T(2), GAD_BF16), S32(1))) == GAD_BF16)
GOOD(half_add_0d_f16_bf16, "gad_add", "rank 0", "a 0-d f16 and a 0-d bf16", "a 0-d f32",
     gad_dtype(gad_add(gad_cast(S32(1), GAD_F16), gad_cast(S32(1), GAD_BF16))) == GAD_F32)
TBAD(half_exp_i32, "gad_exp", "dtype", "i32 [2]", E_DTYPE, "exp", "i32",
     gad_exp(gad_cast(I64T(2), GAD_I32)))
GOOD(log_neg, "gad_log", "NaN/Inf", "x -1 and 0", "NaN and -inf (no error)",
     isnan(at(gad_log(S32(-1)), 0)) && at(gad_log(S32(0)), 0) == -INFINITY)
GOOD(sqrt_neg, "gad_sqrt", "NaN/Inf", "x -1", "NaN (no error)",
     isnan(at(gad_sqrt(S64(-1)), 0)))
GOOD(sign_nan, "gad_sign", "NaN/Inf", "x NaN and -0", "0 and 0",
     at(gad_sign(S32(NAN)), 0) == 0 && at(gad_sign(S32(-0.0f)), 0) == 0)
GOOD(sigmoid_limits, "gad_sigmoid", "NaN/Inf", "x -inf and inf", "0 and 1",
     at(gad_sigmoid(S32(-INFINITY)), 0) == 0 && at(gad_sigmoid(S32(INFINITY)), 0) == 1)
GOOD(softplus_big, "gad_softplus", "NaN/Inf", "x 1000", "1000 (no overflow)",
     at(gad_softplus(S64(1000)), 0) == 1000)

#define SCALAR_ROWS(name, s)                                                   \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL, s))                                                  \
    TBAD(name##_i64, "gad_" #name, "dtype", "x i64", E_DTYPE, #name, "i64",    \
         gad_##name(I64T(2, 3), s))                                            \
    GOOD(name##_empty, "gad_" #name, "empty", "x [0,3]", "[0,3]",              \
         SHAPE_IS(gad_##name(F32T(0, 3), s), 0, 3))                            \
    GOOD(name##_rank0, "gad_" #name, "rank 0", "a scalar", "a scalar",         \
         SCALAR_IS(gad_##name(S32(0.5f), s)))                                  \
    GOOD(name##_nan, "gad_" #name, "NaN/Inf", "x -2 with the argument NaN",    \
         "NaN (no error)", all_nan(gad_##name(S64(-2), NAN)))

SCALAR_ROWS(mul_scalar, 2.0)
SCALAR_ROWS(add_scalar, 2.0)
SCALAR_ROWS(pow_scalar, 2.0)
GOOD(pow_scalar_neg, "gad_pow_scalar", "NaN/Inf", "(-1)^0.5 and 0^-1", "NaN and inf",
     isnan(at(gad_pow_scalar(S32(-1), 0.5), 0)) && isinf(at(gad_pow_scalar(S32(0), -1), 0)))
SCALAR_ROWS(leaky_relu, 0.1)

TBAD(clamp_null, "gad_clamp", "NULL", "x NULL", E_DOMAIN, "clamp", NULL,
     gad_clamp(NULL, 0, 1))
TBAD(clamp_i64, "gad_clamp", "dtype", "x i64", E_DTYPE, "clamp", "i64",
     gad_clamp(I64T(2), 0, 1))
TBAD(clamp_order, "gad_clamp", "value", "lo 2 > hi 1", E_DOMAIN, "clamp", "[2, 1]",
     gad_clamp(F32T(2), 2, 1))
TBAD(clamp_nan_lo, "gad_clamp", "NaN/Inf", "lo NaN", E_DOMAIN, "clamp", "nan",
     gad_clamp(F32T(2), NAN, 1))
TBAD(clamp_nan_hi, "gad_clamp", "NaN/Inf", "hi NaN", E_DOMAIN, "clamp", "nan",
     gad_clamp(F32T(2), 0, NAN))
GOOD(clamp_inf, "gad_clamp", "NaN/Inf", "lo -inf, hi inf", "x",
     at(gad_clamp(F32T(2), -INFINITY, INFINITY), 0) == -0.75)
GOOD(clamp_equal, "gad_clamp", "value", "lo == hi", "lo everywhere",
     at(gad_clamp(F32T(3), 0.5, 0.5), 2) == 0.5)
GOOD(clamp_empty, "gad_clamp", "empty", "x [0]", "[0]",
     SHAPE_IS(gad_clamp(F32T(0), 0, 1), 0))

/* ---- math family (issue 27): the parametrized ones (elu, hardtanh,
 * gelu_ex; the others come from their rows above), and the special values
 * that are answers, not errors */
SCALAR_ROWS(elu, 1.0)
TBAD(hardtanh_null, "gad_hardtanh", "NULL", "x NULL", E_DOMAIN, "hardtanh", NULL,
     gad_hardtanh(NULL, -1, 1))
TBAD(hardtanh_i64, "gad_hardtanh", "dtype", "x i64", E_DTYPE, "hardtanh", "i64",
     gad_hardtanh(I64T(2), -1, 1))
TBAD(hardtanh_order, "gad_hardtanh", "value", "min_val 2 > max_val 1", E_DOMAIN, "hardtanh",
     "[2, 1]", gad_hardtanh(F32T(2), 2, 1))
TBAD(hardtanh_nan, "gad_hardtanh", "NaN/Inf", "min_val NaN", E_DOMAIN, "hardtanh", "nan",
     gad_hardtanh(F32T(2), NAN, 1))
GOOD(hardtanh_equal, "gad_hardtanh", "value", "min_val == max_val", "that value everywhere",
     at(gad_hardtanh(F32T(3), 0.5, 0.5), 2) == 0.5)
GOOD(hardtanh_empty, "gad_hardtanh", "empty", "x [0]", "[0]",
     SHAPE_IS(gad_hardtanh(F32T(0), -1, 1), 0))
TBAD(gelu_ex_null, "gad_gelu_ex", "NULL", "x NULL", E_DOMAIN, "gelu_ex", NULL,
     gad_gelu_ex(NULL, "none"))
TBAD(gelu_ex_mode, "gad_gelu_ex", "value", "approximate \"erf\"", E_DOMAIN, "gelu_ex",
     "\"erf\"", gad_gelu_ex(F32T(2), "erf"))
GOOD(gelu_ex_default, "gad_gelu_ex", "NULL", "approximate NULL", "the exact form",
     at(gad_gelu_ex(S64(1), NULL), 0) == at(gad_gelu_erf(S64(1)), 0))
GOOD(gelu_ex_tanh, "gad_gelu_ex", "value", "approximate \"tanh\"", "gad_gelu",
     at(gad_gelu_ex(S64(1), "tanh"), 0) == at(gad_gelu(S64(1)), 0))
TBAD(gelu_ex_i64, "gad_gelu_ex", "dtype", "x i64", E_DTYPE, "gelu_ex", "i64",
     gad_gelu_ex(I64T(2, 3), "tanh"))
GOOD(gelu_ex_empty, "gad_gelu_ex", "empty", "x [0,3]", "[0,3]",
     SHAPE_IS(gad_gelu_ex(F32T(0, 3), "none"), 0, 3))
GOOD(gelu_ex_nan, "gad_gelu_ex", "NaN/Inf", "x NaN, either form", "NaN",
     isnan(at(gad_gelu_ex(S64(NAN), "none"), 0)) && isnan(at(gad_gelu_ex(S64(NAN), "tanh"), 0)))
GOOD(log1p_edges, "gad_log1p", "NaN/Inf", "x -1 and -2", "-inf and NaN (no error)",
     at(gad_log1p(S32(-1)), 0) == -INFINITY && isnan(at(gad_log1p(S32(-2)), 0)))
GOOD(asin_out, "gad_asin", "NaN/Inf", "x 2", "NaN (no error)", isnan(at(gad_asin(S32(2)), 0)))
GOOD(sin_huge, "gad_sin", "NaN/Inf", "x inf and 1e30", "NaN and sin(1e30)",
     isnan(at(gad_sin(S32(INFINITY)), 0)) &&
         at(gad_sin(S32(1e30f)), 0) == (float)sin((double)1e30f))
GOOD(pow_zero, "gad_pow", "NaN/Inf", "0^-1, (-8)^(1/3), NaN^0", "inf, NaN, 1 (IEEE)",
     at(gad_pow(S32(0), S32(-1)), 0) == INFINITY &&
         isnan(at(gad_pow(S32(-8), S32(1.0f / 3)), 0)) && at(gad_pow(S32(NAN), S32(0)), 0) == 1)
GOOD(atan2_zeros, "gad_atan2", "NaN/Inf", "atan2(0, -0)", "pi (IEEE)",
     fabs(at(gad_atan2(S64(0), S64(-0.0)), 0) - 3.141592653589793) < 1e-15)

AREA("Comparisons and selection")

/* a op b: NULL, shapes, mixed dtypes, NaN, empty, rank 0 (nan: NaN op NaN) */
#define CMP_ROWS(name, nan)                                                    \
    TBAD(name##_null, "gad_" #name, "NULL", "b NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(F32T(2), NULL))                                            \
    TBAD(name##_released, "gad_" #name, "released", "a released", E_DOMAIN,    \
         #name, "use of a released tensor", gad_##name(dead(), F32T(2)))        \
    TBAD(name##_shape, "gad_" #name, "shape", "[2,3] and [4]", E_SHAPE, #name, \
         "[2,3]", gad_##name(F32T(2, 3), F32T(4)))                             \
    TBAD(name##_dtype, "gad_" #name, "dtype", "f32 [2] and f64 [2]", E_DTYPE,  \
         #name, "f32", gad_##name(F32T(2), F64T(2)))                           \
    GOOD(name##_nan, "gad_" #name, "NaN/Inf", "NaN and NaN", #nan,             \
         at(gad_##name(VALS32(NAN), VALS32(NAN)), 0) == (nan))                  \
    GOOD(name##_empty, "gad_" #name, "empty", "[0,3] and [3]", "a bool [0,3]", \
         SHAPE_IS(gad_##name(F32T(0, 3), F32T(3)), 0, 3) &&                    \
             gad_dtype(gad_##name(F32T(0, 3), F32T(3))) == GAD_BOOL)            \
    GOOD(name##_rank0, "gad_" #name, "rank 0", "f32 [2] and a 0-d f64",        \
         "bool [2] (the 0-d f64 compares as f32)",                             \
         SHAPE_IS(gad_##name(F32T(2), S64(0.25)), 2))
CMP_ROWS(eq, 0)
CMP_ROWS(ne, 1)
CMP_ROWS(lt, 0)
CMP_ROWS(le, 0)
CMP_ROWS(gt, 0)
CMP_ROWS(ge, 0)
GOOD(eq_bool, "gad_eq", "odd", "bool [2] and bool [2]", "0/1 compared",
     at(gad_eq(BOOLT(2), BOOLT(2)), 1) == 1)
GOOD(lt_i64_0d_float, "gad_lt", "rank 0", "i64 [2] and a 0-d f64 0.5",
     "[1, 0] (compared in f64, result_type)",
     at(gad_lt(I64T(2), S64(0.5)), 0) == 1 && at(gad_lt(I64T(2), S64(0.5)), 1) == 0)

/* x op s (nan: x NaN against 0; snan: 1 against a NaN scalar) */
#define SCMP_ROWS(name, nan, snan)                                             \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL, 0))                                                  \
    GOOD(name##_nan, "gad_" #name, "NaN/Inf", "x NaN, s 0; x 1, s NaN",        \
         #nan "; " #snan,                                                      \
         at(gad_##name(VALS32(NAN), 0), 0) == (nan) &&                         \
             at(gad_##name(VALS32(1), NAN), 0) == (snan))                      \
    GOOD(name##_empty, "gad_" #name, "empty", "x [0]", "a bool [0]",           \
         SHAPE_IS(gad_##name(F32T(0), 1), 0))                                  \
    GOOD(name##_frac, "gad_" #name, "odd", "i64 x [0, 1] and s 0.5",            \
         "compared in f32 (PyTorch's type for an int tensor and a float)",     \
         SHAPE_IS(gad_##name(I64T(2), 0.5), 2))
SCMP_ROWS(eq_scalar, 0, 0)
SCMP_ROWS(ne_scalar, 1, 1)
SCMP_ROWS(lt_scalar, 0, 0)
SCMP_ROWS(le_scalar, 0, 0)
SCMP_ROWS(gt_scalar, 0, 0)
SCMP_ROWS(ge_scalar, 0, 0)
GOOD(eq_scalar_f32_round, "gad_eq_scalar", "odd", "f32 0.1f == 0.1",
     "true (s rounded to f32 first, as PyTorch)", at(gad_eq_scalar(VALS32(0.1f), 0.1), 0) == 1)
GOOD(lt_scalar_bool, "gad_lt_scalar", "odd", "bool [0, 1] < 256 and < -1",
     "true, true; false, false (compared as integers)",
     at(gad_lt_scalar(BOOLT(2), 256), 1) == 1 && at(gad_lt_scalar(BOOLT(2), -1), 0) == 0)
GOOD(eq_scalar_i64_big, "gad_eq_scalar", "value", "i64 2^53 + 1 == 2^53",
     "false (an integral s compares exactly, not in f64)",
     at(gad_eq_scalar(IDX(9007199254740993), 9007199254740992.0), 0) == 0)

#define LOGICAL_ROWS(name, nan)                                                \
    TBAD(name##_null, "gad_" #name, "NULL", "a NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL, BOOLT(2)))                                           \
    TBAD(name##_shape, "gad_" #name, "shape", "[2,3] and [4]", E_SHAPE, #name, \
         "[2,3]", gad_##name(BOOLT(2, 3), F32T(4)))                            \
    GOOD(name##_nan, "gad_" #name, "NaN/Inf", "NaN and 1 (f32 and i64)", #nan, \
         at(gad_##name(VALS32(NAN), IDX(1)), 0) == (nan))                       \
    GOOD(name##_empty, "gad_" #name, "empty", "[0,2] and [2]", "a bool [0,2]", \
         SHAPE_IS(gad_##name(F32T(0, 2), BOOLT(2)), 0, 2))
LOGICAL_ROWS(logical_and, 1)
LOGICAL_ROWS(logical_or, 1)
LOGICAL_ROWS(logical_xor, 0)
TBAD(logical_not_null, "gad_logical_not", "NULL", "x NULL", E_DOMAIN, "logical_not", NULL,
     gad_logical_not(NULL))
GOOD(logical_not_nan, "gad_logical_not", "NaN/Inf", "NaN, -0", "false, true",
     at(gad_logical_not(VALS32(NAN, -0.0f)), 0) == 0 &&
     at(gad_logical_not(VALS32(NAN, -0.0f)), 1) == 1)
GOOD(logical_not_empty, "gad_logical_not", "empty", "x [0,3]", "a bool [0,3]",
     SHAPE_IS(gad_logical_not(F32T(0, 3)), 0, 3))

#define ANYALL_ROWS(name, empty)                                               \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL, AX(0), 1, 0))                                        \
    TBAD(name##_axis, "gad_" #name, "axis", "axis 2 of a [2,3] tensor",        \
         E_SHAPE, #name, "2", gad_##name(BOOLT(2, 3), AX(2), 1, 0))            \
    TBAD(name##_dup, "gad_" #name, "axis", "axes 1 and -1 of a [2,3] tensor",  \
         E_SHAPE, #name, NULL, gad_##name(BOOLT(2, 3), AX(1, -1), 2, 0))       \
    GOOD(name##_empty, "gad_" #name, "empty", "axis 1 of a [2,0] tensor",      \
         "[2] of " #empty, SHAPE_IS(gad_##name(BOOLT(2, 0), AX(1), 1, 0), 2) &&  \
             at(gad_##name(BOOLT(2, 0), AX(1), 1, 0), 1) == (empty))            \
    GOOD(name##_nan, "gad_" #name, "NaN/Inf", "a row [NaN, NaN]", "true",      \
         at(gad_##name(VALS32(NAN, NAN), AX(0), 1, 0), 0) == 1)                 \
    GOOD(name##_none, "gad_" #name, "odd", "no axis (n = 0) of f32 [3]",       \
         "x != 0, bool [3]", SHAPE_IS(gad_##name(F32T(3), NULL, 0, 0), 3))      \
    GOOD(name##_keep, "gad_" #name, "odd", "axes 0, 2 of [2,3,4], keepdims",   \
         "[1,3,1]", SHAPE_IS(gad_##name(F32T(2, 3, 4), AX(0, 2), 2, 1), 1, 3, 1))
ANYALL_ROWS(any, 0)
ANYALL_ROWS(all, 1)
TBAD(any_all_null, "gad_any_all", "NULL", "x NULL", E_DOMAIN, "any_all", NULL,
     gad_any_all(NULL))
GOOD(any_all_empty, "gad_any_all", "empty", "x [0,3]", "false (0-d)",
     SCALAR_IS(gad_any_all(F32T(0, 3))) && at(gad_any_all(F32T(0, 3)), 0) == 0)
GOOD(any_all_rank0, "gad_any_all", "rank 0", "a 0-d NaN", "true",
     at(gad_any_all(S32(NAN)), 0) == 1)
TBAD(all_all_null, "gad_all_all", "NULL", "x NULL", E_DOMAIN, "all_all", NULL,
     gad_all_all(NULL))
GOOD(all_all_empty, "gad_all_all", "empty", "x [0,3]", "true (0-d)",
     SCALAR_IS(gad_all_all(F32T(0, 3))) && at(gad_all_all(F32T(0, 3)), 0) == 1)
GOOD(all_all_rank0, "gad_all_all", "rank 0", "a 0-d 0", "false",
     at(gad_all_all(S64(0)), 0) == 0)
GOOD(all_all_nan, "gad_all_all", "NaN/Inf", "a 0-d NaN", "true (NaN is not 0)",
     at(gad_all_all(S64(NAN)), 0) == 1)

#define TEST_ROWS(name, a, b, c)                                               \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL))                                                     \
    GOOD(name##_nan, "gad_" #name, "NaN/Inf", "NaN, -inf, 1", #a ", " #b ", " #c, \
         at(gad_##name(VALS32(NAN, -INFINITY, 1)), 0) == (a) &&                \
             at(gad_##name(VALS32(NAN, -INFINITY, 1)), 1) == (b) &&            \
             at(gad_##name(VALS32(NAN, -INFINITY, 1)), 2) == (c))              \
    GOOD(name##_empty, "gad_" #name, "empty", "x [0]", "a bool [0]",           \
         SHAPE_IS(gad_##name(F32T(0)), 0))                                     \
    GOOD(name##_i64, "gad_" #name, "dtype", "i64 x", "never NaN or infinite",  \
         at(gad_##name(I64T(2)), 0) == (c))
TEST_ROWS(isnan, 1, 0, 0)
TEST_ROWS(isinf, 0, 1, 0)
TEST_ROWS(isfinite, 0, 0, 1)

TBAD(where_null, "gad_where", "NULL", "cond NULL", E_DOMAIN, "where", NULL,
     gad_where(NULL, F32T(2), F32T(2)))
TBAD(where_released, "gad_where", "released", "b released", E_DOMAIN, "where",
     "use of a released tensor", gad_where(BOOLT(2), F32T(2), dead()))
TBAD(where_cond_dtype, "gad_where", "dtype", "cond f32", E_DTYPE, "where", "cond must be bool",
     gad_where(F32T(2), F32T(2), F32T(2)))
TBAD(where_mixed, "gad_where", "dtype", "a f32 [2], b f64 [2]", E_DTYPE, "where", "f64",
     gad_where(BOOLT(2), F32T(2), F64T(2)))
TBAD(where_shape, "gad_where", "shape", "cond [3], a [2]", E_SHAPE, "where", "[3]",
     gad_where(BOOLT(3), F32T(2), F32T(2)))
GOOD(where_nan, "gad_where", "NaN/Inf", "a NaN where cond holds", "NaN (moved, not computed)",
     isnan(at(gad_where(gad_ne_scalar(IDX(1), 0), VALS32(NAN), VALS32(0)), 0)))
GOOD(where_empty, "gad_where", "empty", "cond [0,2], a [2], b 0-d", "[0,2]",
     SHAPE_IS(gad_where(BOOLT(0, 2), F32T(2), S32(1)), 0, 2))
GOOD(where_rank0, "gad_where", "rank 0", "a f32 [2], b a 0-d f64", "f32 [2]",
     gad_dtype(gad_where(BOOLT(2), F32T(2), S64(1))) == GAD_F32)

TBAD(masked_fill_null, "gad_masked_fill", "NULL", "mask NULL", E_DOMAIN, "masked_fill", NULL,
     gad_masked_fill(F32T(2), NULL, 0))
TBAD(masked_fill_dtype, "gad_masked_fill", "dtype", "mask i64", E_DTYPE, "masked_fill",
     "mask must be bool", gad_masked_fill(F32T(2), I64T(2), 0))
TBAD(masked_fill_shape, "gad_masked_fill", "shape", "x [2,3], mask [2]", E_SHAPE,
     "masked_fill", "[2,3]", gad_masked_fill(F32T(2, 3), BOOLT(2), 0))
TBAD(masked_fill_i64_nan, "gad_masked_fill", "NaN/Inf", "i64 x, value NaN", E_DOMAIN,
     "masked_fill", "nan", gad_masked_fill(I64T(2), BOOLT(2), NAN))
GOOD(masked_fill_nan, "gad_masked_fill", "NaN/Inf", "f32 x, value -inf", "-inf where filled",
     at(gad_masked_fill(F32T(2), BOOLT(2), -INFINITY), 1) == -INFINITY)
GOOD(masked_fill_empty, "gad_masked_fill", "empty", "x [0,2], mask [2]", "[0,2]",
     SHAPE_IS(gad_masked_fill(F32T(0, 2), BOOLT(2), 1), 0, 2))
GOOD(masked_fill_bcast, "gad_masked_fill", "shape", "x [3], mask [2,3]",
     "[2,3] (both broadcast, as torch.masked_fill)",
     SHAPE_IS(gad_masked_fill(F32T(3), BOOLT(2, 3), 1), 2, 3))

#define TRI_ROWS(name)                                                         \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL, 0))                                                  \
    TBAD(name##_rank1, "gad_" #name, "rank", "x [3]", E_SHAPE, #name,          \
         "rank 2 or more", gad_##name(F32T(3), 0))                             \
    GOOD(name##_empty, "gad_" #name, "empty", "x [0,3]", "[0,3]",              \
         SHAPE_IS(gad_##name(F32T(0, 3), 0), 0, 3))                            \
    GOOD(name##_huge, "gad_" #name, "value", "diagonal INT64_MAX and INT64_MIN", \
         "every or no element kept, no overflow",                              \
         SHAPE_IS(gad_##name(F32T(2, 3), INT64_MAX), 2, 3) &&                  \
             SHAPE_IS(gad_##name(F32T(2, 3), INT64_MIN), 2, 3))                \
    GOOD(name##_bool, "gad_" #name, "dtype", "a bool [3,3]", "a bool [3,3]",   \
         gad_dtype(gad_##name(BOOLT(3, 3), 0)) == GAD_BOOL)
TRI_ROWS(tril)
TRI_ROWS(triu)

TBAD(clamp_tensor_null, "gad_clamp_tensor", "NULL", "x NULL", E_DOMAIN, "clamp_tensor", NULL,
     gad_clamp_tensor(NULL, F32T(2), NULL))
TBAD(clamp_tensor_nobounds, "gad_clamp_tensor", "NULL", "min and max NULL", E_DOMAIN,
     "clamp_tensor", "both NULL", gad_clamp_tensor(F32T(2), NULL, NULL))
TBAD(clamp_tensor_bool, "gad_clamp_tensor", "dtype", "bool x and min (PyTorch refuses it)",
     E_DTYPE, "clamp_tensor", "bool", gad_clamp_tensor(BOOLT(2), BOOLT(2), NULL))
GOOD(clamp_tensor_i64, "gad_clamp_tensor", "dtype", "i64 {-5, 9} by min 0, max 4", "{0, 4}",
     at(gad_clamp_tensor(IDX(-5, 9), IDX(0), IDX(4)), 0) == 0 &&
     at(gad_clamp_tensor(IDX(-5, 9), IDX(0), IDX(4)), 1) == 4)
TBAD(clamp_tensor_mixed, "gad_clamp_tensor", "dtype", "f32 x, f64 max", E_DTYPE,
     "clamp_tensor", "f64", gad_clamp_tensor(F32T(2), NULL, F64T(2)))
TBAD(clamp_tensor_shape, "gad_clamp_tensor", "shape", "x [2,3], min [2]", E_SHAPE,
     "clamp_tensor", "[2,3]", gad_clamp_tensor(F32T(2, 3), F32T(2), NULL))
GOOD(clamp_tensor_nan, "gad_clamp_tensor", "NaN/Inf", "min NaN", "NaN (as PyTorch)",
     isnan(at(gad_clamp_tensor(F32T(1), VALS32(NAN), NULL), 0)))
GOOD(clamp_tensor_cross, "gad_clamp_tensor", "value", "min 1 > max 0", "max",
     at(gad_clamp_tensor(F32T(1), VALS32(1), VALS32(0)), 0) == 0)
GOOD(clamp_tensor_empty, "gad_clamp_tensor", "empty", "x [0,2], max [2]", "[0,2]",
     SHAPE_IS(gad_clamp_tensor(F32T(0, 2), NULL, F32T(2)), 0, 2))
AREA("Reductions and softmax")

#define AXES_ROWS(name)                                                        \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL, AX(0), 1, 0))                                        \
    TBAD(name##_i64, "gad_" #name, "dtype", "x i64", E_DTYPE, #name, "i64",    \
         gad_##name(I64T(2, 3), AX(0), 1, 0))                                  \
    TBAD(name##_axis, "gad_" #name, "axis", "axis 2 of a [2,3] tensor",        \
         E_SHAPE, #name, "axis 2", gad_##name(F32T(2, 3), AX(2), 1, 0))        \
    TBAD(name##_negaxis, "gad_" #name, "axis", "axis -3 of a [2,3] tensor",    \
         E_SHAPE, #name, "axis -3", gad_##name(F32T(2, 3), AX(-3), 1, 0))      \
    TBAD(name##_dup, "gad_" #name, "axis", "axes {0, -2} (the same twice)",    \
         E_SHAPE, #name, "duplicate", gad_##name(F32T(2, 3), AX(0, -2), 2, 0)) \
    TBAD(name##_noaxes, "gad_" #name, "NULL", "axes NULL with n = 1", E_SHAPE, \
         #name, NULL, gad_##name(F32T(2, 3), NULL, 1, 0))                      \
    TBAD(name##_negn, "gad_" #name, "value", "n = -1", E_SHAPE, #name, "-1",   \
         gad_##name(F32T(2, 3), AX(0), -1, 0))                                 \
    TBAD(name##_rank0, "gad_" #name, "rank 0", "axis 0 of a scalar", E_SHAPE,  \
         #name, "rank 0", gad_##name(S32(1), AX(0), 1, 0))                     \
    GOOD(name##_rank0_ok, "gad_" #name, "rank 0", "a scalar with n = 0",       \
         "a scalar", SCALAR_IS(gad_##name(S32(1), NULL, 0, 0)))                \
    GOOD(name##_keep, "gad_" #name, "odd", "n = 0 with keepdims", "x's shape", \
         SHAPE_IS(gad_##name(F32T(2, 3), NULL, 0, 1), 2, 3))

AXES_ROWS(sum)
GOOD(sum_empty, "gad_sum", "empty", "axis 0 of [0,3]", "[3] zeros",
     SHAPE_IS(gad_sum(F32T(0, 3), AX(0), 1, 0), 3) &&
     all_zero(gad_sum(F32T(0, 3), AX(0), 1, 0)))
AXES_ROWS(mean)
GOOD(mean_empty, "gad_mean", "empty", "axis 0 of [0,3]", "[3] of NaN (no error)",
     all_nan(gad_mean(F32T(0, 3), AX(0), 1, 0)))
TBAD(sum_all_null, "gad_sum_all", "NULL", "x NULL", E_DOMAIN, "sum_all", NULL,
     gad_sum_all(NULL))
TBAD(sum_all_released, "gad_sum_all", "released", "x released", E_DOMAIN, "sum_all",
     "use of a released tensor", gad_sum_all(dead()))
TBAD(sum_all_chain, "gad_sum_all", "NULL",
     "x NULL because an earlier op failed: gad_sum_all(gad_matmul([2,3], [2,3]))",
     E_SHAPE, "matmul", "[2,3] @ [2,3]", gad_sum_all(gad_matmul(F32T(2, 3), F32T(2, 3))))
TBAD(sum_all_i64, "gad_sum_all", "dtype", "x i64", E_DTYPE, "sum_all", "i64",
     gad_sum_all(I64T(2)))
GOOD(sum_all_empty, "gad_sum_all", "empty", "x [0,2^40]", "0",
     at(gad_sum_all(gad_zeros(DIMS(0, BIG), GAD_F32)), 0) == 0)
GOOD(sum_all_rank0, "gad_sum_all", "rank 0", "a scalar", "the scalar",
     at(gad_sum_all(S32(2)), 0) == 2)
GOOD(sum_all_bcast, "gad_sum_all", "huge",
     "a [2^25,2^25] broadcast view of one 1 (4 PiB if copied out)", "2^50; nothing copied",
     at(gad_sum_all(bview((int64_t)1 << 25, (int64_t)1 << 25)), 0) == 0x1p50)
GOOD(sum_all_inf, "gad_sum_all", "NaN/Inf", "inf and -inf", "NaN (no error)",
     isnan(at(gad_sum_all(VALS32(INFINITY, -INFINITY)), 0)))
/* issue 29: u8 is no float */
TBAD(half_sum_u8, "gad_sum_all", "dtype", "u8 [2]", E_DTYPE, "sum_all", "u8",
     gad_sum_all(gad_cast(I64T(2), GAD_U8)))
TBAD(mean_all_null, "gad_mean_all", "NULL", "x NULL", E_DOMAIN, "mean_all", NULL,
     gad_mean_all(NULL))
TBAD(mean_all_i64, "gad_mean_all", "dtype", "x i64", E_DTYPE, "mean_all", "i64",
     gad_mean_all(I64T(2)))
GOOD(mean_all_empty, "gad_mean_all", "empty", "x [0]", "NaN (no error)",
     isnan(at(gad_mean_all(F32T(0)), 0)))
AXES_ROWS(variance)
GOOD(variance_empty, "gad_variance", "empty", "axis 1 of [2,0]", "[2] of NaN",
     all_nan(gad_variance(F32T(2, 0), AX(1), 1, 0)))
AXES_ROWS(stddev)
GOOD(stddev_one, "gad_stddev", "odd", "axis 0 of [1,3] (one sample)", "[3] zeros",
     all_zero(gad_stddev(F32T(1, 3), AX(0), 1, 0)))

#define ONE_AXIS_HEAD(name, ...)                                               \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL, 0 __VA_ARGS__))                                      \
    TBAD(name##_i64, "gad_" #name, "dtype", "x i64", E_DTYPE, #name, "i64",    \
         gad_##name(I64T(2, 3), 0 __VA_ARGS__))                                \
    TBAD(name##_axis, "gad_" #name, "axis", "axis 2 of a [2,3] tensor",        \
         E_SHAPE, #name, "axis 2", gad_##name(F32T(2, 3), 2 __VA_ARGS__))      \
    TBAD(name##_negaxis, "gad_" #name, "axis", "axis -3 of a [2,3] tensor",    \
         E_SHAPE, #name, "axis -3", gad_##name(F32T(2, 3), -3 __VA_ARGS__))    \
    TBAD(name##_rank0, "gad_" #name, "rank 0", "axis 0 of a scalar", E_SHAPE,  \
         #name, "rank 0", gad_##name(S32(1), 0 __VA_ARGS__))
#define ONE_AXIS_TAIL(name, ...)                                               \
    GOOD(name##_empty_ok, "gad_" #name, "empty",                               \
         "axis 1 of a [0,3] tensor (the other axis empty)", "an empty tensor", \
         gad_numel(gad_##name(F32T(0, 3), 1 __VA_ARGS__)) == 0)                \
    GOOD(name##_inf, "gad_" #name, "NaN/Inf", "a row of -inf", "no error",     \
         gad_##name(VALS32(-INFINITY, -INFINITY), 0 __VA_ARGS__) != NULL)
#define ONE_AXIS_ROWS(name, ...)                                               \
    ONE_AXIS_HEAD(name, __VA_ARGS__)                                           \
    TBAD(name##_empty, "gad_" #name, "empty", "axis 1 of a [2,0] tensor",      \
         E_SHAPE, #name, "[2,0]", gad_##name(F32T(2, 0), 1 __VA_ARGS__))       \
    ONE_AXIS_TAIL(name, __VA_ARGS__)

ONE_AXIS_ROWS(amax, , 0)
/* integer dtypes (PyTorch's): the one-axis ops that take i64 (and bool,
 * unless a bool row says otherwise) have ONE_AXIS_HEAD's rows but the i64
 * one */
#define ONE_AXIS_INT_HEAD(name, ...)                                           \
    TBAD(name##_null, "gad_" #name, "NULL", "x NULL", E_DOMAIN, #name, NULL,   \
         gad_##name(NULL, 0 __VA_ARGS__))                                      \
    TBAD(name##_axis, "gad_" #name, "axis", "axis 2 of a [2,3] tensor",        \
         E_SHAPE, #name, "axis 2", gad_##name(F32T(2, 3), 2 __VA_ARGS__))      \
    TBAD(name##_negaxis, "gad_" #name, "axis", "axis -3 of a [2,3] tensor",    \
         E_SHAPE, #name, "axis -3", gad_##name(F32T(2, 3), -3 __VA_ARGS__))    \
    TBAD(name##_rank0, "gad_" #name, "rank 0", "axis 0 of a scalar", E_SHAPE,  \
         #name, "rank 0", gad_##name(S32(1), 0 __VA_ARGS__))
#define ONE_AXIS_NO_BOOL(name, ...)                                            \
    TBAD(name##_bool, "gad_" #name, "dtype", "x bool (PyTorch refuses it)",    \
         E_DTYPE, #name, "bool", gad_##name(BOOLT(2, 3), 0 __VA_ARGS__))
#define BOOLS(...) gad_cast(IDX(__VA_ARGS__), GAD_BOOL)
GOOD(amax_nan, "gad_amax", "NaN/Inf", "an all-NaN row", "-inf (NaN is skipped)",
     at(gad_amax(VALS32(NAN, NAN), 0, 0), 0) == -INFINITY)
ONE_AXIS_INT_HEAD(argmax, , 1)
ONE_AXIS_NO_BOOL(argmax, , 1)
TBAD(argmax_empty, "gad_argmax", "empty", "axis 1 of a [2,0] tensor", E_SHAPE, "argmax",
     "[2,0]", gad_argmax(F32T(2, 0), 1, 1))
TBAD(argmax_empty_i64, "gad_argmax", "empty", "axis 1 of an i64 [2,0] tensor", E_SHAPE,
     "argmax", "[2,0]", gad_argmax(I64T(2, 0), 1, 1))
ONE_AXIS_TAIL(argmax, , 1)
GOOD(argmax_i64, "gad_argmax", "dtype", "i64 {3, 9, -1, 9}", "1 (the first maximum)",
     at(gad_argmax(IDX(3, 9, -1, 9), 0, 0), 0) == 1)
GOOD(argmax_nan, "gad_argmax", "NaN/Inf", "an all-NaN row; NaN before 1", "0; 1",
     at(gad_argmax(VALS32(NAN, NAN), 0, 0), 0) == 0 &&
     at(gad_argmax(VALS32(NAN, 1), 0, 0), 0) == 1)
ONE_AXIS_HEAD(logsumexp, , 0)
GOOD(logsumexp_empty, "gad_logsumexp", "empty", "axis 1 of a [2,0] tensor",
     "[2] of -inf (log 0, as torch)",
     SHAPE_IS(gad_logsumexp(F32T(2, 0), 1, 0), 2) &&
     at(gad_logsumexp(F32T(2, 0), 1, 0), 0) == -INFINITY &&
     at(gad_logsumexp(F32T(2, 0), 1, 0), 1) == -INFINITY)
ONE_AXIS_TAIL(logsumexp, , 0)
GOOD(logsumexp_ninf, "gad_logsumexp", "NaN/Inf", "a row of -inf", "-inf (no NaN)",
     at(gad_logsumexp(VALS32(-INFINITY, -INFINITY), 0, 0), 0) == -INFINITY)
ONE_AXIS_ROWS(softmax, )
/* issue 29: i32 is no float */
TBAD(half_softmax_i32, "gad_softmax", "dtype", "i32 [2]", E_DTYPE, "softmax", "i32",
     gad_softmax(gad_cast(I64T(2), GAD_I32), 0))
ONE_AXIS_ROWS(log_softmax, )

AREA("Sorting, cumulative ops and sampling")
ONE_AXIS_INT_HEAD(sort, , 0, NULL)
GOOD(sort_i64, "gad_sort", "dtype", "i64 {3, -1, 3, -2^40} ascending", "{-2^40, -1, 3, 3}",
     at(gad_sort(IDX(3, -1, 3, -BIG), 0, 0, NULL), 0) == -(double)BIG &&
     at(gad_sort(IDX(3, -1, 3, -BIG), 0, 0, NULL), 3) == 3)
GOOD(sort_bool, "gad_sort", "dtype", "bool {1, 0, 1} descending", "{1, 1, 0}",
     at(gad_sort(BOOLS(1, 0, 1), 0, 1, NULL), 1) == 1 &&
     at(gad_sort(BOOLS(1, 0, 1), 0, 1, NULL), 2) == 0)
GOOD(sort_empty, "gad_sort", "empty", "axis 1 of a [2,0] tensor", "[2,0]",
     SHAPE_IS(gad_sort(F32T(2, 0), 1, 0, NULL), 2, 0))
GOOD(sort_nan, "gad_sort", "NaN/Inf", "{NaN, 1, -inf, -0, 0} ascending",
     "-inf, -0, 0, 1, NaN (NaN last, -0 equal to 0: stable)",
     at(gad_sort(VALS32(NAN, 1, -INFINITY, -0.0f, 0), 0, 0, NULL), 0) == -INFINITY &&
     signbit(at(gad_sort(VALS32(NAN, 1, -INFINITY, -0.0f, 0), 0, 0, NULL), 1)) &&
     isnan(at(gad_sort(VALS32(NAN, 1, -INFINITY, -0.0f, 0), 0, 0, NULL), 4)))
ONE_AXIS_INT_HEAD(argsort, , 0)
GOOD(argsort_bool, "gad_argsort", "dtype", "bool {1, 0, 1, 0}", "{1, 3, 0, 2} (stable)",
     at(gad_argsort(BOOLS(1, 0, 1, 0), 0, 0), 0) == 1 &&
     at(gad_argsort(BOOLS(1, 0, 1, 0), 0, 0), 3) == 2)
GOOD(argsort_empty, "gad_argsort", "empty", "axis 0 of a [0] tensor", "[0]",
     SHAPE_IS(gad_argsort(F32T(0), 0, 0), 0))
GOOD(argsort_nan, "gad_argsort", "NaN/Inf", "{NaN, 1, -inf, -0, 0} descending",
     "0, 1, 3, 4, 2 (NaN first, ties in order)",
     at(gad_argsort(VALS32(NAN, 1, -INFINITY, -0.0f, 0), 0, 1), 0) == 0 &&
     at(gad_argsort(VALS32(NAN, 1, -INFINITY, -0.0f, 0), 0, 1), 2) == 3 &&
     at(gad_argsort(VALS32(NAN, 1, -INFINITY, -0.0f, 0), 0, 1), 4) == 2)
TBAD(topk_null, "gad_topk", "NULL", "x NULL", E_DOMAIN, "topk", NULL,
     gad_topk(NULL, 1, 0, 1, 1, NULL))
TBAD(topk_bool, "gad_topk", "dtype", "x bool (PyTorch refuses it)", E_DTYPE, "topk", "bool",
     gad_topk(BOOLT(2, 3), 1, 0, 1, 1, NULL))
GOOD(topk_i64, "gad_topk", "dtype", "k 2 of i64 {5, -7, 5, 2}", "{5, 5}",
     at(gad_topk(IDX(5, -7, 5, 2), 2, 0, 1, 1, NULL), 1) == 5)
TBAD(topk_axis, "gad_topk", "axis", "dim 2 of a [2,3] tensor", E_SHAPE, "topk", "axis 2",
     gad_topk(F32T(2, 3), 1, 2, 1, 1, NULL))
TBAD(topk_rank0, "gad_topk", "rank 0", "dim 0 of a scalar", E_SHAPE, "topk", "rank 0",
     gad_topk(S32(1), 1, 0, 1, 1, NULL))
TBAD(topk_k, "gad_topk", "index", "k 4 along a dim of 3", E_INDEX, "topk", "k 4",
     gad_topk(F32T(2, 3), 4, 1, 1, 1, NULL))
TBAD(topk_kneg, "gad_topk", "index", "k -1", E_INDEX, "topk", "k -1",
     gad_topk(F32T(2, 3), -1, 1, 1, 1, NULL))
GOOD(topk_k0, "gad_topk", "empty", "k 0 of a [2,3] tensor along 1", "[2,0]",
     SHAPE_IS(gad_topk(F32T(2, 3), 0, 1, 1, 1, NULL), 2, 0))
GOOD(topk_nan, "gad_topk", "NaN/Inf", "k 1 of {1, NaN, 3}, largest then smallest",
     "NaN (the largest); 1",
     isnan(at(gad_topk(VALS32(1, NAN, 3), 1, 0, 1, 1, NULL), 0)) &&
     at(gad_topk(VALS32(1, NAN, 3), 1, 0, 0, 1, NULL), 0) == 1)
ONE_AXIS_INT_HEAD(argmin, , 1)
ONE_AXIS_NO_BOOL(argmin, , 1)
TBAD(argmin_empty, "gad_argmin", "empty", "axis 1 of a [2,0] tensor", E_SHAPE, "argmin",
     "[2,0]", gad_argmin(F32T(2, 0), 1, 1))
ONE_AXIS_TAIL(argmin, , 1)
GOOD(argmin_i64, "gad_argmin", "dtype", "i64 {3, -1, 4, -1}", "1 (the first minimum)",
     at(gad_argmin(IDX(3, -1, 4, -1), 0, 0), 0) == 1)
GOOD(argmin_nan, "gad_argmin", "NaN/Inf", "{0, NaN, -1}; {2, -inf, 5}",
     "1 (a NaN wins, as torch.argmin); 1",
     at(gad_argmin(VALS32(0, NAN, -1), 0, 0), 0) == 1 &&
     at(gad_argmin(VALS32(2, -INFINITY, 5), 0, 0), 0) == 1)
ONE_AXIS_INT_HEAD(cumsum, )
GOOD(cumsum_bool, "gad_cumsum", "dtype", "bool {1, 0, 1}", "i64 {1, 1, 2} (PyTorch's)",
     gad_dtype(gad_cumsum(BOOLS(1, 0, 1), 0)) == GAD_I64 &&
     at(gad_cumsum(BOOLS(1, 0, 1), 0), 2) == 2)
ONE_AXIS_TAIL(cumsum, )
GOOD(cumsum_empty_axis, "gad_cumsum", "empty", "axis 1 of a [2,0] tensor", "[2,0]",
     SHAPE_IS(gad_cumsum(F32T(2, 0), 1), 2, 0))
ONE_AXIS_INT_HEAD(cumprod, )
GOOD(cumprod_i64, "gad_cumprod", "dtype", "i64 {2^40, 2^40}", "i64, wrapped: {2^40, 0}",
     gad_dtype(gad_cumprod(IDX(BIG, BIG), 0)) == GAD_I64 &&
     at(gad_cumprod(IDX(BIG, BIG), 0), 1) == 0)
ONE_AXIS_TAIL(cumprod, )
GOOD(cumprod_zero, "gad_cumprod", "odd", "{2, 0, 3}", "{2, 0, 0}",
     at(gad_cumprod(VALS32(2, 0, 3), 0), 1) == 0 && at(gad_cumprod(VALS32(2, 0, 3), 0), 2) == 0)
TBAD(multinomial_null, "gad_multinomial", "NULL", "w NULL", E_DOMAIN, "multinomial", NULL,
     gad_multinomial(NULL, 1, 1, row_rng()))
TBAD(multinomial_rng, "gad_multinomial", "NULL", "rng NULL", E_DOMAIN, "multinomial",
     "generator", gad_multinomial(VALS32(1, 2), 1, 1, NULL))
TBAD(multinomial_i64, "gad_multinomial", "dtype", "w i64", E_DTYPE, "multinomial", "i64",
     gad_multinomial(I64T(2, 3), 1, 1, row_rng()))
TBAD(multinomial_rank0, "gad_multinomial", "rank 0", "w a scalar", E_SHAPE, "multinomial",
     "1-D or 2-D", gad_multinomial(S32(1), 1, 1, row_rng()))
TBAD(multinomial_rank3, "gad_multinomial", "rank", "w [1,2,3]", E_SHAPE, "multinomial",
     "[1,2,3]", gad_multinomial(F32T(1, 2, 3), 1, 1, row_rng()))
TBAD(multinomial_empty, "gad_multinomial", "empty", "w [2,0]", E_SHAPE, "multinomial",
     "no categories", gad_multinomial(F32T(2, 0), 1, 1, row_rng()))
TBAD(multinomial_n0, "gad_multinomial", "value", "n 0", E_SHAPE, "multinomial", "n 0",
     gad_multinomial(VALS32(1, 2), 0, 1, row_rng()))
TBAD(multinomial_neg, "gad_multinomial", "value", "a weight -1 in row 1", E_DOMAIN,
     "multinomial", "weight -1 at row 1, column 2",
     gad_multinomial(w23(1, 2, 3, 1, 2, -1), 1, 1, row_rng()))
TBAD(multinomial_nan, "gad_multinomial", "NaN/Inf", "a NaN weight", E_DOMAIN, "multinomial",
     "weight nan", gad_multinomial(VALS32(1, NAN), 1, 1, row_rng()))
TBAD(multinomial_inf, "gad_multinomial", "NaN/Inf", "an infinite weight", E_DOMAIN,
     "multinomial", "weight inf", gad_multinomial(VALS32(INFINITY, 1), 1, 1, row_rng()))
TBAD(multinomial_zero, "gad_multinomial", "value", "a row of zeros", E_DOMAIN, "multinomial",
     "row 0 of 3 weights sums to 0", gad_multinomial(w23(0, 0, 0, 1, 1, 1), 1, 1, row_rng()))
TBAD(multinomial_norep, "gad_multinomial", "shape", "n 4 without replacement from 3 categories",
     E_SHAPE, "multinomial", "4 without replacement from 3",
     gad_multinomial(VALS32(1, 0, 2), 4, 0, row_rng()))
GOOD(multinomial_norep_zero, "gad_multinomial", "odd",
     "n 3 without replacement from {0, 2, 0}", "1, 0, 2 (zero weights last, in order)",
     at(gad_multinomial(VALS32(0, 2, 0), 3, 0, row_rng()), 0) == 1 &&
     at(gad_multinomial(VALS32(0, 2, 0), 3, 0, row_rng()), 1) == 0 &&
     at(gad_multinomial(VALS32(0, 2, 0), 3, 0, row_rng()), 2) == 2)
GOOD(multinomial_rows0, "gad_multinomial", "empty", "w [0,3], n 2", "[0,2]",
     SHAPE_IS(gad_multinomial(F32T(0, 3), 2, 1, row_rng()), 0, 2))
GOOD(multinomial_rep, "gad_multinomial", "odd",
     "n 4 with replacement from {0, 1}", "four 1s (a zero weight is never drawn)",
     at(gad_multinomial(VALS32(0, 1), 4, 1, row_rng()), 0) == 1 &&
     at(gad_multinomial(VALS32(0, 1), 4, 1, row_rng()), 3) == 1)
TBAD(sample_logits_null, "gad_sample_logits", "NULL", "logits NULL", E_DOMAIN,
     "sample_logits", NULL, gad_sample_logits(NULL, NULL, row_rng()))
TBAD(sample_logits_rng, "gad_sample_logits", "NULL", "rng NULL at temperature 1", E_DOMAIN,
     "sample_logits", "generator", gad_sample_logits(VALS32(1, 2), NULL, NULL))
TBAD(sample_logits_i64, "gad_sample_logits", "dtype", "logits i64", E_DTYPE, "sample_logits",
     "i64", gad_sample_logits(I64T(2, 3), NULL, row_rng()))
TBAD(sample_logits_rank3, "gad_sample_logits", "rank", "logits [1,2,3]", E_SHAPE,
     "sample_logits", "[1,2,3]", gad_sample_logits(F32T(1, 2, 3), NULL, row_rng()))
TBAD(sample_logits_temp, "gad_sample_logits", "value", "temperature -1", E_DOMAIN,
     "sample_logits", "temperature -1",
     gad_sample_logits(VALS32(1, 2), SOPTS(-1, 0, 0), row_rng()))
TBAD(sample_logits_tnan, "gad_sample_logits", "NaN/Inf", "temperature NaN", E_DOMAIN,
     "sample_logits", "temperature nan",
     gad_sample_logits(VALS32(1, 2), SOPTS(NAN, 0, 0), row_rng()))
TBAD(sample_logits_topk, "gad_sample_logits", "value", "top_k -1", E_DOMAIN,
     "sample_logits", "top_k -1", gad_sample_logits(VALS32(1, 2), SOPTS(1, -1, 0), row_rng()))
TBAD(sample_logits_topp, "gad_sample_logits", "value", "top_p 1.5", E_DOMAIN,
     "sample_logits", "top_p 1.5",
     gad_sample_logits(VALS32(1, 2), SOPTS(1, 0, 1.5), row_rng()))
TBAD(sample_logits_ninf, "gad_sample_logits", "NaN/Inf", "a row of -inf logits", E_DOMAIN,
     "sample_logits", "weight nan",
     gad_sample_logits(VALS32(-INFINITY, -INFINITY), NULL, row_rng()))
GOOD(sample_logits_greedy, "gad_sample_logits", "NULL", "rng NULL at temperature 0",
     "the argmax, 0-d", at(gad_sample_logits(VALS32(1, 3, 2), SOPTS(0, 0, 0), NULL), 0) == 1)
GOOD(sample_logits_topk1, "gad_sample_logits", "odd", "top_k 1 of {1, 3, 2}", "1",
     at(gad_sample_logits(VALS32(1, 3, 2), SOPTS(1, 1, 0), row_rng()), 0) == 1)
GOOD(sample_logits_rows0, "gad_sample_logits", "empty", "logits [0,3]", "[0]",
     SHAPE_IS(gad_sample_logits(F32T(0, 3), NULL, row_rng()), 0))
TBAD(logits_filter_null, "gad_logits_filter", "NULL", "logits NULL", E_DOMAIN,
     "logits_filter", NULL, gad_logits_filter(NULL, NULL))
TBAD(logits_filter_i64, "gad_logits_filter", "dtype", "logits i64", E_DTYPE, "logits_filter",
     "i64", gad_logits_filter(I64T(2, 3), NULL))
TBAD(logits_filter_rank0, "gad_logits_filter", "rank 0", "logits a scalar", E_SHAPE,
     "logits_filter", "1-D or 2-D", gad_logits_filter(S32(1), NULL))
TBAD(logits_filter_topp, "gad_logits_filter", "NaN/Inf", "top_p NaN", E_DOMAIN,
     "logits_filter", "top_p nan", gad_logits_filter(VALS32(1, 2), SOPTS(1, 0, NAN)))
GOOD(logits_filter_ties, "gad_logits_filter", "odd", "top_k 1 of {3, 1, 3}",
     "{3, -inf, 3} (ties with the k-th kept)",
     at(gad_logits_filter(VALS32(3, 1, 3), SOPTS(1, 1, 0)), 2) == 3 &&
     at(gad_logits_filter(VALS32(3, 1, 3), SOPTS(1, 1, 0)), 1) == -INFINITY)
TBAD(lf_empty, "gad_logits_filter", "empty", "logits [0]", E_SHAPE, "logits_filter", NULL,
     gad_logits_filter(F32T(0), NULL))

AREA("Linear algebra")

TBAD(matmul_null_a, "gad_matmul", "NULL", "a NULL", E_DOMAIN, "matmul", NULL,
     gad_matmul(NULL, F32T(2, 3)))
TBAD(matmul_null_b, "gad_matmul", "NULL", "b NULL", E_DOMAIN, "matmul", NULL,
     gad_matmul(F32T(2, 3), NULL))
TBAD(matmul_released, "gad_matmul", "released", "b released (made in a scope that ended)",
     E_DOMAIN, "matmul", "use of a released tensor", gad_matmul(F32T(3, 2), dead()))
TBAD(matmul_mixed, "gad_matmul", "dtype", "a f32, b f64", E_DTYPE, "matmul",
     "f32 and f64", gad_matmul(F32T(2, 3), F64T(3, 2)))
TBAD(matmul_i64, "gad_matmul", "dtype", "a and b i64", E_DTYPE, "matmul", "i64",
     gad_matmul(I64T(2, 3), I64T(3, 2)))
TBAD(matmul_rank0, "gad_matmul", "rank 0", "a scalar @ [2]", E_SHAPE, "matmul",
     "[] @ [2]", gad_matmul(S32(1), F32T(2)))
TBAD(matmul_inner, "gad_matmul", "shape", "[2,3] @ [4,5]", E_SHAPE, "matmul",
     "[2,3] @ [4,5]", gad_matmul(F32T(2, 3), F32T(4, 5)))
TBAD(matmul_inner1d, "gad_matmul", "shape", "[3] @ [4]", E_SHAPE, "matmul",
     "[3] @ [4]", gad_matmul(F32T(3), F32T(4)))
TBAD(matmul_batch, "gad_matmul", "shape", "[2,2,3] @ [3,3,4] (batch 2 vs 3)", E_SHAPE,
     "matmul", "[2,2,3]", gad_matmul(F32T(2, 2, 3), F32T(3, 3, 4)))
TBAD(matmul_huge, "gad_matmul", "huge", "[2^40,0] @ [0,2^40]", E_SHAPE, "matmul",
     "overflows", gad_matmul(F32T(BIG, 0), F32T(0, BIG)))
GOOD(matmul_empty_k, "gad_matmul", "empty", "[2,0] @ [0,3]", "[2,3] zeros",
     SHAPE_IS(gad_matmul(F32T(2, 0), F32T(0, 3)), 2, 3) &&
     all_zero(gad_matmul(F32T(2, 0), F32T(0, 3))))
GOOD(matmul_empty_m, "gad_matmul", "empty", "[0,3] @ [3,2]", "[0,2]",
     SHAPE_IS(gad_matmul(F32T(0, 3), F32T(3, 2)), 0, 2))
/* ---- half-precision matmul (issue 29, helper hgemm) ---- */
#define BF16T(...) gad_cast(F32T(__VA_ARGS__), GAD_BF16)
#define F16T(...) gad_cast(F32T(__VA_ARGS__), GAD_F16)
TBAD(matmul_half_mixed, "gad_matmul", "dtype", "a bf16, b f16", E_DTYPE, "matmul",
     "bf16 and f16", gad_matmul(BF16T(2, 3), F16T(3, 2)))
TBAD(matmul_half_f32, "gad_matmul", "dtype", "a f16, b f32", E_DTYPE, "matmul", "f16 and f32",
     gad_matmul(F16T(2, 3), F32T(3, 2)))
TBAD(matmul_half_inner, "gad_matmul", "shape", "bf16 [2,3] @ [4,5]", E_SHAPE, "matmul",
     "[2,3] @ [4,5]", gad_matmul(BF16T(2, 3), BF16T(4, 5)))
GOOD(matmul_half_empty_k, "gad_matmul", "empty", "bf16 [2,0] @ [0,3]", "[2,3] bf16 zeros",
     SHAPE_IS(gad_matmul(BF16T(2, 0), BF16T(0, 3)), 2, 3) &&
     all_zero(gad_matmul(BF16T(2, 0), BF16T(0, 3))) &&
     gad_dtype(gad_matmul(BF16T(2, 0), BF16T(0, 3))) == GAD_BF16)
#undef BF16T
#undef F16T
GOOD(matmul_1d, "gad_matmul", "rank", "[3] @ [3]", "a scalar",
     SCALAR_IS(gad_matmul(F32T(3), F32T(3))))
GOOD(matmul_nan, "gad_matmul", "NaN/Inf", "a row with NaN", "NaN in that row (no error)",
     isnan(at(gad_matmul(gad_reshape(VALS32(NAN, 1), DIMS(1, 2)), F32T(2, 2)), 0)))

GOOD(set_offload_twice, "gad_set_offload", "odd", "on, then off again",
     "the previous setting", gad_set_offload(1) == 0 && gad_set_offload(0) == 1)
GOOD(offload_share_nan, "gad_set_offload_cpu_share", "NaN/Inf", "NaN, then 2",
     "the previous share; g's default restored",
     gad_set_offload_cpu_share(NAN) < 0 && gad_set_offload_cpu_share(0.5) < 0 &&
     gad_set_offload_cpu_share(2) == 0.5 && gad_set_offload_cpu_share(-1) < 0)
ROW(offload_devices_cpu, "gad_set_offload_devices", "value", "the CPU as a GPU", "status",
    E_DEVICE, "set_offload_devices", "is not a device to offload to", 0,
    gad_device d[1] = {GAD_CPU};
    return gad_set_offload_devices(d, 1) == GAD_ERR_DEVICE;)
SBAD(offload_devices_null, "gad_set_offload_devices", "NULL", "devs NULL with n = 2", E_DOMAIN,
     "set_offload_devices", "devs is NULL with n = 2", gad_set_offload_devices(NULL, 2))
SBAD(offload_devices_many, "gad_set_offload_devices", "huge", "n = 17", E_DOMAIN,
     "set_offload_devices", "17 devices (at most 16)",
     gad_set_offload_devices((gad_device[17]){0}, 17))

AREA("Indexing and joining")

TBAD(gather_null_x, "gad_gather", "NULL", "x NULL", E_DOMAIN, "gather", NULL,
     gad_gather(NULL, 0, I64T(2, 3)))
TBAD(gather_null_index, "gad_gather", "NULL", "index NULL", E_DOMAIN, "gather", NULL,
     gad_gather(F32T(2, 3), 0, NULL))
GOOD(gather_x_i64, "gad_gather", "dtype", "x i64", "an i64 result, off the tape",
     gad_dtype(gad_gather(I64T(2, 3), 0, I64T(2, 3))) == GAD_I64 &&
     !gad_is_tracked(gad_gather(I64T(2, 3), 0, I64T(2, 3))))
TBAD(gather_index_f32, "gad_gather", "dtype", "index f32", E_DTYPE, "gather", "f32",
     gad_gather(F32T(2, 3), 0, F32T(2, 3)))
TBAD(gather_axis, "gad_gather", "axis", "axis 2 of a [2,3] x", E_SHAPE, "gather",
     "axis 2", gad_gather(F32T(2, 3), 2, I64T(2, 3)))
TBAD(gather_rank, "gad_gather", "rank", "index [6] for a [2,3] x", E_SHAPE, "gather",
     "[6]", gad_gather(F32T(2, 3), 0, I64T(6)))
TBAD(gather_shape, "gad_gather", "shape", "index [2,4] for a [2,3] x on axis 0",
     E_SHAPE, "gather", "[2,4]", gad_gather(F32T(2, 3), 0, I64T(2, 4)))
TBAD(gather_index, "gad_gather", "index", "index 2 on an axis of 2", E_INDEX, "gather",
     "index 2 out of bounds for size 2",
     gad_gather(F32T(2, 3), 0, gad_reshape(IDX(0, 1, 2), DIMS(1, 3))))
TBAD(gather_negindex, "gad_gather", "index", "index -3 on an axis of 2", E_INDEX,
     "gather", "-3", gad_gather(F32T(2, 3), 0, gad_reshape(IDX(0, -3, 1), DIMS(1, 3))))
GOOD(gather_wrap, "gad_gather", "index", "index -1 (wraps once)", "the last row",
     at(gad_gather(F32T(2, 3), 0, gad_reshape(IDX(-1, -1, -1), DIMS(1, 3))), 0) == 0)
GOOD(gather_empty, "gad_gather", "empty", "an index [0,3]", "[0,3]",
     SHAPE_IS(gad_gather(F32T(2, 3), 0, I64T(0, 3)), 0, 3))
TBAD(scatter_null, "gad_scatter_add", "NULL", "src NULL", E_DOMAIN, "scatter_add", NULL,
     gad_scatter_add(F32T(2, 3), 0, I64T(2, 3), NULL))
TBAD(scatter_dst_i64, "gad_scatter_add", "dtype", "dst i64", E_DTYPE, "scatter_add",
     "i64", gad_scatter_add(I64T(2, 3), 0, I64T(2, 3), I64T(2, 3)))
TBAD(scatter_mixed, "gad_scatter_add", "dtype", "dst f32, src f64", E_DTYPE,
     "scatter_add", "f64", gad_scatter_add(F32T(2, 3), 0, I64T(2, 3), F64T(2, 3)))
TBAD(scatter_index_f32, "gad_scatter_add", "dtype", "index f32", E_DTYPE, "scatter_add",
     "f32", gad_scatter_add(F32T(2, 3), 0, F32T(2, 3), F32T(2, 3)))
TBAD(scatter_axis, "gad_scatter_add", "axis", "axis -3 of a [2,3] dst", E_SHAPE,
     "scatter_add", "axis -3", gad_scatter_add(F32T(2, 3), -3, I64T(2, 3), F32T(2, 3)))
TBAD(scatter_rank, "gad_scatter_add", "rank", "index [3] for a [2,3] dst", E_SHAPE,
     "scatter_add", "[3]", gad_scatter_add(F32T(2, 3), 0, I64T(3), F32T(3)))
TBAD(scatter_src, "gad_scatter_add", "shape", "index [2,3] with src [2,2]", E_SHAPE,
     "scatter_add", "[2,2]", gad_scatter_add(F32T(2, 3), 0, I64T(2, 3), F32T(2, 2)))
TBAD(scatter_exceeds, "gad_scatter_add", "shape", "index [2,4] for a [2,3] dst",
     E_SHAPE, "scatter_add", "[2,4]",
     gad_scatter_add(F32T(2, 3), 0, I64T(2, 4), F32T(2, 4)))
TBAD(scatter_index, "gad_scatter_add", "index", "index 5 on an axis of 2", E_INDEX,
     "scatter_add", "index 5", gad_scatter_add(F32T(2, 3), 0,
     gad_reshape(IDX(0, 5, 1), DIMS(1, 3)), F32T(1, 3)))
GOOD(scatter_dup, "gad_scatter_add", "index", "the same index twice", "the sum",
     at(gad_scatter_add(F32T(3), 0, IDX(1, 1), VALS32(2, 3)), 1) == 4.5)
TBAD(take_null, "gad_take", "NULL", "index NULL", E_DOMAIN, "take", NULL,
     gad_take(F32T(2, 3), 1, NULL))
GOOD(take_x_i64, "gad_take", "dtype", "x i64", "an i64 result",
     gad_dtype(gad_take(I64T(2, 3), 1, I64T(2))) == GAD_I64)
TBAD(take_index_f64, "gad_take", "dtype", "index f64", E_DTYPE, "take", "f64",
     gad_take(F32T(2, 3), 1, F64T(2)))
TBAD(take_axis, "gad_take", "axis", "axis 2 of a [2,3] x", E_SHAPE, "take", "axis 2",
     gad_take(F32T(2, 3), 2, I64T(2)))
TBAD(take_shape, "gad_take", "shape", "index [3] for a [2,3] x on axis 1", E_SHAPE,
     "take", "[3]", gad_take(F32T(2, 3), 1, I64T(3)))
TBAD(take_index, "gad_take", "index", "index 3 on an axis of 3", E_INDEX, "take",
     "index 3 out of bounds for size 3", gad_take(F32T(2, 3), 1, IDX(0, 3)))
TBAD(take_rank0, "gad_take", "rank 0", "axis 0 of a scalar", E_SHAPE, "take", "rank 0",
     gad_take(S32(1), 0, I64T(1)))
GOOD(take_1d, "gad_take", "rank 0", "a [3] x with a scalar index", "a scalar",
     SCALAR_IS(gad_take(F32T(3), 0, gad_reshape(IDX(2), NULL, 0))))
TBAD(isel_null, "gad_index_select", "NULL", "index NULL", E_DOMAIN, "index_select", NULL,
     gad_index_select(F32T(2, 3), 0, NULL))
TBAD(isel_index_f32, "gad_index_select", "dtype", "index f32", E_DTYPE, "index_select",
     "f32", gad_index_select(F32T(2, 3), 0, F32T(2)))
GOOD(isel_x_i64, "gad_index_select", "dtype", "x i64 (labels)", "an i64 result",
     gad_dtype(gad_index_select(I64T(4), 0, IDX(3, 0, 3))) == GAD_I64)
TBAD(isel_axis, "gad_index_select", "axis", "axis 2 of a [2,3] x", E_SHAPE,
     "index_select", "axis 2", gad_index_select(F32T(2, 3), 2, IDX(0)))
TBAD(isel_rank, "gad_index_select", "rank", "an index [1,1] on a rank-8 x", E_SHAPE,
     "index_select", "rank 9",
     gad_index_select(F32T(1, 1, 1, 1, 1, 1, 1, 2), 0, I64T(1, 1)))
TBAD(isel_index, "gad_index_select", "index", "index 2 on an axis of 2", E_INDEX,
     "index_select", "index 2 out of bounds for size 2",
     gad_index_select(F32T(2, 3), 0, IDX(0, 2)))
GOOD(isel_empty, "gad_index_select", "empty", "an index [0]", "[0,3]",
     SHAPE_IS(gad_index_select(F32T(2, 3), 0, I64T(0)), 0, 3))
GOOD(isel_rank0, "gad_index_select", "rank 0", "a scalar index", "the axis dropped",
     SHAPE_IS(gad_index_select(F32T(2, 3), 1, gad_reshape(IDX(2), NULL, 0)), 2))
TBAD(cat_zero, "gad_cat", "empty", "n = 0", E_SHAPE, "cat", "n = 0",
     gad_cat((gad_tensor *[]){NULL}, 0, 0))
TBAD(cat_nullarray, "gad_cat", "NULL", "ts NULL with n = 2", E_DOMAIN, "cat", NULL,
     gad_cat(NULL, 2, 0))
TBAD(cat_null, "gad_cat", "NULL", "ts[1] NULL", E_DOMAIN, "cat", NULL,
     gad_cat((gad_tensor *[]){F32T(2), NULL}, 2, 0))
TBAD(cat_released, "gad_cat", "released", "ts[1] released", E_DOMAIN, "cat",
     "use of a released tensor", gad_cat((gad_tensor *[]){F32T(2, 3), dead()}, 2, 0))
TBAD(cat_axis, "gad_cat", "axis", "axis 1 of [2] tensors", E_SHAPE, "cat", "axis 1",
     gad_cat((gad_tensor *[]){F32T(2), F32T(3)}, 2, 1))
TBAD(cat_mixed, "gad_cat", "dtype", "f32 with i64", E_DTYPE, "cat", "i64",
     gad_cat((gad_tensor *[]){F32T(2), I64T(2)}, 2, 0))
TBAD(cat_shape, "gad_cat", "shape", "[2,3] with [2,4] on axis 0", E_SHAPE, "cat",
     "[2,4]", gad_cat((gad_tensor *[]){F32T(2, 3), F32T(2, 4)}, 2, 0))
TBAD(cat_rank, "gad_cat", "rank", "[2,3] with [3] on axis 0", E_SHAPE, "cat", "[3]",
     gad_cat((gad_tensor *[]){F32T(2, 3), F32T(3)}, 2, 0))
TBAD(cat_rank0, "gad_cat", "rank 0", "two scalars", E_SHAPE, "cat", "rank 0",
     gad_cat((gad_tensor *[]){S32(1), S32(2)}, 2, 0))
TBAD(cat_huge, "gad_cat", "huge", "two views [2^59] (2^60 elements)", E_SHAPE, "cat",
     "overflows", gad_cat((gad_tensor *[]){
         gad_broadcast_to(F32T(1), DIMS((int64_t)1 << 59)),
         gad_broadcast_to(F32T(1), DIMS((int64_t)1 << 59))}, 2, 0))
ROW(cat_many, "gad_cat", "huge", "65536 tracked inputs", "NULL", E_UNSUP, "cat", "65536",
    0,
    gad_tensor *x = LEAF32(1), **ts = malloc(65536 * sizeof *ts);
    if (!ts) return 0;
    for (int i = 0; i < 65536; i++) ts[i] = x;
    gad_tensor *y = gad_cat(ts, 65536, 0);
    free(ts);
    return y == NULL;)
ROW(cat_many_const, "gad_cat", "huge", "65536 constant inputs", "[65536]", E_OK, "", NULL,
    0,
    gad_tensor *x = F32T(1), **ts = malloc(65536 * sizeof *ts);
    if (!ts) return 0;
    for (int i = 0; i < 65536; i++) ts[i] = x;
    gad_tensor *y = gad_cat(ts, 65536, 0);
    free(ts);
    return SHAPE_IS(y, 65536);)
GOOD(cat_i64, "gad_cat", "dtype", "i64 tensors", "an i64 tensor",
     gad_dtype(gad_cat((gad_tensor *[]){I64T(2), I64T(1)}, 2, 0)) == GAD_I64)
GOOD(cat_empty, "gad_cat", "empty", "[0,3] with [2,3] on axis 0", "[2,3]",
     SHAPE_IS(gad_cat((gad_tensor *[]){F32T(0, 3), F32T(2, 3)}, 2, 0), 2, 3))
TBAD(stack_zero, "gad_stack", "empty", "n = 0", E_SHAPE, "stack", "n = 0",
     gad_stack((gad_tensor *[]){NULL}, 0, 0))
TBAD(stack_nullarray, "gad_stack", "NULL", "ts NULL with n = 2", E_DOMAIN, "stack", NULL,
     gad_stack(NULL, 2, 0))
TBAD(stack_null, "gad_stack", "NULL", "ts[0] NULL", E_DOMAIN, "stack", NULL,
     gad_stack((gad_tensor *[]){NULL, F32T(2)}, 2, 0))
TBAD(stack_axis, "gad_stack", "axis", "axis 2 for [2] tensors", E_SHAPE, "stack",
     "axis 2", gad_stack((gad_tensor *[]){F32T(2), F32T(2)}, 2, 2))
TBAD(stack_mixed, "gad_stack", "dtype", "f32 with f64", E_DTYPE, "stack", "f64",
     gad_stack((gad_tensor *[]){F32T(2), F64T(2)}, 2, 0))
TBAD(stack_shape, "gad_stack", "shape", "[2] with [3]", E_SHAPE, "stack", "[3]",
     gad_stack((gad_tensor *[]){F32T(2), F32T(3)}, 2, 0))
TBAD(stack_rank8, "gad_stack", "rank", "rank-8 tensors", E_SHAPE, "stack",
     "[1,1,1,1,1,1,1,1]",
     gad_stack((gad_tensor *[]){F32T(1, 1, 1, 1, 1, 1, 1, 1),
                                F32T(1, 1, 1, 1, 1, 1, 1, 1)}, 2, 0))
ROW(stack_many, "gad_stack", "huge", "65536 tracked inputs", "NULL", E_UNSUP, "stack",
    "65536", 0,
    gad_tensor *x = LEAF32(1), **ts = malloc(65536 * sizeof *ts);
    if (!ts) return 0;
    for (int i = 0; i < 65536; i++) ts[i] = x;
    gad_tensor *y = gad_stack(ts, 65536, 0);
    free(ts);
    return y == NULL;)
GOOD(stack_rank0, "gad_stack", "rank 0", "three scalars", "[3]",
     SHAPE_IS(gad_stack((gad_tensor *[]){S32(1), S32(2), S32(3)}, 3, 0), 3))
GOOD(stack_empty, "gad_stack", "empty", "two [0] tensors on axis -1", "[0,2]",
     SHAPE_IS(gad_stack((gad_tensor *[]){F32T(0), F32T(0)}, 2, -1), 0, 2))

AREA("Automatic differentiation")

TBAD(requires_grad_null, "gad_requires_grad", "NULL", "t NULL", E_DOMAIN,
     "requires_grad", NULL, gad_requires_grad(NULL))
TBAD(requires_grad_i64, "gad_requires_grad", "dtype", "t i64", E_DTYPE,
     "requires_grad", "i64", gad_requires_grad(I64T(2)))
ROW(requires_grad_op, "gad_requires_grad", "non-leaf", "t the output of a tracked op",
    "t itself (a no-op)", E_OK, "", NULL, 0,
    gad_tensor *t = tracked();
    return gad_requires_grad(t) == t && !gad_is_leaf(t);)
GOOD(requires_grad_empty, "gad_requires_grad", "empty", "t [0]", "t, a leaf",
     gad_is_leaf(gad_requires_grad(F32T(0))))
GOOD(requires_grad_view, "gad_requires_grad", "odd", "t a broadcast view",
     "t, a leaf", gad_is_leaf(gad_requires_grad(bview(2, 2))))
/* issue 29: a half leaf */
GOOD(half_requires_grad, "gad_requires_grad", "odd", "bf16 [2]", "a bf16 leaf",
     gad_is_tracked(gad_requires_grad(gad_cast(F32T(2), GAD_BF16))))
GOOD(is_tracked_null, "gad_is_tracked", "NULL", "t NULL", "0", gad_is_tracked(NULL) == 0)
GOOD(is_leaf_null, "gad_is_leaf", "NULL", "t NULL", "0", gad_is_leaf(NULL) == 0)
GOOD(is_leaf_op, "gad_is_leaf", "non-leaf", "t the output of a tracked op", "0",
     gad_is_leaf(tracked()) == 0)
TBAD(detach_null, "gad_detach", "NULL", "t NULL", E_DOMAIN, "detach", NULL,
     gad_detach(NULL))
GOOD(detach_const, "gad_detach", "odd", "t a constant", "an alias, off the tape",
     gad_is_tracked(gad_detach(F32T(2))) == 0)
TBAD(stop_gradient_null, "gad_stop_gradient", "NULL", "t NULL", E_DOMAIN,
     "stop_gradient", NULL, gad_stop_gradient(NULL))
GOOD(stop_gradient_const, "gad_stop_gradient", "odd", "t a constant",
     "a constant alias", !gad_is_tracked(gad_stop_gradient(F32T(2))))
ROW(no_grad_nest, "gad_no_grad_begin", "odd", "nested three times",
    "nothing; ends must match", E_OK, "", NULL, 0,
    for (int i = 0; i < 3; i++) gad_no_grad_begin();
    int off = !gad_grad_enabled() && !gad_is_tracked(gad_neg(LEAF32(2)));
    for (int i = 0; i < 3; i++) gad_no_grad_end();
    return off && gad_grad_enabled();)
ROW(no_grad_end_extra, "gad_no_grad_end", "odd", "no gad_no_grad_begin before it",
    "nothing (a no-op)", E_OK, "", NULL, 0,
    gad_no_grad_end();
    gad_no_grad_end();
    return gad_grad_enabled() == 1;)
GOOD(grad_enabled_default, "gad_grad_enabled", "odd", "no no-grad mode", "1",
     gad_grad_enabled() == 1)

SBAD(grad_null, "gad_grad", "NULL", "out NULL", E_DOMAIN, "grad", NULL,
     gad_grad(NULL, (gad_tensor *[]){LEAF32(2)}, 1, (gad_tensor *[1]){NULL}))
SBAD(grad_i64, "gad_grad", "dtype", "out i64", E_DTYPE, "grad", "i64",
     gad_grad(I64T(1), (gad_tensor *[]){LEAF32(2)}, 1, (gad_tensor *[1]){NULL}))
ROW(grad_nonscalar, "gad_grad", "shape", "out [2] (not one element)",
    "status; grads[i] NULL", E_SHAPE, "grad", "[2]", 0,
    gad_tensor *x = LEAF32(2), *g[1] = {F32T(1)};
    return gad_grad(gad_neg(x), &x, 1, g) == E_SHAPE && g[0] == NULL;)
ROW(grad_nonleaf, "gad_grad", "non-leaf", "an input that is the output of an op",
    "GAD_OK; d out / d input (ones for a sum)", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(2), *y = gad_neg(x), *g[1];
    return gad_grad(gad_sum_all(y), &y, 1, g) == GAD_OK && SHAPE_IS(g[0], 2) &&
           at(g[0], 0) == 1 && at(g[0], 1) == 1;)
ROW(grad_nonleaf_unreached, "gad_grad", "non-leaf", "an output of an op that out does not reach",
    "GAD_OK; zeros for it", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(2), *y = gad_neg(x), *in[2] = {x, y}, *g[2];
    return gad_grad(gad_sum_all(x), in, 2, g) == GAD_OK && all_zero(g[1]) &&
           SHAPE_IS(g[1], 2);)
ROW(grad_const_input, "gad_grad", "non-leaf", "an input that is a constant", "status",
    E_DOMAIN, "grad", "not on the tape", 0,
    gad_tensor *x = LEAF32(2), *c = F32T(2), *g[1];
    return gad_grad(gad_sum_all(gad_mul(x, c)), &c, 1, g) == E_DOMAIN;)
ROW(grad_null_input, "gad_grad", "NULL", "inputs[0] NULL", "status", E_DOMAIN, "grad",
    NULL, 0,
    gad_tensor *x = LEAF32(2), *in[1] = {NULL}, *g[1];
    return gad_grad(gad_sum_all(x), in, 1, g) == E_DOMAIN;)
ROW(grad_null_inputs, "gad_grad", "NULL", "inputs NULL with n = 1", "status", E_DOMAIN,
    "grad", "n = 1", 0,
    gad_tensor *x = LEAF32(2), *g[1];
    return gad_grad(gad_sum_all(x), NULL, 1, g) == E_DOMAIN;)
ROW(grad_neg_n, "gad_grad", "value", "n = -1", "status", E_DOMAIN, "grad", "n = -1", 0,
    gad_tensor *x = LEAF32(2), *g[1];
    return gad_grad(gad_sum_all(x), &x, -1, g) == E_DOMAIN;)
ROW(grad_unreached, "gad_grad", "odd", "an input that out does not reach",
    "GAD_OK; zeros for it", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(2), *z = LEAF32(3), *in[2] = {x, z}, *g[2];
    return gad_grad(gad_sum_all(x), in, 2, g) == GAD_OK && all_zero(g[1]) &&
           SHAPE_IS(g[1], 3);)
ROW(grad_const_out, "gad_grad", "odd", "out a constant", "GAD_OK; zeros", E_OK, "",
    NULL, 0,
    gad_tensor *x = LEAF32(2), *g[1];
    return gad_grad(S32(3), &x, 1, g) == GAD_OK && all_zero(g[0]);)
ROW(grad_empty, "gad_grad", "empty", "out the sum of an empty leaf", "GAD_OK; a [0] gradient",
    E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(0), *g[1];
    return gad_grad(gad_sum_all(x), &x, 1, g) == GAD_OK && SHAPE_IS(g[0], 0);)
ROW(grad_inf, "gad_grad", "NaN/Inf", "the gradient of sqrt at 0",
    "GAD_OK; inf (no error without anomaly mode)", E_OK, "", NULL, 0,
    gad_tensor *x = gad_requires_grad(S32(0)), *g[1];
    return gad_grad(gad_sqrt(x), &x, 1, g) == GAD_OK && isinf(at(g[0], 0));)
ROW(grad_ex_seed_shape, "gad_grad_ex", "shape", "seed [3] for an out [2]", "status",
    E_SHAPE, "grad", "[3]", 0,
    gad_tensor *x = LEAF32(2), *g[1];
    return gad_grad_ex(gad_neg(x), F32T(3), &x, 1, g, 0) == E_SHAPE;)
ROW(grad_ex_seed_dtype, "gad_grad_ex", "dtype", "seed f64 for an f32 out", "status",
    E_DTYPE, "grad", "f64", 0,
    gad_tensor *x = LEAF32(2), *g[1];
    return gad_grad_ex(gad_neg(x), F64T(2), &x, 1, g, 0) == E_DTYPE;)
ROW(grad_ex_noseed, "gad_grad_ex", "shape", "seed NULL for an out [2]", "status",
    E_SHAPE, "grad", "[2]", 0,
    gad_tensor *x = LEAF32(2), *g[1];
    return gad_grad_ex(gad_neg(x), NULL, &x, 1, g, 0) == E_SHAPE;)
ROW(grad_ex_null, "gad_grad_ex", "NULL", "out NULL", "status", E_DOMAIN, "grad", NULL, 0,
    gad_tensor *x = LEAF32(2), *g[1];
    return gad_grad_ex(NULL, F32T(2), &x, 1, g, 0) == E_DOMAIN;)
ROW(grad_ex_nonleaf, "gad_grad_ex", "non-leaf", "an input that is out itself (an op's output)",
    "GAD_OK; the seed", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(2), *y = gad_neg(x), *g[1];
    return gad_grad_ex(y, gad_full_like(y, 3), &y, 1, g, GAD_CREATE_GRAPH) == GAD_OK &&
           at(g[0], 0) == 3 && at(g[0], 1) == 3;)
ROW(grad_ex_const_input, "gad_grad_ex", "non-leaf", "an input that is a constant", "status",
    E_DOMAIN, "grad", "not on the tape", 0,
    gad_tensor *x = LEAF32(2), *c = F32T(2), *g[1];
    return gad_grad_ex(gad_mul(x, c), F32T(2), &c, 1, g, 0) == E_DOMAIN && g[0] == NULL;)
ROW(grad_ex_flags, "gad_grad_ex", "value", "unknown flag bits (0x80)", "GAD_OK (ignored)",
    E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(2), *g[1];
    return gad_grad_ex(gad_neg(x), F32T(2), &x, 1, g, 0x80u) == GAD_OK && g[0];)
ROW(grad_ex_empty, "gad_grad_ex", "empty", "out [0] with a seed [0]", "GAD_OK; zeros",
    E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(0), *g[1];
    return gad_grad_ex(gad_neg(x), F32T(0), &x, 1, g, 0) == GAD_OK && SHAPE_IS(g[0], 0);)
SBAD(backward_null, "gad_backward", "NULL", "out NULL", E_DOMAIN, "backward", NULL,
     gad_backward(NULL))
SBAD(backward_released, "gad_backward", "released", "out released", E_DOMAIN, "backward",
     "use of a released tensor", gad_backward(dead()))
SBAD(backward_nonscalar, "gad_backward", "shape", "out [2]", E_SHAPE, "backward", "[2]",
     gad_backward(gad_neg(LEAF32(2))))
SBAD(backward_i64, "gad_backward", "dtype", "out i64", E_DTYPE, "backward", "i64",
     gad_backward(I64T(1)))
GOOD(backward_const, "gad_backward", "odd", "out a constant", "GAD_OK (nothing to do)",
     gad_backward(S32(1)) == GAD_OK)
ROW(backward_anomaly, "gad_backward", "NaN/Inf",
    "anomaly mode on; the VJP of sqrt at 0 gives inf", "status", E_DOMAIN, "sqrt",
    "NaN or Inf", 0,
    gad_tensor *x = gad_requires_grad(S32(0));
    gad_set_anomaly(1);
    gad_status st = gad_backward(gad_sqrt(x));
    gad_set_anomaly(0);
    return st == E_DOMAIN;)
TBAD(leaf_grad_null, "gad_leaf_grad", "NULL", "t NULL", E_DOMAIN, "leaf_grad", NULL,
     gad_leaf_grad(NULL))
TBAD(leaf_grad_const, "gad_leaf_grad", "non-leaf", "t a constant", E_DOMAIN,
     "leaf_grad", "not a leaf", gad_leaf_grad(F32T(2)))
TBAD(leaf_grad_op, "gad_leaf_grad", "non-leaf", "t the output of a tracked op",
     E_DOMAIN, "leaf_grad", "not a leaf", gad_leaf_grad(tracked()))
GOOD(leaf_grad_empty, "gad_leaf_grad", "empty", "a leaf with an empty slot",
     "NULL (no error)", gad_leaf_grad(LEAF32(2)) == NULL)
GOOD(leaf_has_grad_null, "gad_leaf_has_grad", "NULL", "t NULL", "0 (no error)",
     gad_leaf_has_grad(NULL) == 0)
GOOD(leaf_has_grad_op, "gad_leaf_has_grad", "non-leaf", "t the output of a tracked op",
     "0 (no error)", gad_leaf_has_grad(tracked()) == 0)
ROW(leaf_has_grad_set, "gad_leaf_has_grad", "empty", "a leaf before and after backward",
    "0, then 1", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(2);
    if (gad_leaf_has_grad(x) != 0) return 0;
    if (gad_backward(gad_sum_all(x)) != GAD_OK) return 0;
    return gad_leaf_has_grad(x) == 1;)
ROW(zero_grad_null, "gad_zero_grad", "NULL", "params NULL with n = 3",
    "nothing (a no-op)", E_OK, "", NULL, 0, gad_zero_grad(NULL, 3); return 1;)
ROW(zero_grad_mixed, "gad_zero_grad", "non-leaf", "NULL, constants and op outputs among the params",
    "skips them; empties the leaves", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(2);
    if (gad_backward(gad_sum_all(x)) != GAD_OK) return 0;
    gad_tensor *ps[4] = {NULL, F32T(2), tracked(), x};
    gad_zero_grad(ps, 4);
    return gad_leaf_grad(x) == NULL;)
ROW(zero_grad_neg, "gad_zero_grad", "value", "n = -1", "nothing (a no-op)", E_OK, "",
    NULL, 0,
    gad_tensor *x = LEAF32(2);
    gad_zero_grad(&x, -1);
    return 1;)

ROW(hvp_null_hv, "gad_hvp", "NULL", "hv NULL", "status", E_DOMAIN, "hvp", NULL, 0,
    gad_tensor *x = LEAF64(3), *v = F64T(3);
    return gad_hvp(gad_sum_all(gad_square(x)), &x, &v, 1, NULL) == E_DOMAIN;)
ROW(hvp_null_v, "gad_hvp", "NULL", "v NULL", "status; hv[i] NULL", E_DOMAIN, "hvp",
    NULL, 0,
    gad_tensor *x = LEAF64(3), *hv[1] = {x};
    return gad_hvp(gad_sum_all(gad_square(x)), &x, NULL, 1, hv) == E_DOMAIN &&
           hv[0] == NULL;)
ROW(hvp_v_shape, "gad_hvp", "shape", "v [2] for an input [3]", "status", E_SHAPE, "hvp",
    "[2]", 0,
    gad_tensor *x = LEAF64(3), *v = F64T(2), *hv[1];
    return gad_hvp(gad_sum_all(gad_square(x)), &x, &v, 1, hv) == E_SHAPE;)
ROW(hvp_v_dtype, "gad_hvp", "dtype", "v f32 for an f64 input", "status", E_DTYPE, "hvp",
    "f32", 0,
    gad_tensor *x = LEAF64(3), *v = F32T(3), *hv[1];
    return gad_hvp(gad_sum_all(gad_square(x)), &x, &v, 1, hv) == E_DTYPE;)
ROW(hvp_null_loss, "gad_hvp", "NULL", "loss NULL", "status", E_DOMAIN, "hvp", NULL, 0,
    gad_tensor *x = LEAF64(3), *v = F64T(3), *hv[1];
    return gad_hvp(NULL, &x, &v, 1, hv) == E_DOMAIN;)
ROW(hvp_nonscalar, "gad_hvp", "shape", "loss [3] (not one element)", "status", E_SHAPE,
    "hvp", "[3]", 0,
    gad_tensor *x = LEAF64(3), *v = F64T(3), *hv[1];
    return gad_hvp(gad_square(x), &x, &v, 1, hv) == E_SHAPE;)
ROW(hvp_nonleaf, "gad_hvp", "non-leaf", "an input that is the output of an op", "status",
    E_DOMAIN, "hvp", "input 0", 0,
    gad_tensor *x = LEAF64(3), *y = gad_neg(x), *v = F64T(3), *hv[1];
    return gad_hvp(gad_sum_all(gad_square(y)), &y, &v, 1, hv) == E_DOMAIN;)
ROW(hvp_none, "gad_hvp", "empty", "n = 0 (no inputs)", "GAD_OK (nothing to compute)",
    E_OK, "", NULL, 0,
    gad_tensor *x = LEAF64(3), *hv[1];
    return gad_hvp(gad_sum_all(gad_square(x)), NULL, NULL, 0, hv) == GAD_OK;)
ROW(hvp_linear, "gad_hvp", "odd", "a loss linear in x (no second derivative)",
    "GAD_OK; zeros", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF64(3), *v = F64T(3), *hv[1];
    return gad_hvp(gad_sum_all(x), &x, &v, 1, hv) == GAD_OK && all_zero(hv[0]);)
ROW(jvp_null_jv, "gad_jvp", "NULL", "jv NULL", "status", E_DOMAIN, "jvp", NULL, 0,
    gad_tensor *x = LEAF64(3), *v = F64T(3);
    return gad_jvp(gad_square(x), &x, &v, 1, NULL) == E_DOMAIN;)
ROW(jvp_null_out, "gad_jvp", "NULL", "out NULL", "status; *jv NULL", E_DOMAIN, "jvp",
    NULL, 0,
    gad_tensor *x = LEAF64(3), *v = F64T(3), *jv = x;
    return gad_jvp(NULL, &x, &v, 1, &jv) == E_DOMAIN && jv == NULL;)
ROW(jvp_null_v, "gad_jvp", "NULL", "v NULL", "status", E_DOMAIN, "jvp", NULL, 0,
    gad_tensor *x = LEAF64(3), *jv;
    return gad_jvp(gad_square(x), &x, NULL, 1, &jv) == E_DOMAIN;)
ROW(jvp_v_shape, "gad_jvp", "shape", "v [2,2] for an input [3]", "status", E_SHAPE,
    "jvp", "[2,2]", 0,
    gad_tensor *x = LEAF64(3), *v = F64T(2, 2), *jv;
    return gad_jvp(gad_square(x), &x, &v, 1, &jv) == E_SHAPE;)
ROW(jvp_nonleaf, "gad_jvp", "non-leaf", "an input that is the output of an op", "status",
    E_DOMAIN, "jvp", "input 0", 0,
    gad_tensor *x = LEAF64(3), *y = gad_neg(x), *v = F64T(3), *jv;
    return gad_jvp(gad_square(y), &y, &v, 1, &jv) == E_DOMAIN;)
ROW(jvp_i64, "gad_jvp", "dtype", "out i64", "status", E_DTYPE, "jvp", "i64", 0,
    gad_tensor *x = LEAF64(3), *v = F64T(3), *jv;
    return gad_jvp(gad_argmax(x, 0, 0), &x, &v, 1, &jv) == E_DTYPE;)
ROW(jvp_none, "gad_jvp", "empty", "n = 0 (no inputs)", "GAD_OK; zeros of out's shape",
    E_OK, "", NULL, 0,
    gad_tensor *x = LEAF64(3), *jv = NULL;
    return gad_jvp(gad_square(x), NULL, NULL, 0, &jv) == GAD_OK && all_zero(jv) &&
           SHAPE_IS(jv, 3);)
ROW(jvp_const, "gad_jvp", "odd", "out a constant", "GAD_OK; zeros of out's shape",
    E_OK, "", NULL, 0,
    gad_tensor *x = LEAF64(3), *v = F64T(3), *jv;
    return gad_jvp(F64T(2), &x, &v, 1, &jv) == GAD_OK && all_zero(jv) && SHAPE_IS(jv, 2);)
ROW(set_anomaly_odd, "gad_set_anomaly", "value", "on = 5 (any nonzero)",
    "the previous setting (0, then 1)", E_OK, "", NULL, 0,
    int a = gad_set_anomaly(5);
    int b = gad_set_anomaly(0);
    return a == 0 && b == 1;)
SBAD(graph_dot_null, "gad_graph_dot", "NULL", "out NULL", E_DOMAIN, "graph_dot", NULL,
     gad_graph_dot(NULL, stderr))
SBAD(graph_dot_nofile, "gad_graph_dot", "NULL", "f NULL", E_IO, "graph_dot", NULL,
     gad_graph_dot(tracked(), NULL))
ROW(graph_dot_readonly, "gad_graph_dot", "io", "f opened read-only", "status", E_IO,
    "graph_dot", "write", 0,
    FILE *f = fopen("/dev/null", "r");
    if (!f) return 0;
    gad_status st = gad_graph_dot(tracked(), f);
    fclose(f);
    return st == E_IO;)
ROW(graph_dot_const, "gad_graph_dot", "odd", "out a constant", "GAD_OK; an empty graph",
    E_OK, "", NULL, 0,
    FILE *f = tmpfile();
    if (!f) return 0;
    gad_status st = gad_graph_dot(F32T(2), f);
    fclose(f);
    return st == GAD_OK;)
SBAD(gradcheck_nofn, "gad_gradcheck", "NULL", "f NULL", E_DOMAIN, "gradcheck", NULL,
     gad_gradcheck(NULL, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL))
SBAD(gradcheck_noinputs, "gad_gradcheck", "NULL", "inputs NULL with n = 1", E_DOMAIN,
     "gradcheck", "n = 1", gad_gradcheck(fn_square, NULL, NULL, 1, NULL, NULL))
SBAD(gradcheck_neg_n, "gad_gradcheck", "value", "n = -1", E_DOMAIN, "gradcheck",
     "n = -1", gad_gradcheck(fn_square, NULL, (gad_tensor *[]){LEAF64(2)}, -1, NULL, NULL))
SBAD(gradcheck_many, "gad_gradcheck", "value", "n = 65 (more than 64 inputs)", E_DOMAIN,
     "gradcheck", "n = 65", gad_gradcheck(fn_square, NULL,
     (gad_tensor *[65]){LEAF64(2)}, 65, NULL, NULL))
SBAD(gradcheck_fnull, "gad_gradcheck", "NULL", "f returns NULL without an error",
     E_DOMAIN, "gradcheck", "NULL",
     gad_gradcheck(fn_null, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL))
SBAD(gradcheck_ferr, "gad_gradcheck", "shape", "f fails ([2] + [5] inside it)",
     E_SHAPE, "add", "[2] vs [5]",
     gad_gradcheck(fn_bad_add, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL))
SBAD(gradcheck_i64, "gad_gradcheck", "dtype", "f returns an i64 tensor", E_DTYPE,
     "gradcheck", "float",
     gad_gradcheck(fn_i64, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL))
SBAD(gradcheck_noleaf, "gad_gradcheck", "non-leaf", "no input is a leaf (nothing to check)",
     E_DOMAIN, "gradcheck", "leaf",
     gad_gradcheck(fn_square, NULL, (gad_tensor *[]){F64T(2)}, 1, NULL, NULL))
SBAD(gradcheck_none, "gad_gradcheck", "empty", "n = 0 (no inputs)", E_DOMAIN, "gradcheck",
     "leaf", gad_gradcheck(fn_square, NULL, NULL, 0, NULL, NULL))
GOOD(gradcheck_nores, "gad_gradcheck", "NULL", "opts and res NULL", "GAD_OK",
     gad_gradcheck(fn_square, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL) == GAD_OK)
ROW(gradcheck_empty, "gad_gradcheck", "empty", "an empty leaf", "GAD_OK; 0 checked",
    E_OK, "", NULL, 0,
    gad_gradcheck_result r;
    return gad_gradcheck(fn_square, NULL, (gad_tensor *[]){LEAF64(0)}, 1, NULL, &r) ==
           GAD_OK && r.checked == 0;)
SBAD(gradgradcheck_nofn, "gad_gradgradcheck", "NULL", "f NULL", E_DOMAIN,
     "gradgradcheck", NULL,
     gad_gradgradcheck(NULL, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL))
SBAD(gradgradcheck_neg_n, "gad_gradgradcheck", "value", "n = -1", E_DOMAIN,
     "gradgradcheck", "n = -1",
     gad_gradgradcheck(fn_square, NULL, (gad_tensor *[]){LEAF64(2)}, -1, NULL, NULL))
SBAD(gradgradcheck_noleaf, "gad_gradgradcheck", "non-leaf",
     "no input is a leaf (nothing to check)", E_DOMAIN, "gradgradcheck", "leaf",
     gad_gradgradcheck(fn_square, NULL, (gad_tensor *[]){F64T(2)}, 1, NULL, NULL))
SBAD(gradgradcheck_fnull, "gad_gradgradcheck", "NULL", "f returns NULL without an error",
     E_DOMAIN, "gradgradcheck", "NULL",
     gad_gradgradcheck(fn_null, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL))
SBAD(gradgradcheck_ferr, "gad_gradgradcheck", "shape", "f fails ([2] + [5] inside it)",
     E_SHAPE, "add", "[2] vs [5]",
     gad_gradgradcheck(fn_bad_add, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL))
SBAD(gradgradcheck_i64, "gad_gradgradcheck", "dtype", "f returns an i64 tensor",
     E_DTYPE, "gradgradcheck", "float",
     gad_gradgradcheck(fn_i64, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL))
GOOD(gradgradcheck_ok, "gad_gradgradcheck", "NULL", "opts and res NULL", "GAD_OK",
     gad_gradgradcheck(fn_square, NULL, (gad_tensor *[]){LEAF64(2)}, 1, NULL, NULL) ==
     GAD_OK)
GOOD(op_count_pos, "gad_op_count", "odd", "any build", "> 0", gad_op_count() > 0)
GOOD(op_name_range, "gad_op_name", "index", "op -1 and op gad_op_count()", "NULL (no error)",
     gad_op_name(-1) == NULL && gad_op_name(gad_op_count()) == NULL &&
     gad_op_name(0) != NULL)

AREA("Layers and losses")

TBAD(linear_null_x, "gad_linear", "NULL", "x NULL", E_DOMAIN, "linear", NULL,
     gad_linear(NULL, F32T(3, 4), NULL))
TBAD(linear_null_w, "gad_linear", "NULL", "w NULL", E_DOMAIN, "linear", NULL,
     gad_linear(F32T(2, 3), NULL, NULL))
TBAD(linear_i64, "gad_linear", "dtype", "x i64", E_DTYPE, "linear", "i64",
     gad_linear(I64T(2, 3), I64T(3, 4), NULL))
TBAD(linear_w_dtype, "gad_linear", "dtype", "x f32, w f64", E_DTYPE, "linear", "f64",
     gad_linear(F32T(2, 3), F64T(3, 4), NULL))
TBAD(linear_b_dtype, "gad_linear", "dtype", "b f64 for f32 x and w", E_DTYPE, "linear",
     "f64", gad_linear(F32T(2, 3), F32T(3, 4), F64T(4)))
TBAD(linear_w_rank, "gad_linear", "rank", "w [3] (not rank 2)", E_SHAPE, "linear",
     "[3]", gad_linear(F32T(2, 3), F32T(3), NULL))
TBAD(linear_x_rank0, "gad_linear", "rank 0", "x a scalar", E_SHAPE, "linear", "[]",
     gad_linear(S32(1), F32T(1, 4), NULL))
TBAD(linear_inner, "gad_linear", "shape", "x [2,3] with w [4,5]", E_SHAPE, "linear",
     "[2,3]", gad_linear(F32T(2, 3), F32T(4, 5), NULL))
TBAD(linear_b_shape, "gad_linear", "shape", "b [5] for w [3,4]", E_SHAPE, "linear",
     "[5]", gad_linear(F32T(2, 3), F32T(3, 4), F32T(5)))
GOOD(linear_1d, "gad_linear", "rank", "x [3] (1-D)", "[4]",
     SHAPE_IS(gad_linear(F32T(3), F32T(3, 4), F32T(4)), 4))
GOOD(linear_empty, "gad_linear", "empty", "x [0,3]", "[0,4]",
     SHAPE_IS(gad_linear(F32T(0, 3), F32T(3, 4), NULL), 0, 4))
TBAD(linear_released, "gad_linear", "released", "b released", E_DOMAIN, "linear", "use of a released tensor",
     gad_linear(F32T(2, 3), F32T(3, 4), dead()))
TBAD(linear_act_null_w, "gad_linear_act", "NULL", "w NULL", E_DOMAIN, "linear_act", NULL,
     gad_linear_act(F32T(2, 3), NULL, NULL, GAD_ACT_RELU))
TBAD(linear_act_act, "gad_linear_act", "value", "act 9", E_DOMAIN, "linear_act", "act 9",
     gad_linear_act(F32T(2, 3), F32T(3, 4), NULL, (gad_act)9))
TBAD(linear_act_neg, "gad_linear_act", "value", "act -1", E_DOMAIN, "linear_act", "act -1",
     gad_linear_act(F32T(2, 3), F32T(3, 4), NULL, (gad_act)-1))
TBAD(linear_act_i64, "gad_linear_act", "dtype", "x i64", E_DTYPE, "linear_act", "i64",
     gad_linear_act(I64T(2, 3), I64T(3, 4), NULL, GAD_ACT_GELU))
TBAD(linear_act_b_dtype, "gad_linear_act", "dtype", "b f64 for f32 x and w", E_DTYPE,
     "linear_act", "f64", gad_linear_act(F32T(2, 3), F32T(3, 4), F64T(4), GAD_ACT_SILU))
TBAD(linear_act_inner, "gad_linear_act", "shape", "x [2,3] with w [4,5]", E_SHAPE,
     "linear_act", "[2,3]", gad_linear_act(F32T(2, 3), F32T(4, 5), NULL, GAD_ACT_RELU))
TBAD(linear_act_b_shape, "gad_linear_act", "shape", "b [5] for w [3,4]", E_SHAPE,
     "linear_act", "[5]", gad_linear_act(F32T(2, 3), F32T(3, 4), F32T(5), GAD_ACT_RELU))
TBAD(linear_act_released, "gad_linear_act", "released", "x released", E_DOMAIN, "linear_act",
     "use of a released tensor", gad_linear_act(dead(), F32T(3, 4), NULL, GAD_ACT_RELU))
GOOD(linear_act_1d, "gad_linear_act", "rank", "x [3] (1-D)", "[4]",
     SHAPE_IS(gad_linear_act(F32T(3), F32T(3, 4), F32T(4), GAD_ACT_GELU_ERF), 4))
GOOD(linear_act_empty, "gad_linear_act", "empty", "x [0,3]", "[0,4]",
     SHAPE_IS(gad_linear_act(F32T(0, 3), F32T(3, 4), F32T(4), GAD_ACT_RELU), 0, 4))
GOOD(linear_act_no_inner, "gad_linear_act", "empty", "x [2,0], w [0,3]: act(b)", "[2,3]",
     SHAPE_IS(gad_linear_act(F32T(2, 0), F32T(0, 3), F32T(3), GAD_ACT_SILU), 2, 3))
TBAD(mse_null, "gad_mse_loss", "NULL", "target NULL", E_DOMAIN, "mse_loss", NULL,
     gad_mse_loss(F32T(3), NULL, GAD_REDUCE_MEAN))
TBAD(mse_i64, "gad_mse_loss", "dtype", "pred i64", E_DTYPE, "mse_loss", "i64",
     gad_mse_loss(I64T(3), I64T(3), GAD_REDUCE_MEAN))
TBAD(mse_mixed, "gad_mse_loss", "dtype", "pred f32, target f64", E_DTYPE, "mse_loss",
     "f64", gad_mse_loss(F32T(3), F64T(3), GAD_REDUCE_MEAN))
TBAD(mse_shape, "gad_mse_loss", "shape", "pred [3] with target [3,1] (no broadcast)",
     E_SHAPE, "mse_loss", "[3,1]", gad_mse_loss(F32T(3), F32T(3, 1), GAD_REDUCE_SUM))
TBAD(mse_red, "gad_mse_loss", "value", "reduction 7", E_DOMAIN, "mse_loss", "7",
     gad_mse_loss(F32T(3), F32T(3), (gad_reduction)7))
GOOD(mse_empty, "gad_mse_loss", "empty", "[0] with MEAN", "NaN (the mean of nothing)",
     isnan(at(gad_mse_loss(F32T(0), F32T(0), GAD_REDUCE_MEAN), 0)))
GOOD(mse_nan, "gad_mse_loss", "NaN/Inf", "pred holding NaN", "NaN (no error)",
     isnan(at(gad_mse_loss(VALS32(NAN, 1), VALS32(0, 1), GAD_REDUCE_SUM), 0)))
GOOD(mse_rank0, "gad_mse_loss", "rank 0", "scalars with NONE", "a scalar",
     SCALAR_IS(gad_mse_loss(S32(1), S32(3), GAD_REDUCE_NONE)))
TBAD(mse_released, "gad_mse_loss", "released", "target released", E_DOMAIN, "mse_loss",
     "use of a released tensor", gad_mse_loss(F32T(2, 3), dead(), GAD_REDUCE_MEAN))
TBAD(nll_null, "gad_nll_loss", "NULL", "log_probs NULL", E_DOMAIN, "nll_loss", NULL,
     gad_nll_loss(NULL, IDX(0, 1), GAD_REDUCE_MEAN))
TBAD(nll_i64, "gad_nll_loss", "dtype", "log_probs i64", E_DTYPE, "nll_loss", "i64",
     gad_nll_loss(I64T(2, 3), IDX(0, 1), GAD_REDUCE_MEAN))
TBAD(nll_targets_f32, "gad_nll_loss", "dtype", "targets f32", E_DTYPE, "nll_loss",
     "f32", gad_nll_loss(F32T(2, 3), F32T(2), GAD_REDUCE_MEAN))
TBAD(nll_rank, "gad_nll_loss", "rank", "log_probs [6] (not [B,C])", E_SHAPE, "nll_loss",
     "[6]", gad_nll_loss(F32T(6), IDX(0, 1), GAD_REDUCE_MEAN))
TBAD(nll_targets_shape, "gad_nll_loss", "shape", "targets [3] for log_probs [2,3]",
     E_SHAPE, "nll_loss", "[3]", gad_nll_loss(F32T(2, 3), IDX(0, 1, 2), GAD_REDUCE_MEAN))
TBAD(nll_index, "gad_nll_loss", "index", "class 3 of 3", E_INDEX, "nll_loss", "class 3",
     gad_nll_loss(F32T(2, 3), IDX(0, 3), GAD_REDUCE_MEAN))
TBAD(nll_negindex, "gad_nll_loss", "index", "class -1 (no wrapping)", E_INDEX,
     "nll_loss", "class -1", gad_nll_loss(F32T(2, 3), IDX(-1, 0), GAD_REDUCE_MEAN))
TBAD(nll_red, "gad_nll_loss", "value", "reduction -1", E_DOMAIN, "nll_loss", "-1",
     gad_nll_loss(F32T(2, 3), IDX(0, 1), (gad_reduction)-1))
GOOD(nll_empty, "gad_nll_loss", "empty", "B = 0 with NONE", "[0]",
     SHAPE_IS(gad_nll_loss(F32T(0, 3), I64T(0), GAD_REDUCE_NONE), 0))
TBAD(nll_released, "gad_nll_loss", "released", "log_probs released", E_DOMAIN,
     "nll_loss", "use of a released tensor", gad_nll_loss(dead(), I64T(2), GAD_REDUCE_MEAN))
TBAD(ce_null, "gad_cross_entropy", "NULL", "targets NULL", E_DOMAIN, "cross_entropy",
     NULL, gad_cross_entropy(F32T(2, 3), NULL, GAD_REDUCE_MEAN))
TBAD(ce_i64, "gad_cross_entropy", "dtype", "logits i64", E_DTYPE, "cross_entropy", "i64",
     gad_cross_entropy(I64T(2, 3), IDX(0, 1), GAD_REDUCE_MEAN))
TBAD(ce_targets_f64, "gad_cross_entropy", "dtype", "targets f64", E_DTYPE,
     "cross_entropy", "f64", gad_cross_entropy(F32T(2, 3), F64T(2), GAD_REDUCE_MEAN))
TBAD(ce_rank, "gad_cross_entropy", "rank", "logits [2,3,4]", E_SHAPE, "cross_entropy",
     "[2,3,4]", gad_cross_entropy(F32T(2, 3, 4), IDX(0, 1), GAD_REDUCE_MEAN))
TBAD(ce_targets_shape, "gad_cross_entropy", "shape", "targets [2,1] for logits [2,3]",
     E_SHAPE, "cross_entropy", "[2,1]",
     gad_cross_entropy(F32T(2, 3), I64T(2, 1), GAD_REDUCE_MEAN))
TBAD(ce_index, "gad_cross_entropy", "index", "class 7 of 3", E_INDEX, "cross_entropy",
     "class 7", gad_cross_entropy(F32T(2, 3), IDX(7, 0), GAD_REDUCE_SUM))
TBAD(ce_noclass, "gad_cross_entropy", "empty", "logits [0,0] (C = 0)", E_SHAPE,
     "cross_entropy", "[0,0]", gad_cross_entropy(F32T(0, 0), I64T(0), GAD_REDUCE_SUM))
TBAD(ce_red, "gad_cross_entropy", "value", "reduction 3", E_DOMAIN, "cross_entropy",
     "3", gad_cross_entropy(F32T(2, 3), IDX(0, 1), (gad_reduction)3))
GOOD(ce_inf, "gad_cross_entropy", "NaN/Inf", "a logit of -inf on the target",
     "inf (no error)",
     isinf(at(gad_cross_entropy(gad_reshape(VALS32(-INFINITY, 0), DIMS(1, 2)), IDX(0),
                                GAD_REDUCE_SUM), 0)))
TBAD(cross_entropy_released, "gad_cross_entropy", "released", "logits released",
     E_DOMAIN, "cross_entropy", "use of a released tensor",
     gad_cross_entropy(dead(), I64T(2), GAD_REDUCE_MEAN))
/* ---- losses with PyTorch's options (issue 27): cross_entropy_ex, bce_with_logits ---- */
TBAD(ce_ex_null, "gad_cross_entropy_ex", "NULL", "target NULL", E_DOMAIN, "cross_entropy_ex",
     NULL, gad_cross_entropy_ex(F32T(2, 3), NULL, NULL, -100, GAD_REDUCE_MEAN, 0))
TBAD(ce_ex_i64, "gad_cross_entropy_ex", "dtype", "logits i64", E_DTYPE, "cross_entropy_ex",
     "i64", gad_cross_entropy_ex(I64T(2, 3), IDX(0, 1), NULL, -100, GAD_REDUCE_MEAN, 0))
TBAD(ce_ex_prob_dtype, "gad_cross_entropy_ex", "dtype", "probabilities f64 for f32 logits",
     E_DTYPE, "cross_entropy_ex", "f64",
     gad_cross_entropy_ex(F32T(2, 3), F64T(2, 3), NULL, -100, GAD_REDUCE_MEAN, 0))
TBAD(ce_ex_weight_dtype, "gad_cross_entropy_ex", "dtype", "weight f64 for f32 logits",
     E_DTYPE, "cross_entropy_ex", "f64",
     gad_cross_entropy_ex(F32T(2, 3), IDX(0, 1), F64T(3), -100, GAD_REDUCE_MEAN, 0))
TBAD(ce_ex_rank0, "gad_cross_entropy_ex", "rank 0", "logits a scalar", E_SHAPE,
     "cross_entropy_ex", "[]",
     gad_cross_entropy_ex(S32(1), IDX(0), NULL, -100, GAD_REDUCE_MEAN, 0))
TBAD(ce_ex_shape, "gad_cross_entropy_ex", "shape", "targets [2,1] for logits [2,3]",
     E_SHAPE, "cross_entropy_ex", "[2,1]",
     gad_cross_entropy_ex(F32T(2, 3), I64T(2, 1), NULL, -100, GAD_REDUCE_MEAN, 0))
TBAD(ce_ex_prob_shape, "gad_cross_entropy_ex", "shape", "probabilities [3,2] for logits [2,3]",
     E_SHAPE, "cross_entropy_ex", "[3,2]",
     gad_cross_entropy_ex(F32T(2, 3), F32T(3, 2), NULL, -100, GAD_REDUCE_MEAN, 0))
TBAD(ce_ex_weight_shape, "gad_cross_entropy_ex", "shape", "weight [2] for 3 classes",
     E_SHAPE, "cross_entropy_ex", "[2]",
     gad_cross_entropy_ex(F32T(2, 3), IDX(0, 1), F32T(2), -100, GAD_REDUCE_MEAN, 0))
TBAD(ce_ex_index, "gad_cross_entropy_ex", "index", "class 7 of 3 (ignore_index -100)",
     E_INDEX, "cross_entropy_ex", "class 7",
     gad_cross_entropy_ex(F32T(2, 3), IDX(7, 0), NULL, -100, GAD_REDUCE_SUM, 0))
TBAD(ce_ex_negative, "gad_cross_entropy_ex", "index", "class -1 with ignore_index -100",
     E_INDEX, "cross_entropy_ex", "class -1",
     gad_cross_entropy_ex(F32T(2, 3), IDX(-1, 0), NULL, -100, GAD_REDUCE_SUM, 0))
TBAD(ce_ex_noclass, "gad_cross_entropy_ex", "empty", "logits [0,0] (C = 0)", E_SHAPE,
     "cross_entropy_ex", "[0,0]",
     gad_cross_entropy_ex(F32T(0, 0), I64T(0), NULL, -100, GAD_REDUCE_SUM, 0))
TBAD(ce_ex_smoothing, "gad_cross_entropy_ex", "value", "label_smoothing 1.5", E_DOMAIN,
     "cross_entropy_ex", "1.5",
     gad_cross_entropy_ex(F32T(2, 3), IDX(0, 1), NULL, -100, GAD_REDUCE_SUM, 1.5))
TBAD(ce_ex_smoothing_nan, "gad_cross_entropy_ex", "NaN/Inf", "label_smoothing NaN",
     E_DOMAIN, "cross_entropy_ex", "nan",
     gad_cross_entropy_ex(F32T(2, 3), IDX(0, 1), NULL, -100, GAD_REDUCE_SUM, NAN))
TBAD(ce_ex_red, "gad_cross_entropy_ex", "value", "reduction 3", E_DOMAIN, "cross_entropy_ex",
     "3", gad_cross_entropy_ex(F32T(2, 3), IDX(0, 1), NULL, -100, (gad_reduction)3, 0))
GOOD(ce_ex_all_ignored, "gad_cross_entropy_ex", "value", "every target ignore_index, MEAN",
     "NaN (0 / 0, as PyTorch)",
     isnan(at(gad_cross_entropy_ex(F32T(2, 3), IDX(-100, -100), NULL, -100, GAD_REDUCE_MEAN,
                                   0), 0)))
GOOD(ce_ex_empty, "gad_cross_entropy_ex", "empty", "logits [0,3] with MEAN",
     "NaN (the mean of nothing)",
     isnan(at(gad_cross_entropy_ex(F32T(0, 3), I64T(0), NULL, -100, GAD_REDUCE_MEAN, 0), 0)))
GOOD(ce_ex_nan, "gad_cross_entropy_ex", "NaN/Inf", "a NaN logit", "NaN (no error)",
     isnan(at(gad_cross_entropy_ex(gad_reshape(VALS32(NAN, 0), DIMS(1, 2)), IDX(0), NULL, -100,
                                   GAD_REDUCE_SUM, 0), 0)))
TBAD(ce_ex_released, "gad_cross_entropy_ex", "released", "weight released", E_DOMAIN,
     "cross_entropy_ex", "use of a released tensor",
     gad_cross_entropy_ex(F32T(2, 3), IDX(0, 1), dead(), -100, GAD_REDUCE_MEAN, 0))
TBAD(bce_null, "gad_binary_cross_entropy_with_logits", "NULL", "target NULL", E_DOMAIN,
     "bce_with_logits", NULL,
     gad_binary_cross_entropy_with_logits(F32T(3), NULL, NULL, NULL, GAD_REDUCE_MEAN))
TBAD(bce_i64, "gad_binary_cross_entropy_with_logits", "dtype", "x i64", E_DTYPE,
     "bce_with_logits", "i64",
     gad_binary_cross_entropy_with_logits(I64T(3), I64T(3), NULL, NULL, GAD_REDUCE_MEAN))
TBAD(bce_mixed, "gad_binary_cross_entropy_with_logits", "dtype", "pos_weight f64, x f32",
     E_DTYPE, "bce_with_logits", "f64",
     gad_binary_cross_entropy_with_logits(F32T(2, 3), F32T(2, 3), NULL, F64T(3),
                                          GAD_REDUCE_MEAN))
TBAD(bce_shape, "gad_binary_cross_entropy_with_logits", "shape", "target [3,1] for x [3]",
     E_SHAPE, "bce_with_logits", "[3,1]",
     gad_binary_cross_entropy_with_logits(F32T(3), F32T(3, 1), NULL, NULL, GAD_REDUCE_SUM))
TBAD(bce_weight, "gad_binary_cross_entropy_with_logits", "shape",
     "weight [2] for x [2,3] (no broadcast)", E_SHAPE, "bce_with_logits", "[2]",
     gad_binary_cross_entropy_with_logits(F32T(2, 3), F32T(2, 3), F32T(2), NULL,
                                          GAD_REDUCE_SUM))
TBAD(bce_red, "gad_binary_cross_entropy_with_logits", "value", "reduction 7", E_DOMAIN,
     "bce_with_logits", "7",
     gad_binary_cross_entropy_with_logits(F32T(3), F32T(3), NULL, NULL, (gad_reduction)7))
GOOD(bce_empty, "gad_binary_cross_entropy_with_logits", "empty", "[0] with MEAN",
     "NaN (the mean of nothing)",
     isnan(at(gad_binary_cross_entropy_with_logits(F32T(0), F32T(0), NULL, NULL,
                                                   GAD_REDUCE_MEAN), 0)))
GOOD(bce_big, "gad_binary_cross_entropy_with_logits", "NaN/Inf", "x = -1e30, target 1",
     "1e30 (finite: no exp overflow)",
     at(gad_binary_cross_entropy_with_logits(VALS32(-1e30f), VALS32(1), NULL, NULL,
                                             GAD_REDUCE_SUM), 0) == 1e30f)
TBAD(bce_released, "gad_binary_cross_entropy_with_logits", "released", "x released",
     E_DOMAIN, "bce_with_logits", "use of a released tensor",
     gad_binary_cross_entropy_with_logits(dead(), F32T(2), NULL, NULL, GAD_REDUCE_MEAN))
GOOD(bce_rank0, "gad_binary_cross_entropy_with_logits", "rank 0", "x and target 0-d, mean",
     "0-d", SCALAR_IS(gad_binary_cross_entropy_with_logits(S64(0.5), S64(1), NULL, NULL,
                                                            GAD_REDUCE_MEAN)))
TBAD(ln_null, "gad_layer_norm", "NULL", "x NULL", E_DOMAIN, "layer_norm", NULL,
     gad_layer_norm(NULL, NULL, NULL, 1e-5))
TBAD(ln_i64, "gad_layer_norm", "dtype", "x i64", E_DTYPE, "layer_norm", "i64",
     gad_layer_norm(I64T(2, 3), NULL, NULL, 1e-5))
TBAD(ln_gain_dtype, "gad_layer_norm", "dtype", "gain f64 for an f32 x", E_DTYPE,
     "layer_norm", "f64", gad_layer_norm(F32T(2, 3), F64T(3), NULL, 1e-5))
TBAD(ln_rank0, "gad_layer_norm", "rank 0", "x a scalar", E_SHAPE, "layer_norm", "[]",
     gad_layer_norm(S32(1), NULL, NULL, 1e-5))
TBAD(ln_gain_shape, "gad_layer_norm", "shape", "gain [2] for x [2,3]", E_SHAPE,
     "layer_norm", "[2]", gad_layer_norm(F32T(2, 3), F32T(2), NULL, 1e-5))
TBAD(ln_bias_shape, "gad_layer_norm", "shape", "bias [1,3] for x [2,3]", E_SHAPE,
     "layer_norm", "[1,3]", gad_layer_norm(F32T(2, 3), NULL, F32T(1, 3), 1e-5))
TBAD(ln_eps_nan, "gad_layer_norm", "NaN/Inf", "eps NaN", E_DOMAIN, "layer_norm", "nan",
     gad_layer_norm(F32T(2, 3), NULL, NULL, NAN))
TBAD(ln_eps_inf, "gad_layer_norm", "NaN/Inf", "eps inf", E_DOMAIN, "layer_norm", "inf",
     gad_layer_norm(F32T(2, 3), NULL, NULL, INFINITY))
TBAD(ln_eps_neg, "gad_layer_norm", "value", "eps -1", E_DOMAIN, "layer_norm", "-1",
     gad_layer_norm(F32T(2, 3), NULL, NULL, -1))
GOOD(ln_empty, "gad_layer_norm", "empty", "x [0,3]", "[0,3]",
     SHAPE_IS(gad_layer_norm(F32T(0, 3), F32T(3), F32T(3), 1e-5), 0, 3))
GOOD(ln_const, "gad_layer_norm", "odd", "a constant row with eps 0", "NaN (0/0, no error)",
     all_nan(gad_layer_norm(gad_ones(DIMS(1, 3), GAD_F64), NULL, NULL, 0)))
TBAD(layer_norm_released, "gad_layer_norm", "released", "gain released", E_DOMAIN,
     "layer_norm", "use of a released tensor", gad_layer_norm(F32T(2, 3), dead(), NULL, 1e-5))
TBAD(emb_null, "gad_embedding", "NULL", "indices NULL", E_DOMAIN, "embedding", NULL,
     gad_embedding(F32T(4, 2), NULL))
TBAD(emb_weight_i64, "gad_embedding", "dtype", "weight i64", E_DTYPE, "embedding", "i64",
     gad_embedding(I64T(4, 2), IDX(0)))
TBAD(emb_index_f32, "gad_embedding", "dtype", "indices f32", E_DTYPE, "embedding", "f32",
     gad_embedding(F32T(4, 2), F32T(2)))
TBAD(emb_rank, "gad_embedding", "rank", "weight [4] (not [V,D])", E_SHAPE, "embedding",
     "[4]", gad_embedding(F32T(4), IDX(0)))
TBAD(emb_index, "gad_embedding", "index", "index 4 of 4 rows", E_INDEX, "embedding",
     "index 4", gad_embedding(F32T(4, 2), IDX(1, 4)))
TBAD(emb_negindex, "gad_embedding", "index", "index -1 (no wrapping)", E_INDEX,
     "embedding", "index -1", gad_embedding(F32T(4, 2), IDX(-1)))
TBAD(emb_rank8, "gad_embedding", "rank", "indices of rank 8", E_SHAPE, "embedding",
     "rank 9", gad_embedding(F32T(4, 2), I64T(1, 1, 1, 1, 1, 1, 1, 1)))
GOOD(emb_empty, "gad_embedding", "empty", "indices [0]", "[0,2]",
     SHAPE_IS(gad_embedding(F32T(4, 2), I64T(0)), 0, 2))
GOOD(emb_rank0, "gad_embedding", "rank 0", "a scalar index", "[2]",
     SHAPE_IS(gad_embedding(F32T(4, 2), gad_reshape(IDX(3), NULL, 0)), 2))
TBAD(embedding_released, "gad_embedding", "released", "weight released", E_DOMAIN,
     "embedding", "use of a released tensor", gad_embedding(dead(), I64T(2)))
TBAD(one_hot_null, "gad_one_hot", "NULL", "indices NULL", E_DOMAIN, "one_hot", NULL,
     gad_one_hot(NULL, 3))
TBAD(one_hot_f32, "gad_one_hot", "dtype", "indices f32", E_DTYPE, "one_hot", "f32",
     gad_one_hot(F32T(2), 3))
TBAD(one_hot_depth, "gad_one_hot", "value", "depth -1", E_DOMAIN, "one_hot", "-1",
     gad_one_hot(IDX(0), -1))
TBAD(one_hot_index, "gad_one_hot", "index", "index 3 with depth 3", E_INDEX, "one_hot",
     "index 3", gad_one_hot(IDX(0, 3), 3))
TBAD(one_hot_negindex, "gad_one_hot", "index", "index -1", E_INDEX, "one_hot",
     "index -1", gad_one_hot(IDX(-1), 3))
TBAD(one_hot_rank8, "gad_one_hot", "rank", "indices of rank 8", E_SHAPE, "one_hot",
     "rank 9", gad_one_hot(I64T(1, 1, 1, 1, 1, 1, 1, 1), 2))
TBAD(one_hot_huge, "gad_one_hot", "huge", "indices [4] with depth 2^60", E_SHAPE,
     "one_hot", NULL, gad_one_hot(IDX(0, 1, 2, 3), (int64_t)1 << 60))
TBAD(one_hot_huge2, "gad_one_hot", "huge", "indices [2^40] (a view) with depth 2^40",
     E_SHAPE, "one_hot", NULL,
     gad_one_hot(gad_broadcast_to(gad_reshape(IDX(0), NULL, 0), DIMS(BIG)), BIG))
GOOD(one_hot_empty, "gad_one_hot", "empty", "indices [0] with depth 0", "[0,0]",
     SHAPE_IS(gad_one_hot(I64T(0), 0), 0, 0))
GOOD(one_hot_rank0, "gad_one_hot", "rank 0", "a scalar index", "[depth]",
     SHAPE_IS(gad_one_hot(gad_reshape(IDX(1), NULL, 0), 4), 4))
TBAD(one_hot_released, "gad_one_hot", "released", "indices released", E_DOMAIN, "one_hot",
     "use of a released tensor", gad_one_hot(dead(), 3))
TBAD(clp_null, "gad_categorical_log_prob", "NULL", "actions NULL", E_DOMAIN,
     "categorical_log_prob", NULL, gad_categorical_log_prob(F32T(2, 3), NULL))
TBAD(clp_i64, "gad_categorical_log_prob", "dtype", "logits i64", E_DTYPE,
     "categorical_log_prob", "i64", gad_categorical_log_prob(I64T(2, 3), IDX(0, 1)))
TBAD(clp_actions_f32, "gad_categorical_log_prob", "dtype", "actions f32", E_DTYPE,
     "categorical_log_prob", "f32", gad_categorical_log_prob(F32T(2, 3), F32T(2)))
TBAD(clp_rank, "gad_categorical_log_prob", "rank", "logits [3]", E_SHAPE,
     "categorical_log_prob", "[3]", gad_categorical_log_prob(F32T(3), IDX(0)))
TBAD(clp_shape, "gad_categorical_log_prob", "shape", "actions [3] for logits [2,3]",
     E_SHAPE, "categorical_log_prob", "[3]",
     gad_categorical_log_prob(F32T(2, 3), IDX(0, 1, 2)))
TBAD(clp_index, "gad_categorical_log_prob", "index", "action 3 of 3", E_INDEX,
     "categorical_log_prob", "action 3", gad_categorical_log_prob(F32T(2, 3), IDX(0, 3)))
TBAD(clp_noclass, "gad_categorical_log_prob", "empty", "logits [0,0] (C = 0)", E_SHAPE,
     "categorical_log_prob", "[0,0]", gad_categorical_log_prob(F32T(0, 0), I64T(0)))
GOOD(clp_empty, "gad_categorical_log_prob", "empty", "B = 0", "[0]",
     SHAPE_IS(gad_categorical_log_prob(F32T(0, 3), I64T(0)), 0))
TBAD(categorical_log_prob_released, "gad_categorical_log_prob", "released",
     "logits released", E_DOMAIN, "categorical_log_prob", "use of a released tensor",
     gad_categorical_log_prob(dead(), I64T(2)))
TBAD(cent_null, "gad_categorical_entropy", "NULL", "logits NULL", E_DOMAIN,
     "categorical_entropy", NULL, gad_categorical_entropy(NULL))
TBAD(cent_i64, "gad_categorical_entropy", "dtype", "logits i64", E_DTYPE,
     "categorical_entropy", "i64", gad_categorical_entropy(I64T(2, 3)))
TBAD(cent_rank0, "gad_categorical_entropy", "rank 0", "logits a scalar", E_SHAPE,
     "categorical_entropy", "[]", gad_categorical_entropy(S32(1)))
TBAD(cent_noclass, "gad_categorical_entropy", "empty", "logits [2,0] (C = 0)", E_SHAPE,
     "categorical_entropy", "[2,0]", gad_categorical_entropy(F32T(2, 0)))
GOOD(cent_ninf, "gad_categorical_entropy", "NaN/Inf", "a logit of -inf",
     "NaN (0 * -inf, no error)",
     gad_categorical_entropy(VALS32(-INFINITY, 0)) != NULL)
TBAD(categorical_entropy_released, "gad_categorical_entropy", "released",
     "logits released", E_DOMAIN, "categorical_entropy", "use of a released tensor",
     gad_categorical_entropy(dead()))
TBAD(whiten_null, "gad_whiten", "NULL", "x NULL", E_DOMAIN, "whiten", NULL,
     gad_whiten(NULL))
TBAD(whiten_i64, "gad_whiten", "dtype", "x i64", E_DTYPE, "whiten", "i64",
     gad_whiten(I64T(3)))
GOOD(whiten_const, "gad_whiten", "odd", "a constant x", "zeros (std + 1e-8)",
     all_zero(gad_whiten(gad_ones(DIMS(3), GAD_F64))))
GOOD(whiten_empty, "gad_whiten", "empty", "x [0]", "[0]", SHAPE_IS(gad_whiten(F32T(0)), 0))
TBAD(whiten_released, "gad_whiten", "released", "x released", E_DOMAIN, "whiten",
     "use of a released tensor", gad_whiten(dead()))
TBAD(dropout_null, "gad_dropout", "NULL", "x NULL", E_DOMAIN, "dropout", NULL,
     gad_dropout(NULL, 0.5, g_rng, 1))
TBAD(dropout_i64, "gad_dropout", "dtype", "x i64", E_DTYPE, "dropout", "i64",
     gad_dropout(I64T(3), 0.5, g_rng, 1))
TBAD(dropout_p1, "gad_dropout", "value", "p 1", E_DOMAIN, "dropout", "1",
     gad_dropout(F32T(3), 1, g_rng, 1))
TBAD(dropout_pneg, "gad_dropout", "value", "p -0.1", E_DOMAIN, "dropout", "-0.1",
     gad_dropout(F32T(3), -0.1, g_rng, 1))
TBAD(dropout_pnan, "gad_dropout", "NaN/Inf", "p NaN", E_DOMAIN, "dropout", "nan",
     gad_dropout(F32T(3), NAN, g_rng, 0))
TBAD(dropout_norng, "gad_dropout", "NULL", "rng NULL while training with p 0.5",
     E_DOMAIN, "dropout", "NULL", gad_dropout(F32T(3), 0.5, NULL, 1))
ROW(dropout_eval, "gad_dropout", "NULL", "rng NULL in evaluation", "x itself", E_OK, "",
    NULL, 0,
    gad_tensor *x = F32T(3);
    return gad_dropout(x, 0.5, NULL, 0) == x;)
GOOD(dropout_p0, "gad_dropout", "value", "p 0 while training, rng NULL", "x",
     gad_dropout(F32T(3), 0, NULL, 1) != NULL)
GOOD(dropout_empty, "gad_dropout", "empty", "x [0]", "[0]",
     SHAPE_IS(gad_dropout(F32T(0), 0.5, g_rng, 1), 0))
TBAD(dropout_released, "gad_dropout", "released", "x released", E_DOMAIN, "dropout",
     "use of a released tensor", gad_dropout(dead(), 0.5, NULL, 0))

#define INIT_ROWS(name, rop)                                                   \
    TBAD(name##_norng, "gad_init_" #name, "NULL", "rng NULL", E_DOMAIN,        \
         "init_" #name, NULL, gad_init_##name(NULL, 3, 4, 1))                  \
    TBAD(name##_fan0, "gad_init_" #name, "value", "fan_in 0", E_DOMAIN,        \
         "init_" #name, "fan_in 0", gad_init_##name(g_rng, 0, 4, 1))           \
    TBAD(name##_fanneg, "gad_init_" #name, "value", "fan_out -1", E_DOMAIN,    \
         "init_" #name, "fan_out -1", gad_init_##name(g_rng, 3, -1, 1))        \
    TBAD(name##_gain_nan, "gad_init_" #name, "NaN/Inf", "gain NaN", E_DOMAIN,  \
         "init_" #name, "nan", gad_init_##name(g_rng, 3, 4, NAN))              \
    TBAD(name##_gain_inf, "gad_init_" #name, "NaN/Inf", "gain inf", E_DOMAIN,  \
         "init_" #name, "inf", gad_init_##name(g_rng, 3, 4, INFINITY))         \
    TBAD(name##_gain_neg, "gad_init_" #name, "value", "gain -1", E_DOMAIN,     \
         "init_" #name, "-1", gad_init_##name(g_rng, 3, 4, -1))                \
    TBAD(name##_huge, "gad_init_" #name, "huge", "[2^40,2^40]", E_SHAPE,       \
         "init_" #name, "1099511627776", gad_init_##name(g_rng, BIG, BIG, 1))  \
    TBAD(name##_huge2, "gad_init_" #name, "huge",                              \
         "[2^31,2^31] (2^62 elements)", E_SHAPE, "init_" #name, NULL,          \
         gad_init_##name(g_rng, (int64_t)1 << 31, (int64_t)1 << 31, 1))        \
    GOOD(name##_gain0, "gad_init_" #name, "value", "gain 0", "zeros",          \
         all_zero(gad_init_##name(g_rng, 2, 2, 0)))

INIT_ROWS(xavier_uniform, "rng_uniform")
INIT_ROWS(xavier_normal, "rng_normal")
INIT_ROWS(kaiming_uniform, "rng_uniform")
INIT_ROWS(kaiming_normal, "rng_normal")

AREA("Fused kernels")

TBAD(scan_null, "gad_gated_scan", "NULL", "b NULL", E_DOMAIN, "gated_scan", NULL,
     gad_gated_scan(F32T(1, 2, 3), NULL))
TBAD(scan_i64, "gad_gated_scan", "dtype", "a i64", E_DTYPE, "gated_scan", "i64",
     gad_gated_scan(I64T(1, 2, 3), I64T(1, 2, 3)))
TBAD(scan_mixed, "gad_gated_scan", "dtype", "a f32, b f64", E_DTYPE, "gated_scan",
     "f64", gad_gated_scan(F32T(1, 2, 3), F64T(1, 2, 3)))
TBAD(scan_rank, "gad_gated_scan", "rank", "a [2,3] (not [B,T,D])", E_SHAPE,
     "gated_scan", "[2,3]", gad_gated_scan(F32T(2, 3), F32T(2, 3)))
TBAD(scan_shape, "gad_gated_scan", "shape", "a [1,2,3] with b [1,3,3]", E_SHAPE,
     "gated_scan", "[1,3,3]", gad_gated_scan(F32T(1, 2, 3), F32T(1, 3, 3)))
GOOD(scan_empty, "gad_gated_scan", "empty", "T = 0", "[1,0,3]",
     SHAPE_IS(gad_gated_scan(F32T(1, 0, 3), F32T(1, 0, 3)), 1, 0, 3))
GOOD(scan_empty_b, "gad_gated_scan", "empty", "B = 0 and D = 0", "an empty tensor",
     SHAPE_IS(gad_gated_scan(F32T(0, 2, 3), F32T(0, 2, 3)), 0, 2, 3) &&
     SHAPE_IS(gad_gated_scan(F64T(1, 2, 0), F64T(1, 2, 0)), 1, 2, 0))
TBAD(rms_null, "gad_rms_norm", "NULL", "x NULL", E_DOMAIN, "rms_norm", NULL,
     gad_rms_norm(NULL, 1e-6))
TBAD(rms_i64, "gad_rms_norm", "dtype", "x i64", E_DTYPE, "rms_norm", "i64",
     gad_rms_norm(I64T(2, 3), 1e-6))
TBAD(rms_rank0, "gad_rms_norm", "rank 0", "x a scalar", E_SHAPE, "rms_norm", "scalar",
     gad_rms_norm(S32(1), 1e-6))
TBAD(rms_eps_nan, "gad_rms_norm", "NaN/Inf", "eps NaN", E_DOMAIN, "rms_norm", "nan",
     gad_rms_norm(F32T(2, 3), NAN))
TBAD(rms_eps_neg, "gad_rms_norm", "value", "eps -1", E_DOMAIN, "rms_norm", "-1",
     gad_rms_norm(F32T(2, 3), -1))
GOOD(rms_empty, "gad_rms_norm", "empty", "x [2,0]", "[2,0]",
     SHAPE_IS(gad_rms_norm(F32T(2, 0), 1e-6), 2, 0))
GOOD(rms_zero, "gad_rms_norm", "odd", "a zero row with eps 0", "NaN (0/0, no error)",
     all_nan(gad_rms_norm(gad_zeros(DIMS(1, 2), GAD_F32), 0)))
TBAD(mce_null, "gad_masked_ce", "NULL", "mask NULL", E_DOMAIN, "masked_ce", NULL,
     gad_masked_ce(F32T(2, 3), IDX(0, 1), NULL))
TBAD(mce_i64, "gad_masked_ce", "dtype", "logits i64", E_DTYPE, "masked_ce", "i64",
     gad_masked_ce(I64T(2, 3), IDX(0, 1), I64T(2)))
TBAD(mce_mask_dtype, "gad_masked_ce", "dtype", "mask f64 for f32 logits", E_DTYPE,
     "masked_ce", "f64", gad_masked_ce(F32T(2, 3), IDX(0, 1), F64T(2)))
TBAD(mce_targets_f32, "gad_masked_ce", "dtype", "targets f32", E_DTYPE, "masked_ce",
     "f32", gad_masked_ce(F32T(2, 3), F32T(2), F32T(2)))
TBAD(mce_rank, "gad_masked_ce", "rank", "logits [2,3,4]", E_SHAPE, "masked_ce",
     "[2,3,4]", gad_masked_ce(F32T(2, 3, 4), IDX(0, 1), F32T(2)))
TBAD(mce_count, "gad_masked_ce", "shape", "3 targets for N = 2", E_SHAPE, "masked_ce",
     "(3)", gad_masked_ce(F32T(2, 3), IDX(0, 1, 2), F32T(2)))
TBAD(mce_index, "gad_masked_ce", "index", "target 3 of 3 on a weighted row", E_INDEX,
     "masked_ce", "target 3", gad_masked_ce(F32T(2, 3), IDX(0, 3), VALS32(1, 1)))
GOOD(mce_unweighted, "gad_masked_ce", "index",
     "target 99 on a row of weight 0 (never read)", "the loss of the other rows",
     gad_masked_ce(F32T(2, 3), IDX(0, 99), VALS32(1, 0)) != NULL)
GOOD(mce_nan, "gad_masked_ce", "NaN/Inf", "a NaN logit on a weighted row",
     "NaN (no error)", isnan(at(gad_masked_ce(gad_reshape(VALS32(NAN, 0), DIMS(1, 2)),
                                              IDX(0), VALS32(1)), 0)))
GOOD(mce_inf_mask, "gad_masked_ce", "NaN/Inf", "a weight of inf", "NaN (no error)",
     isnan(at(gad_masked_ce(F32T(1, 2), IDX(0), VALS32(INFINITY)), 0)))
GOOD(mce_noclass, "gad_masked_ce", "empty", "V = 0 with every weight 0", "0",
     at(gad_masked_ce(F32T(2, 0), IDX(0, 0), VALS32(0, 0)), 0) == 0)
TBAD(mce_noclass_w, "gad_masked_ce", "empty", "V = 0 with a weighted row", E_INDEX,
     "masked_ce", "target 0", gad_masked_ce(F32T(1, 0), IDX(0), VALS32(1)))
GOOD(mce_allzero, "gad_masked_ce", "odd", "every weight 0", "0",
     at(gad_masked_ce(F32T(2, 3), IDX(0, 1), VALS32(0, 0)), 0) == 0)
GOOD(mce_empty, "gad_masked_ce", "empty", "N = 0", "0",
     at(gad_masked_ce(F32T(0, 3), I64T(0), F32T(0)), 0) == 0)
/* issue 29: bf16 logits with an f32 mask */
TBAD(half_mce_mixed, "gad_masked_ce", "dtype", "bf16 logits, f32 mask", E_DTYPE,
     "masked_ce", "mixed dtypes",
     gad_masked_ce(gad_cast(F32T(2, 3), GAD_BF16), IDX(0, 1), F32T(2)))
TBAD(embf_null, "gad_embedding_fused", "NULL", "table NULL", E_DOMAIN,
     "embedding_fused", NULL, gad_embedding_fused(NULL, IDX(0)))
TBAD(embf_i64, "gad_embedding_fused", "dtype", "table i64", E_DTYPE, "embedding_fused",
     "i64", gad_embedding_fused(I64T(4, 2), IDX(0)))
TBAD(embf_idx_f32, "gad_embedding_fused", "dtype", "idx f32", E_DTYPE,
     "embedding_fused", "f32", gad_embedding_fused(F32T(4, 2), F32T(1)))
TBAD(embf_rank, "gad_embedding_fused", "rank", "table [4,2,1]", E_SHAPE,
     "embedding_fused", "[4,2,1]", gad_embedding_fused(F32T(4, 2, 1), IDX(0)))
TBAD(embf_index, "gad_embedding_fused", "index", "index 4 of 4 rows", E_INDEX,
     "embedding_fused", "index 4", gad_embedding_fused(F32T(4, 2), IDX(2, 4)))
TBAD(embf_negindex, "gad_embedding_fused", "index", "index -2 (no wrapping)", E_INDEX,
     "embedding_fused", "index -2", gad_embedding_fused(F32T(4, 2), IDX(-2)))
TBAD(embf_rank8, "gad_embedding_fused", "rank", "idx of rank 8", E_SHAPE,
     "embedding_fused", "rank 8", gad_embedding_fused(F32T(4, 2), I64T(1, 1, 1, 1, 1, 1, 1, 1)))
GOOD(embf_empty, "gad_embedding_fused", "empty", "idx [0]", "[0,2]",
     SHAPE_IS(gad_embedding_fused(F32T(4, 2), I64T(0)), 0, 2))
GOOD(embf_d0, "gad_embedding_fused", "empty", "table [4,0] (D = 0)", "[2,0]",
     SHAPE_IS(gad_embedding_fused(F32T(4, 0), IDX(1, 3)), 2, 0))
TBAD(helix_null_x, "gad_helix_block", "NULL", "x NULL", E_DOMAIN, "helix_block", NULL,
     gad_helix_block(NULL, &(gad_helix_weights){0}, 1e-6))
TBAD(helix_null_w, "gad_helix_block", "NULL", "w NULL", E_DOMAIN, "helix_block", NULL,
     gad_helix_block(F32T(1, 2, 2), NULL, 1e-6))
ROW(helix_null_wa, "gad_helix_block", "NULL", "w->wa NULL", "NULL", E_DOMAIN,
    "helix_block", NULL, 0,
    gad_helix_weights w = helix_w();
    w.wa = NULL;
    return gad_helix_block(F32T(1, 2, 2), &w, 1e-6) == NULL;)
ROW(helix_i64, "gad_helix_block", "dtype", "x i64", "NULL", E_DTYPE, "helix_block",
    "i64", 0,
    gad_helix_weights w = helix_w();
    return gad_helix_block(I64T(1, 2, 2), &w, 1e-6) == NULL;)
ROW(helix_mixed, "gad_helix_block", "dtype", "wo f64 for an f32 x", "NULL", E_DTYPE,
    "helix_block", "f64", 0,
    gad_helix_weights w = helix_w();
    w.wo = F64T(2, 2);
    return gad_helix_block(F32T(1, 2, 2), &w, 1e-6) == NULL;)
ROW(helix_rank, "gad_helix_block", "rank", "x [2,2] (not [B,T,D])", "NULL", E_SHAPE,
    "helix_block", "[2,2]", 0,
    gad_helix_weights w = helix_w();
    return gad_helix_block(F32T(2, 2), &w, 1e-6) == NULL;)
ROW(helix_wshape, "gad_helix_block", "shape", "wa [2,2] (needs [D+1,D] = [3,2])",
    "NULL", E_SHAPE, "helix_block", "wa must be [3,2]", 0,
    gad_helix_weights w = helix_w();
    w.wa = F32T(2, 2);
    return gad_helix_block(F32T(1, 2, 2), &w, 1e-6) == NULL;)
ROW(helix_gshape, "gad_helix_block", "shape", "g3 [3] for D = 2", "NULL", E_SHAPE,
    "helix_block", "g3", 0,
    gad_helix_weights w = helix_w();
    w.g3 = F32T(3);
    return gad_helix_block(F32T(1, 2, 2), &w, 1e-6) == NULL;)
ROW(helix_eps, "gad_helix_block", "NaN/Inf", "eps NaN", "NULL", E_DOMAIN,
    "helix_block", "nan", 0,
    gad_helix_weights w = helix_w();
    return gad_helix_block(F32T(1, 2, 2), &w, NAN) == NULL;)
ROW(helix_d0, "gad_helix_block", "empty", "D = 0", "[1,2,0]", E_OK, "", NULL, 0,
    gad_helix_weights w = {F32T(1, 0), F32T(0, 0), F32T(0, 0), F32T(0, 0), F32T(0, 0),
                           F32T(0), F32T(0), F32T(0), F32T(0)};
    return SHAPE_IS(gad_helix_block(F32T(1, 2, 0), &w, 1e-6), 1, 2, 0);)
ROW(helix_empty, "gad_helix_block", "empty", "T = 0", "[1,0,2]", E_OK, "", NULL, 0,
    gad_helix_weights w = helix_w();
    return SHAPE_IS(gad_helix_block(F32T(1, 0, 2), &w, 1e-6), 1, 0, 2);)

AREA("Convolution")

/* conv (issue 28): PyTorch's errors for impossible geometries */
TBAD(conv2d_null, "gad_conv2d", "NULL", "x NULL", E_DOMAIN, "conv2d", NULL,
     gad_conv2d(NULL, F32T(2, 3, 3, 3), NULL, NULL))
TBAD(conv2d_i64, "gad_conv2d", "dtype", "x i64", E_DTYPE, "conv2d", "i64",
     gad_conv2d(I64T(1, 3, 5, 5), I64T(2, 3, 3, 3), NULL, NULL))
TBAD(conv2d_mixed, "gad_conv2d", "dtype", "x f32, weight f64", E_DTYPE, "conv2d", "f64",
     gad_conv2d(F32T(1, 3, 5, 5), F64T(2, 3, 3, 3), NULL, NULL))
TBAD(conv2d_rank, "gad_conv2d", "rank", "x [5,5]", E_SHAPE, "conv2d", "[5,5]",
     gad_conv2d(F32T(5, 5), F32T(2, 3, 3, 3), NULL, NULL))
TBAD(conv2d_wrank, "gad_conv2d", "rank", "weight [2,3,3]", E_SHAPE, "conv2d",
     "4-dimensional weight", gad_conv2d(F32T(1, 3, 5, 5), F32T(2, 3, 3), NULL, NULL))
TBAD(conv2d_channels, "gad_conv2d", "shape", "x 3 channels, weight [2,4,3,3]", E_SHAPE,
     "conv2d", "to have 4 channels, but got 3",
     gad_conv2d(F32T(1, 3, 5, 5), F32T(2, 4, 3, 3), NULL, NULL))
TBAD(conv2d_groups, "gad_conv2d", "shape", "groups 2, weight [3,2,3,3]", E_SHAPE, "conv2d",
     "divisible by 2", gad_conv2d(F32T(1, 4, 5, 5), F32T(3, 2, 3, 3), NULL, &(gad_conv_opts){.groups = 2}))
TBAD(conv2d_kernel, "gad_conv2d", "shape", "kernel 5x5 on a 4x4 input", E_SHAPE, "conv2d",
     "can't be greater than actual input size",
     gad_conv2d(F32T(1, 1, 4, 4), F32T(1, 1, 5, 5), NULL, NULL))
TBAD(conv2d_bias, "gad_conv2d", "shape", "bias [3] for 2 output channels", E_SHAPE, "conv2d",
     "bias", gad_conv2d(F32T(1, 3, 5, 5), F32T(2, 3, 3, 3), F32T(3), NULL))
TBAD(conv2d_same_stride, "gad_conv2d", "value", "padding \"same\" with stride 2", E_DOMAIN,
     "conv2d", "strided", gad_conv2d(F32T(1, 1, 5, 5), F32T(1, 1, 3, 3), NULL, &(gad_conv_opts){.padding_mode = GAD_CONV_PAD_SAME, .stride = {2, 1}}))
TBAD(conv2d_negpad, "gad_conv2d", "value", "padding -1", E_DOMAIN, "conv2d", "negative",
     gad_conv2d(F32T(1, 1, 5, 5), F32T(1, 1, 3, 3), NULL, &(gad_conv_opts){.padding = {-1, 0}}))
GOOD(conv2d_empty, "gad_conv2d", "empty", "batch 0", "[0,2,3,3]",
     SHAPE_IS(gad_conv2d(F32T(0, 3, 5, 5), F32T(2, 3, 3, 3), NULL, NULL), 0, 2, 3, 3))
GOOD(conv2d_unbatched, "gad_conv2d", "odd", "x [3,5,5] (unbatched)", "[2,3,3]",
     SHAPE_IS(gad_conv2d(F32T(3, 5, 5), F32T(2, 3, 3, 3), NULL, NULL), 2, 3, 3))
TBAD(conv1d_null, "gad_conv1d", "NULL", "weight NULL", E_DOMAIN, "conv1d", NULL,
     gad_conv1d(F32T(1, 2, 5), NULL, NULL, NULL))
TBAD(conv1d_kernel, "gad_conv1d", "shape", "kernel 4 on length 3", E_SHAPE, "conv1d",
     "can't be greater", gad_conv1d(F32T(1, 2, 3), F32T(1, 2, 4), NULL, NULL))
GOOD(conv1d_empty, "gad_conv1d", "empty", "batch 0", "[0,1,3]",
     SHAPE_IS(gad_conv1d(F32T(0, 2, 5), F32T(1, 2, 3), NULL, NULL), 0, 1, 3))
TBAD(conv3d_null, "gad_conv3d", "NULL", "x NULL", E_DOMAIN, "conv3d", NULL,
     gad_conv3d(NULL, F32T(1, 1, 1, 1, 1), NULL, NULL))
TBAD(conv3d_rank, "gad_conv3d", "rank", "weight [1,1,1,1]", E_SHAPE, "conv3d",
     "5-dimensional weight", gad_conv3d(F32T(1, 1, 2, 2, 2), F32T(1, 1, 1, 1), NULL, NULL))
GOOD(conv3d_empty, "gad_conv3d", "empty", "batch 0", "[0,1,2,2,2]",
     SHAPE_IS(gad_conv3d(F32T(0, 1, 2, 2, 2), F32T(1, 1, 1, 1, 1), NULL, NULL), 0, 1, 2, 2,
              2))
TBAD(convt2d_null, "gad_conv_transpose2d", "NULL", "x NULL", E_DOMAIN, "conv_transpose2d",
     NULL, gad_conv_transpose2d(NULL, F32T(2, 3, 3, 3), NULL, NULL))
TBAD(convt2d_outpad, "gad_conv_transpose2d", "value", "output_padding 1 with stride 1",
     E_DOMAIN, "conv_transpose2d", "output padding must be smaller",
     gad_conv_transpose2d(F32T(1, 2, 3, 3), F32T(2, 3, 3, 3), NULL, &(gad_conv_opts){.output_padding = {1, 0}}))
TBAD(convt2d_channels, "gad_conv_transpose2d", "shape", "x 3 channels, weight [2,3,3,3]",
     E_SHAPE, "conv_transpose2d", "channels",
     gad_conv_transpose2d(F32T(1, 3, 3, 3), F32T(2, 3, 3, 3), NULL, NULL))
TBAD(convt2d_same, "gad_conv_transpose2d", "value", "padding mode \"same\"", E_DOMAIN,
     "conv_transpose2d", "explicit padding only",
     gad_conv_transpose2d(F32T(1, 2, 3, 3), F32T(2, 3, 3, 3), NULL, &(gad_conv_opts){.padding_mode = GAD_CONV_PAD_SAME, .stride = {2, 1}}))
GOOD(convt2d_empty, "gad_conv_transpose2d", "empty", "batch 0", "[0,3,5,5]",
     SHAPE_IS(gad_conv_transpose2d(F32T(0, 2, 3, 3), F32T(2, 3, 3, 3), NULL, NULL), 0, 3, 5,
              5))
TBAD(convt1d_small, "gad_conv_transpose1d", "value", "padding 2 leaves no output", E_SHAPE,
     "conv_transpose1d", "too small",
     gad_conv_transpose1d(F32T(1, 1, 1), F32T(1, 1, 1), NULL,
                          &(gad_conv_opts){.padding = {2}}))
GOOD(convt1d_empty, "gad_conv_transpose1d", "empty", "batch 0", "[0,1,4]",
     SHAPE_IS(gad_conv_transpose1d(F32T(0, 1, 2), F32T(1, 1, 3), NULL, NULL), 0, 1, 4))
TBAD(convt3d_null, "gad_conv_transpose3d", "NULL", "weight NULL", E_DOMAIN,
     "conv_transpose3d", NULL, gad_conv_transpose3d(F32T(1, 1, 2, 2, 2), NULL, NULL, NULL))
GOOD(convt3d_empty, "gad_conv_transpose3d", "empty", "batch 0", "[0,1,3,3,3]",
     SHAPE_IS(gad_conv_transpose3d(F32T(0, 1, 2, 2, 2), F32T(1, 1, 2, 2, 2), NULL, NULL), 0, 1,
              3, 3, 3))
/* ---- normalization (issue 28): batch, group and instance norm */
AREA("Normalization")

TBAD(bn_null, "gad_batch_norm", "NULL", "x NULL", E_DOMAIN, "batch_norm", NULL,
     gad_batch_norm(NULL, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(bn_i64, "gad_batch_norm", "dtype", "x i64", E_DTYPE, "batch_norm", "i64",
     gad_batch_norm(I64T(2, 3), NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(bn_rank1, "gad_batch_norm", "rank", "x [4] (not [N, C, ...])", E_SHAPE, "batch_norm", "[4]",
     gad_batch_norm(F32T(4), NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(bn_w_shape, "gad_batch_norm", "shape", "weight [2] for x [4,3]", E_SHAPE, "batch_norm",
     "weight must be [3]", gad_batch_norm(F32T(4, 3), NULL, NULL, F32T(2), NULL, 1, 0.1, 1e-5))
TBAD(bn_b_dtype, "gad_batch_norm", "dtype", "bias f64 for an f32 x", E_DTYPE, "batch_norm", "f64",
     gad_batch_norm(F32T(4, 3), NULL, NULL, NULL, F64T(3), 1, 0.1, 1e-5))
TBAD(bn_rm_shape, "gad_batch_norm", "shape", "running_mean [4] for x [4,3]", E_SHAPE,
     "batch_norm", "running_mean",
     gad_batch_norm(F32T(4, 3), F32T(4), F32T(3), NULL, NULL, 1, 0.1, 1e-5))
TBAD(bn_rm_alone, "gad_batch_norm", "NULL", "running_mean without running_var", E_DOMAIN,
     "batch_norm", "go together", gad_batch_norm(F32T(4, 3), F32T(3), NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(bn_eval_norun, "gad_batch_norm", "NULL", "evaluation without running statistics", E_DOMAIN,
     "batch_norm", "evaluation mode", gad_batch_norm(F32T(4, 3), NULL, NULL, NULL, NULL, 0, 0.1, 1e-5))
TBAD(bn_rm_leaf, "gad_batch_norm", "value", "running_mean a leaf", E_DOMAIN, "batch_norm",
     "on the tape", gad_batch_norm(F32T(4, 3), LEAF32(3), F32T(3), NULL, NULL, 1, 0.1, 1e-5))
TBAD(bn_one_value, "gad_batch_norm", "shape", "x [1,3] in training", E_SHAPE, "batch_norm",
     "more than 1 value", gad_batch_norm(F32T(1, 3), NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(bn_eps_nan, "gad_batch_norm", "NaN/Inf", "eps NaN", E_DOMAIN, "batch_norm", "nan",
     gad_batch_norm(F32T(4, 3), NULL, NULL, NULL, NULL, 1, 0.1, NAN))
TBAD(bn_eps_neg, "gad_batch_norm", "value", "eps -1", E_DOMAIN, "batch_norm", "-1",
     gad_batch_norm(F32T(4, 3), NULL, NULL, NULL, NULL, 1, 0.1, -1))
TBAD(bn_mom_inf, "gad_batch_norm", "NaN/Inf", "momentum inf with running statistics", E_DOMAIN,
     "batch_norm", "momentum", gad_batch_norm(F32T(4, 3), F32T(3), F32T(3), NULL, NULL, 1, INFINITY, 1e-5))
GOOD(bn_empty, "gad_batch_norm", "empty", "x [0,3] in training", "[0,3], running statistics unchanged",
     SHAPE_IS(gad_batch_norm(F32T(0, 3), gad_zeros(DIMS(3), GAD_F32), gad_ones(DIMS(3), GAD_F32),
                             NULL, NULL, 1, 0.1, 1e-5), 0, 3))
GOOD(bn_eval_one, "gad_batch_norm", "odd", "x [1,3] in evaluation", "[1,3] (no batch statistics)",
     SHAPE_IS(gad_batch_norm(F32T(1, 3), gad_zeros(DIMS(3), GAD_F32), gad_ones(DIMS(3), GAD_F32),
                             NULL, NULL, 0, 0.1, 1e-5), 1, 3))
TBAD(gn_null, "gad_group_norm", "NULL", "x NULL", E_DOMAIN, "group_norm", NULL,
     gad_group_norm(NULL, 1, NULL, NULL, 1e-5))
TBAD(gn_i64, "gad_group_norm", "dtype", "x i64", E_DTYPE, "group_norm", "i64",
     gad_group_norm(I64T(2, 4, 3), 2, NULL, NULL, 1e-5))
TBAD(gn_groups, "gad_group_norm", "value", "groups 3 for 4 channels", E_SHAPE, "group_norm",
     "groups = 3", gad_group_norm(F32T(2, 4, 3), 3, NULL, NULL, 1e-5))
TBAD(gn_groups0, "gad_group_norm", "value", "groups 0", E_SHAPE, "group_norm", "groups = 0",
     gad_group_norm(F32T(2, 4, 3), 0, NULL, NULL, 1e-5))
TBAD(gn_w_shape, "gad_group_norm", "shape", "weight [2] for 4 channels", E_SHAPE, "group_norm",
     "weight must be [4]", gad_group_norm(F32T(2, 4, 3), 2, F32T(2), NULL, 1e-5))
GOOD(gn_empty, "gad_group_norm", "empty", "x [0,4,3]", "[0,4,3]",
     SHAPE_IS(gad_group_norm(F32T(0, 4, 3), 2, NULL, NULL, 1e-5), 0, 4, 3))
TBAD(gn_eps_nan, "gad_group_norm", "NaN/Inf", "eps NaN", E_DOMAIN, "group_norm", "nan",
     gad_group_norm(F32T(2, 4, 3), 2, NULL, NULL, NAN))
TBAD(gn_rank1, "gad_group_norm", "rank", "x [4]", E_SHAPE, "group_norm", "[4]",
     gad_group_norm(F32T(4), 1, NULL, NULL, 1e-5))
TBAD(in_null, "gad_instance_norm", "NULL", "x NULL", E_DOMAIN, "instance_norm", NULL,
     gad_instance_norm(NULL, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(in_spatial, "gad_instance_norm", "shape", "x [2,3] (one spatial element)", E_SHAPE,
     "instance_norm", "spatial", gad_instance_norm(F32T(2, 3), NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(in_eval_norun, "gad_instance_norm", "NULL", "use_input_stats 0 without running statistics",
     E_DOMAIN, "instance_norm", "use_input_stats",
     gad_instance_norm(F32T(2, 3, 4), NULL, NULL, NULL, NULL, 0, 0.1, 1e-5))
TBAD(in_b_dtype, "gad_instance_norm", "dtype", "bias f64 for an f32 x", E_DTYPE, "instance_norm",
     "f64", gad_instance_norm(F32T(2, 3, 4), NULL, NULL, NULL, F64T(3), 1, 0.1, 1e-5))
TBAD(in_i64, "gad_instance_norm", "dtype", "x i64", E_DTYPE, "instance_norm", "i64",
     gad_instance_norm(I64T(2, 3, 4), NULL, NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(in_eps_nan, "gad_instance_norm", "NaN/Inf", "eps NaN", E_DOMAIN, "instance_norm", "nan",
     gad_instance_norm(F32T(2, 3, 4), NULL, NULL, NULL, NULL, 1, 0.1, NAN))
TBAD(in_eps_neg, "gad_instance_norm", "value", "eps -1", E_DOMAIN, "instance_norm", "-1",
     gad_instance_norm(F32T(2, 3, 4), NULL, NULL, NULL, NULL, 1, 0.1, -1))
TBAD(in_mom_nan, "gad_instance_norm", "NaN/Inf", "momentum NaN with running statistics",
     E_DOMAIN, "instance_norm", "momentum",
     gad_instance_norm(F32T(2, 3, 4), F32T(3), F32T(3), NULL, NULL, 1, NAN, 1e-5))
TBAD(in_run_half, "gad_instance_norm", "NULL", "running_mean without running_var", E_DOMAIN,
     "instance_norm", "together",
     gad_instance_norm(F32T(2, 3, 4), F32T(3), NULL, NULL, NULL, 1, 0.1, 1e-5))
TBAD(in_w_shape, "gad_instance_norm", "shape", "weight [2] for 3 channels", E_SHAPE,
     "instance_norm", "weight", gad_instance_norm(F32T(2, 3, 4), NULL, NULL, F32T(2), NULL, 1,
                                                   0.1, 1e-5))
GOOD(in_empty, "gad_instance_norm", "empty", "x [0,3,4]", "[0,3,4]",
     SHAPE_IS(gad_instance_norm(F32T(0, 3, 4), NULL, NULL, NULL, NULL, 1, 0.1, 1e-5), 0, 3, 4))
/* ---- group norm's fused kernel (norm.group_fwd, group_bwd) */
GOOD(gn_empty_rows, "gad_group_norm", "empty", "x [2,4,0] (no values per group)", "[2,4,0]",
     SHAPE_IS(gad_group_norm(F32T(2, 4, 0), 2, NULL, NULL, 1e-5), 2, 4, 0))
GOOD(gn_groups_c, "gad_group_norm", "value", "groups = C = 4 (instance norm's)", "[2,4,3]",
     SHAPE_IS(gad_group_norm(F32T(2, 4, 3), 4, NULL, NULL, 1e-5), 2, 4, 3))
GOOD(gn_nan, "gad_group_norm", "NaN/Inf", "x [1,2,2] holding a NaN, 1 group", "all NaN",
     all_nan(gad_group_norm(gad_reshape(VALS32(1, NAN, 2, 3), DIMS(1, 2, 2)), 1, NULL, NULL,
                            1e-5)))
GOOD(gn_inf, "gad_group_norm", "NaN/Inf", "x [1,2,2] holding an Inf, 1 group", "all NaN",
     all_nan(gad_group_norm(gad_reshape(VALS32(1, INFINITY, 2, 3), DIMS(1, 2, 2)), 1, NULL,
                            NULL, 1e-5)))

AREA("Optimizers")

ROW(sgd_neg_n, "gad_sgd_new", "value", "n = -1", "NULL", E_DOMAIN, "sgd_new", "-1", 0,
    gad_tensor *p = LEAF32(2);
    return gad_sgd_new(&p, -1, NULL) == NULL;)
TBAD(sgd_released, "gad_sgd_new", "released", "params[0] released", E_DOMAIN, "sgd_new",
     "params[0]: use of a released tensor", gad_sgd_new((gad_tensor *[]){dead()}, 1, NULL))
TBAD(sgd_noparams, "gad_sgd_new", "NULL", "params NULL with n = 1", E_DOMAIN, "sgd_new",
     "NULL", gad_sgd_new(NULL, 1, NULL))
TBAD(sgd_null_param, "gad_sgd_new", "NULL", "params[0] NULL", E_DOMAIN, "sgd_new",
     "params[0]", gad_sgd_new((gad_tensor *[]){NULL}, 1, NULL))
TBAD(sgd_i64, "gad_sgd_new", "dtype", "an i64 parameter", E_DTYPE, "sgd_new", "i64",
     gad_sgd_new((gad_tensor *[]){I64T(2)}, 1, NULL))
TBAD(sgd_nonleaf, "gad_sgd_new", "non-leaf", "a parameter that is not a leaf", E_DOMAIN,
     "sgd_new", "not a leaf", gad_sgd_new((gad_tensor *[]){tracked()}, 1, NULL))
TBAD(sgd_const, "gad_sgd_new", "non-leaf", "a constant parameter", E_DOMAIN, "sgd_new",
     "not a leaf", gad_sgd_new((gad_tensor *[]){F32T(2)}, 1, NULL))
ROW(sgd_dup, "gad_sgd_new", "value", "the same parameter twice", "NULL", E_DOMAIN,
    "sgd_new", "same tensor", 0,
    gad_tensor *p = LEAF32(2);
    return gad_sgd_new((gad_tensor *[]){p, p}, 2, NULL) == NULL;)
ROW(sgd_lr_nan, "gad_sgd_new", "NaN/Inf", "lr NaN", "NULL", E_DOMAIN, "sgd_new", "nan", 0,
    gad_tensor *p = LEAF32(2);
    return gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = NAN}) == NULL;)
ROW(sgd_lr_neg, "gad_sgd_new", "value", "lr -1", "NULL", E_DOMAIN, "sgd_new", "-1", 0,
    gad_tensor *p = LEAF32(2);
    return gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = -1}) == NULL;)
ROW(sgd_mom_neg, "gad_sgd_new", "value", "momentum -0.5", "NULL", E_DOMAIN, "sgd_new",
    "-0.5", 0,
    gad_tensor *p = LEAF32(2);
    return gad_sgd_new(&p, 1, &(gad_sgd_opts){.momentum = -0.5}) == NULL;)
ROW(sgd_nesterov, "gad_sgd_new", "value", "nesterov without momentum", "NULL", E_DOMAIN,
    "sgd_new", "nesterov", 0,
    gad_tensor *p = LEAF32(2);
    return gad_sgd_new(&p, 1, &(gad_sgd_opts){.nesterov = 1}) == NULL;)
ROW(sgd_wd_inf, "gad_sgd_new", "NaN/Inf", "weight_decay inf", "NULL", E_DOMAIN,
    "sgd_new", "inf", 0,
    gad_tensor *p = LEAF32(2);
    return gad_sgd_new(&p, 1, &(gad_sgd_opts){.weight_decay = INFINITY}) == NULL;)
ROW(sgd_nomem, "gad_sgd_new", "memory", "the allocator fails", "NULL", E_MEM, "sgd_new",
    NULL, 0,
    gad_tensor *p = LEAF32(2);
    failing_allocator(1);
    gad_optim *o = gad_sgd_new(&p, 1, NULL);
    failing_allocator(0);
    gad_optim_free(o);
    return o == NULL;)
ROW(sgd_empty, "gad_sgd_new", "empty", "n = 0, params NULL", "an optimizer of nothing",
    E_OK, "", NULL, 0,
    gad_optim *o = gad_sgd_new(NULL, 0, NULL);
    int ok = o && gad_optim_step(o, NULL) == GAD_OK && gad_optim_steps(o) == 1;
    gad_optim_free(o);
    return ok;)
TBAD(adamw_noparams, "gad_adamw_new", "NULL", "params NULL with n = 2", E_DOMAIN,
     "adamw_new", "NULL", gad_adamw_new(NULL, 2, NULL))
TBAD(adamw_i64, "gad_adamw_new", "dtype", "an i64 parameter", E_DTYPE, "adamw_new",
     "i64", gad_adamw_new((gad_tensor *[]){I64T(2)}, 1, NULL))
TBAD(adamw_nonleaf, "gad_adamw_new", "non-leaf", "a parameter that is not a leaf",
     E_DOMAIN, "adamw_new", "not a leaf",
     gad_adamw_new((gad_tensor *[]){tracked()}, 1, NULL))
ROW(adamw_beta1, "gad_adamw_new", "value", "beta1 1", "NULL", E_DOMAIN, "adamw_new",
    "beta1", 0,
    gad_tensor *p = LEAF32(2);
    return gad_adamw_new(&p, 1, &(gad_adamw_opts){.beta1 = 1}) == NULL;)
ROW(adamw_beta2, "gad_adamw_new", "NaN/Inf", "beta2 NaN", "NULL", E_DOMAIN, "adamw_new",
    "beta2", 0,
    gad_tensor *p = LEAF32(2);
    return gad_adamw_new(&p, 1, &(gad_adamw_opts){.beta2 = NAN}) == NULL;)
ROW(adamw_eps, "gad_adamw_new", "value", "eps -1e-8", "NULL", E_DOMAIN, "adamw_new",
    "eps", 0,
    gad_tensor *p = LEAF32(2);
    return gad_adamw_new(&p, 1, &(gad_adamw_opts){.eps = -1e-8}) == NULL;)
ROW(adamw_lr, "gad_adamw_new", "NaN/Inf", "lr inf", "NULL", E_DOMAIN, "adamw_new",
    "inf", 0,
    gad_tensor *p = LEAF32(2);
    return gad_adamw_new(&p, 1, &(gad_adamw_opts){.lr = INFINITY}) == NULL;)
ROW(adamw_wd, "gad_adamw_new", "value", "weight_decay -0.01", "NULL", E_DOMAIN,
    "adamw_new", "weight_decay", 0,
    gad_tensor *p = LEAF32(2);
    return gad_adamw_new(&p, 1, &(gad_adamw_opts){.weight_decay = -0.01}) == NULL;)
ROW(adamw_empty, "gad_adamw_new", "empty", "a parameter [0]", "an optimizer", E_OK, "",
    NULL, 0,
    gad_tensor *p = LEAF32(0);
    gad_optim *o = gad_adamw_new(&p, 1, NULL);
    gad_tensor *g = F32T(0);
    int ok = o && gad_optim_step(o, &g) == GAD_OK;
    gad_optim_free(o);
    return ok;)
ROW(optim_free_null, "gad_optim_free", "NULL", "opt NULL", "nothing (a no-op)", E_OK, "",
    NULL, 0, gad_optim_free(NULL); return 1;)
ROW(optim_free_twice, "gad_optim_free", "released", "opt freed already", "nothing",
    E_DOMAIN, "optim_free", "use of a freed optimizer", 0,
    gad_optim_free(dead_optim());
    return 1;)
SBAD(step_null, "gad_optim_step", "NULL", "opt NULL", E_DOMAIN, "optim_step", NULL,
     gad_optim_step(NULL, NULL))
SBAD(step_freed, "gad_optim_step", "released", "opt freed", E_DOMAIN, "optim_step",
     "use of a freed optimizer", gad_optim_step(dead_optim(), NULL))
ROW(step_null_grad, "gad_optim_step", "NULL", "grads[0] NULL", "status", E_DOMAIN,
    "optim_step", "grads[0]", 0,
    gad_optim *o = sgd1(0);
    gad_status st = gad_optim_step(o, (gad_tensor *[]){NULL});
    int ok = st == E_DOMAIN && gad_optim_steps(o) == 0;
    gad_optim_free(o);
    return ok;)
ROW(step_dtype, "gad_optim_step", "dtype", "an f64 gradient for an f32 parameter",
    "status", E_DTYPE, "optim_step", "f64", 0,
    gad_optim *o = adamw1();
    gad_status st = gad_optim_step(o, (gad_tensor *[]){F64T(2, 3)});
    gad_optim_free(o);
    return st == E_DTYPE;)
ROW(step_shape, "gad_optim_step", "shape", "a [3,2] gradient for a [2,3] parameter",
    "status; nothing changes", E_SHAPE, "optim_step", "[3,2]", 0,
    gad_optim *o = sgd1(0.9);
    gad_status st = gad_optim_step(o, (gad_tensor *[]){F32T(3, 2)});
    int ok = st == E_SHAPE && gad_optim_steps(o) == 0 && gad_optim_state(o, NULL, NULL, 0) == 1;
    gad_optim_free(o);
    return ok;)
ROW(step_nan, "gad_optim_step", "NaN/Inf", "a NaN gradient", "GAD_OK; NaN parameters",
    E_OK, "", NULL, 0,
    gad_tensor *p = LEAF32(2);
    gad_optim *o = gad_sgd_new(&p, 1, NULL);
    int ok = gad_optim_step(o, (gad_tensor *[]){VALS32(NAN, 0)}) == GAD_OK &&
             isnan(at(p, 0));
    gad_optim_free(o);
    return ok;)
ROW(step_self, "gad_optim_step", "odd", "the parameter given as its own gradient",
    "GAD_OK; read from a copy", E_OK, "", NULL, 0,
    gad_tensor *p = LEAF64(2);
    gad_optim *o = gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = 0.5});
    int ok = gad_optim_step(o, &p) == GAD_OK && at(p, 0) == -0.375 && gad_is_leaf(p);
    gad_optim_free(o);
    return ok;)
ROW(step_empty_slots, "gad_optim_step", "NULL", "grads NULL and empty slots",
    "GAD_OK; nothing updated, the step counted", E_OK, "", NULL, 0,
    gad_optim *o = adamw1();
    int ok = gad_optim_step(o, NULL) == GAD_OK && gad_optim_steps(o) == 1;
    gad_optim_free(o);
    return ok;)
ROW(step_released, "gad_optim_step", "released", "grads[0] released",
    "status; nothing updated", E_DOMAIN, "optim_step", "use of a released tensor", 0,
    gad_tensor *p = LEAF64(2);
    gad_optim *o = gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = 0.5});
    int ok = gad_optim_step(o, (gad_tensor *[]){dead()}) == E_DOMAIN && gad_optim_steps(o) == 0;
    gad_optim_free(o);
    return ok;)
ROW(zero_grad_opt_null, "gad_optim_zero_grad", "NULL", "opt NULL", "nothing", E_DOMAIN,
    "optim_zero_grad", NULL, 0, gad_optim_zero_grad(NULL); return 1;)
ROW(lr_null, "gad_optim_lr", "NULL", "opt NULL", "NaN", E_DOMAIN, "optim_lr", NULL, 0,
    return isnan(gad_optim_lr(NULL));)
ROW(set_lr_null, "gad_optim_set_lr", "NULL", "opt NULL", "nothing", E_DOMAIN,
    "optim_set_lr", NULL, 0, gad_optim_set_lr(NULL, 0.1); return 1;)
ROW(set_lr_nan, "gad_optim_set_lr", "NaN/Inf", "lr NaN", "nothing; lr unchanged",
    E_DOMAIN, "optim_set_lr", "nan", 0,
    gad_optim *o = sgd1(0);
    gad_optim_set_lr(o, NAN);
    int ok = gad_optim_lr(o) == 0.01;
    gad_optim_free(o);
    return ok;)
ROW(set_lr_neg, "gad_optim_set_lr", "value", "lr -1", "nothing; lr unchanged", E_DOMAIN,
    "optim_set_lr", "-1", 0,
    gad_optim *o = adamw1();
    gad_optim_set_lr(o, -1);
    int ok = gad_optim_lr(o) == 1e-3;
    gad_optim_free(o);
    return ok;)
ROW(set_lr_zero, "gad_optim_set_lr", "value", "lr 0", "nothing (lr 0 is allowed)", E_OK,
    "", NULL, 0,
    gad_optim *o = adamw1();
    gad_optim_set_lr(o, 0);
    int ok = gad_optim_lr(o) == 0;
    gad_optim_free(o);
    return ok;)
ROW(steps_null, "gad_optim_steps", "NULL", "opt NULL", "-1", E_DOMAIN, "optim_steps",
    NULL, 0, return gad_optim_steps(NULL) == -1;)
ROW(state_null, "gad_optim_state", "NULL", "opt NULL", "-1", E_DOMAIN, "optim_state",
    NULL, 0, return gad_optim_state(NULL, NULL, NULL, 0) == -1;)
ROW(state_negcap, "gad_optim_state", "value", "cap -1", "-1", E_DOMAIN, "optim_state",
    "-1", 0,
    gad_optim *o = adamw1();
    int r = gad_optim_state(o, NULL, NULL, -1);
    gad_optim_free(o);
    return r == -1;)
ROW(state_noarrays, "gad_optim_state", "NULL", "names NULL with cap 3", "-1", E_DOMAIN,
    "optim_state", "cap = 3", 0,
    gad_optim *o = adamw1();
    gad_tensor *ts[3];
    int r = gad_optim_state(o, NULL, ts, 3);
    gad_optim_free(o);
    return r == -1;)
ROW(state_count, "gad_optim_state", "empty", "cap 0 (count only)", "the count", E_OK, "",
    NULL, 0,
    gad_optim *o = adamw1();
    int r = gad_optim_state(o, NULL, NULL, 0);
    gad_optim_free(o);
    return r == 3;)
ROW(state_small, "gad_optim_state", "value", "cap 1 for 3 entries", "3; one filled", E_OK,
    "", NULL, 0,
    gad_optim *o = adamw1();
    const char *nm[1];
    gad_tensor *ts[1];
    int r = gad_optim_state(o, nm, ts, 1);
    gad_optim_free(o);
    return r == 3 && strcmp(nm[0], "step") == 0;)
SBAD(load_null, "gad_optim_load_state", "NULL", "opt NULL", E_DOMAIN, "optim_load_state",
     NULL, gad_optim_load_state(NULL, NULL, NULL, 0))
ROW(load_noarrays, "gad_optim_load_state", "NULL", "names NULL with n = 1", "status",
    E_DOMAIN, "optim_load_state", "n = 1", 0,
    gad_optim *o = adamw1();
    gad_status st = gad_optim_load_state(o, NULL, (gad_tensor *[]){S32(0)}, 1);
    gad_optim_free(o);
    return st == E_DOMAIN;)
ROW(load_null_name, "gad_optim_load_state", "NULL", "names[0] NULL", "status", E_DOMAIN,
    "optim_load_state", "names[0]", 0,
    gad_optim *o = adamw1();
    gad_status st = gad_optim_load_state(o, (const char *[]){NULL},
                                         (gad_tensor *[]){S32(0)}, 1);
    gad_optim_free(o);
    return st == E_DOMAIN;)
ROW(load_unknown, "gad_optim_load_state", "format", "an unknown name \"m.5\"", "status",
    E_FORMAT, "optim_load_state", "m.5", 0,
    gad_optim *o = adamw1();
    gad_status st = gad_optim_load_state(o, (const char *[]){"m.5"},
                                         (gad_tensor *[]){F32T(2, 3)}, 1);
    gad_optim_free(o);
    return st == E_FORMAT;)
ROW(load_repeated, "gad_optim_load_state", "format", "\"step\" twice", "status",
    E_FORMAT, "optim_load_state", "repeated", 0,
    gad_optim *o = sgd1(0);
    gad_tensor *s = gad_reshape(IDX(1), NULL, 0);
    gad_status st = gad_optim_load_state(o, (const char *[]){"step", "step"},
                                         (gad_tensor *[]){s, s}, 2);
    gad_optim_free(o);
    return st == E_FORMAT;)
ROW(load_missing, "gad_optim_load_state", "format", "AdamW state without \"v.0\"",
    "status; the optimizer unchanged", E_FORMAT, "optim_load_state", "v.0", 0,
    gad_optim *o = adamw1();
    gad_tensor *s = gad_reshape(IDX(4), NULL, 0);
    gad_status st = gad_optim_load_state(o, (const char *[]){"step", "m.0"},
                                         (gad_tensor *[]){s, F32T(2, 3)}, 2);
    int ok = st == E_FORMAT && gad_optim_steps(o) == 0;
    gad_optim_free(o);
    return ok;)
ROW(load_nostep, "gad_optim_load_state", "format", "no \"step\" (n = 0)", "status",
    E_FORMAT, "optim_load_state", "step", 0,
    gad_optim *o = sgd1(0);
    gad_status st = gad_optim_load_state(o, NULL, NULL, 0);
    gad_optim_free(o);
    return st == E_FORMAT;)
ROW(load_negstep, "gad_optim_load_state", "format", "\"step\" -3", "status", E_FORMAT,
    "optim_load_state", "-3", 0,
    gad_optim *o = sgd1(0);
    gad_status st = gad_optim_load_state(o, (const char *[]){"step"},
                                         (gad_tensor *[]){gad_reshape(IDX(-3), NULL, 0)}, 1);
    gad_optim_free(o);
    return st == E_FORMAT;)
ROW(load_step_dtype, "gad_optim_load_state", "dtype", "\"step\" f32", "status", E_DTYPE,
    "optim_load_state", "f32", 0,
    gad_optim *o = sgd1(0);
    gad_status st = gad_optim_load_state(o, (const char *[]){"step"},
                                         (gad_tensor *[]){S32(1)}, 1);
    gad_optim_free(o);
    return st == E_DTYPE;)
ROW(load_step_shape, "gad_optim_load_state", "shape", "\"step\" i64 [2]", "status",
    E_SHAPE, "optim_load_state", "[2]", 0,
    gad_optim *o = sgd1(0);
    gad_status st = gad_optim_load_state(o, (const char *[]){"step"},
                                         (gad_tensor *[]){IDX(1, 2)}, 1);
    gad_optim_free(o);
    return st == E_SHAPE;)
ROW(load_m_shape, "gad_optim_load_state", "shape", "\"m.0\" [3,2] for a [2,3] parameter",
    "status", E_SHAPE, "optim_load_state", "[3,2]", 0,
    gad_optim *o = adamw1();
    gad_tensor *s = gad_reshape(IDX(1), NULL, 0);
    gad_status st = gad_optim_load_state(o, (const char *[]){"step", "m.0", "v.0"},
                                         (gad_tensor *[]){s, F32T(3, 2), F32T(2, 3)}, 3);
    gad_optim_free(o);
    return st == E_SHAPE;)
ROW(load_m_dtype, "gad_optim_load_state", "dtype", "\"v.0\" f64 for an f32 parameter",
    "status", E_DTYPE, "optim_load_state", "f64", 0,
    gad_optim *o = adamw1();
    gad_tensor *s = gad_reshape(IDX(1), NULL, 0);
    gad_status st = gad_optim_load_state(o, (const char *[]){"step", "m.0", "v.0"},
                                         (gad_tensor *[]){s, F32T(2, 3), F64T(2, 3)}, 3);
    gad_optim_free(o);
    return st == E_DTYPE;)
ROW(load_momentum_opt, "gad_optim_load_state", "odd",
    "SGD state without \"momentum.0\" (optional)", "GAD_OK", E_OK, "", NULL, 0,
    gad_optim *o = sgd1(0.9);
    gad_status st = gad_optim_load_state(o, (const char *[]){"step"},
                                         (gad_tensor *[]){gad_reshape(IDX(7), NULL, 0)}, 1);
    int ok = st == GAD_OK && gad_optim_steps(o) == 7;
    gad_optim_free(o);
    return ok;)
ROW(clip_neg_n, "gad_clip_grad_norm", "value", "n = -1", "NaN", E_DOMAIN,
    "clip_grad_norm", "-1", 0, return isnan(gad_clip_grad_norm(NULL, -1, 1));)
ROW(clip_nograds, "gad_clip_grad_norm", "NULL", "grads NULL with n = 2", "NaN", E_DOMAIN,
    "clip_grad_norm", "n = 2", 0, return isnan(gad_clip_grad_norm(NULL, 2, 1));)
ROW(clip_null_grad, "gad_clip_grad_norm", "NULL", "grads[1] NULL", "NaN", E_DOMAIN,
    "clip_grad_norm", "grads[1]", 0,
    return isnan(gad_clip_grad_norm((gad_tensor *[]){F32T(2), NULL}, 2, 1));)
ROW(clip_i64, "gad_clip_grad_norm", "dtype", "an i64 gradient", "NaN", E_DTYPE,
    "clip_grad_norm", "i64", 0,
    return isnan(gad_clip_grad_norm((gad_tensor *[]){I64T(2)}, 1, 1));)
ROW(clip_tracked, "gad_clip_grad_norm", "tracked", "a gradient that is the output of a tracked op",
    "NaN", E_UNIQUE, "clip_grad_norm", "grads[0]", 0,
    return isnan(gad_clip_grad_norm((gad_tensor *[]){tracked()}, 1, 1));)
ROW(clip_max_nan, "gad_clip_grad_norm", "NaN/Inf", "max_norm NaN", "NaN", E_DOMAIN,
    "clip_grad_norm", "nan", 0,
    return isnan(gad_clip_grad_norm((gad_tensor *[]){F32T(2)}, 1, NAN));)
ROW(clip_max_neg, "gad_clip_grad_norm", "value", "max_norm -1", "NaN", E_DOMAIN,
    "clip_grad_norm", "-1", 0,
    return isnan(gad_clip_grad_norm((gad_tensor *[]){F32T(2)}, 1, -1));)
ROW(clip_nan_grad, "gad_clip_grad_norm", "NaN/Inf", "a gradient holding NaN",
    "NaN (no error); gradients unchanged", E_OK, "", NULL, 0,
    gad_tensor *g = VALS32(NAN, 3);
    return isnan(gad_clip_grad_norm(&g, 1, 1)) && at(g, 1) == 3;)
ROW(clip_twice, "gad_clip_grad_norm", "odd", "the same gradient twice",
    "the norm of both; scaled once", E_OK, "", NULL, 0,
    gad_tensor *g = VALS32(3, 4);
    double n = gad_clip_grad_norm((gad_tensor *[]){g, g}, 2, 1);
    return fabs(n - sqrt(50.0)) < 1e-9 && fabs(at(g, 1) - 4 / (sqrt(50.0) + 1e-6)) < 1e-6;)
GOOD(clip_empty, "gad_clip_grad_norm", "empty", "n = 0 and a [0] gradient", "0",
     gad_clip_grad_norm(NULL, 0, 1) == 0 &&
     gad_clip_grad_norm((gad_tensor *[]){F32T(0)}, 1, 1) == 0)
ROW(clip_released, "gad_clip_grad_norm", "released", "grads[1] released", "NaN",
    E_DOMAIN, "clip_grad_norm", "use of a released tensor", 0,
    return isnan(gad_clip_grad_norm((gad_tensor *[]){F32T(2), dead()}, 2, 1));)
GOOD(sched_neg, "gad_lr_warmup_cosine", "value", "step -5 and warmup -1",
     "as step 0 and warmup 0", gad_lr_warmup_cosine(-5, -1, 10, 1.0, 0.0) == 1.0)
GOOD(sched_total, "gad_lr_warmup_cosine", "value", "total <= warmup", "min_lr after warm-up",
     gad_lr_warmup_cosine(5, 5, 3, 1.0, 0.25) == 0.25)
GOOD(sched_nan, "gad_lr_warmup_cosine", "NaN/Inf", "base_lr NaN", "NaN (no error)",
     isnan(gad_lr_warmup_cosine(0, 2, 10, NAN, 0)))

/* ---- attention and positions (issue 27) ---- */
AREA("Attention and positions")

#define SDPA(q, k, v, m, causal, p, scale, rng)                                \
    gad_scaled_dot_product_attention(q, k, v, m, causal, p, scale, rng)
#define SDPA_OP "scaled_dot_product_attention"
TBAD(sdpa_null, "gad_scaled_dot_product_attention", "NULL", "k NULL", E_DOMAIN, SDPA_OP, NULL,
     SDPA(F32T(1, 2, 3, 4), NULL, F32T(1, 2, 3, 4), NULL, 0, 0, 0, NULL))
TBAD(sdpa_i64, "gad_scaled_dot_product_attention", "dtype", "q i64", E_DTYPE, SDPA_OP, "i64",
     SDPA(I64T(1, 2, 3), I64T(1, 2, 3), I64T(1, 2, 3), NULL, 0, 0, 0, NULL))
TBAD(sdpa_mixed, "gad_scaled_dot_product_attention", "dtype", "q f32, v f64", E_DTYPE, SDPA_OP,
     "f64", SDPA(F32T(1, 2, 3), F32T(1, 2, 3), F64T(1, 2, 3), NULL, 0, 0, 0, NULL))
TBAD(sdpa_rank, "gad_scaled_dot_product_attention", "rank", "q, k, v 1-D", E_SHAPE, SDPA_OP,
     "[3]", SDPA(F32T(3), F32T(3), F32T(3), NULL, 0, 0, 0, NULL))
TBAD(sdpa_heads, "gad_scaled_dot_product_attention", "shape", "q 4 heads, k/v 3", E_SHAPE,
     SDPA_OP, "divide", SDPA(F32T(1, 4, 2, 8), F32T(1, 3, 5, 8), F32T(1, 3, 5, 8), NULL, 0, 0, 0, NULL))
TBAD(sdpa_dim, "gad_scaled_dot_product_attention", "shape", "q d 8, k d 4", E_SHAPE, SDPA_OP,
     "head dims", SDPA(F32T(2, 3, 8), F32T(2, 5, 4), F32T(2, 5, 4), NULL, 0, 0, 0, NULL))
TBAD(sdpa_len, "gad_scaled_dot_product_attention", "shape", "k 5 keys, v 6", E_SHAPE, SDPA_OP,
     "lengths", SDPA(F32T(2, 3, 4), F32T(2, 5, 4), F32T(2, 6, 4), NULL, 0, 0, 0, NULL))
TBAD(sdpa_batch, "gad_scaled_dot_product_attention", "shape", "q batch 2, k batch 3", E_SHAPE,
     SDPA_OP, "batch", SDPA(F32T(2, 1, 3, 4), F32T(3, 1, 5, 4), F32T(3, 1, 5, 4), NULL, 0, 0, 0, NULL))
TBAD(sdpa_mask_shape, "gad_scaled_dot_product_attention", "shape", "mask [3,4] for scores [..,3,5]",
     E_SHAPE, SDPA_OP, "[3,4]",
     SDPA(F32T(1, 3, 4), F32T(1, 5, 4), F32T(1, 5, 4), F32T(3, 4), 0, 0, 0, NULL))
TBAD(sdpa_mask_dtype, "gad_scaled_dot_product_attention", "dtype", "f64 mask for f32 q", E_DTYPE,
     SDPA_OP, "f64", SDPA(F32T(1, 3, 4), F32T(1, 5, 4), F32T(1, 5, 4), F64T(3, 5), 0, 0, 0, NULL))
TBAD(sdpa_mask_i64, "gad_scaled_dot_product_attention", "dtype", "i64 mask", E_DTYPE, SDPA_OP,
     "i64", SDPA(F32T(1, 3, 4), F32T(1, 5, 4), F32T(1, 5, 4), I64T(3, 5), 0, 0, 0, NULL))
GOOD(sdpa_mask_bool, "gad_scaled_dot_product_attention", "odd", "a bool mask all False",
     "zeros (every key masked)",
     all_zero(SDPA(F32T(1, 2, 4), F32T(1, 3, 4), F32T(1, 3, 4), gad_zeros(DIMS(2, 3), GAD_BOOL),
                   0, 0, 0, NULL)))
TBAD(sdpa_mask_causal, "gad_scaled_dot_product_attention", "value", "a mask and is_causal",
     E_DOMAIN, SDPA_OP, "is_causal",
     SDPA(F32T(1, 3, 4), F32T(1, 5, 4), F32T(1, 5, 4), F32T(3, 5), 1, 0, 0, NULL))
TBAD(sdpa_p1, "gad_scaled_dot_product_attention", "value", "dropout_p 1", E_DOMAIN, SDPA_OP,
     "[0, 1)", SDPA(F32T(1, 3, 4), F32T(1, 5, 4), F32T(1, 5, 4), NULL, 0, 1, 0, g_rng))
TBAD(sdpa_pnan, "gad_scaled_dot_product_attention", "NaN/Inf", "dropout_p NaN", E_DOMAIN,
     SDPA_OP, "nan", SDPA(F32T(1, 3, 4), F32T(1, 5, 4), F32T(1, 5, 4), NULL, 0, NAN, 0, g_rng))
TBAD(sdpa_norng, "gad_scaled_dot_product_attention", "NULL", "dropout_p 0.1 with rng NULL",
     E_DOMAIN, SDPA_OP, "rng",
     SDPA(F32T(1, 3, 4), F32T(1, 5, 4), F32T(1, 5, 4), NULL, 0, 0.1, 0, NULL))
TBAD(sdpa_scale_inf, "gad_scaled_dot_product_attention", "NaN/Inf", "scale inf", E_DOMAIN,
     SDPA_OP, "inf", SDPA(F32T(1, 3, 4), F32T(1, 5, 4), F32T(1, 5, 4), NULL, 0, 0, INFINITY, NULL))
GOOD(sdpa_nan, "gad_scaled_dot_product_attention", "NaN/Inf", "q all NaN", "NaN (no error)",
     all_nan(SDPA(gad_full(DIMS(1, 2, 4), GAD_F32, NAN), F32T(1, 3, 4), F32T(1, 3, 4), NULL, 0,
                  0, 0, NULL)))
GOOD(sdpa_empty_q, "gad_scaled_dot_product_attention", "empty", "Tq = 0", "[1,2,0,6]",
     SHAPE_IS(SDPA(F32T(1, 2, 0, 4), F32T(1, 1, 3, 4), F32T(1, 1, 3, 6), NULL, 1, 0, 0, NULL), 1,
              2, 0, 6))
GOOD(sdpa_empty_big, "gad_scaled_dot_product_attention", "empty", "q [2^40,0], k and v [3,0]",
     "an empty [2^40,0] (no lse kept)",
     SHAPE_IS(SDPA(F32T(BIG, 0), F32T(3, 0), F32T(3, 0), NULL, 1, 0, 0, NULL), BIG, 0))
GOOD(sdpa_empty_k, "gad_scaled_dot_product_attention", "empty", "Tk = 0", "zeros [1,2,4]",
     all_zero(SDPA(F32T(1, 2, 4), F32T(1, 0, 4), F32T(1, 0, 4), NULL, 0, 0, 0, NULL)))
GOOD(sdpa_all_masked, "gad_scaled_dot_product_attention", "odd", "every key masked (-inf)",
     "zeros, as PyTorch 2.15's CPU kernels",
     all_zero(SDPA(F32T(1, 2, 4), F32T(1, 3, 4), F32T(1, 3, 4),
                   gad_full(DIMS(2, 3), GAD_F32, -INFINITY), 0, 0, 0, NULL)))
TBAD(rope_null, "gad_rope", "NULL", "x NULL", E_DOMAIN, "rope", NULL, gad_rope(NULL, NULL, 1e4, 0))
TBAD(rope_i64, "gad_rope", "dtype", "x i64", E_DTYPE, "rope", "i64",
     gad_rope(I64T(2, 4), NULL, 1e4, 0))
TBAD(rope_rank, "gad_rope", "rank", "x 1-D", E_SHAPE, "rope", "[4]", gad_rope(F32T(4), NULL, 1e4, 0))
TBAD(rope_odd, "gad_rope", "shape", "d = 5", E_SHAPE, "rope", "even",
     gad_rope(F32T(2, 5), NULL, 1e4, 1))
TBAD(rope_base, "gad_rope", "value", "base 0", E_DOMAIN, "rope", "base",
     gad_rope(F32T(2, 4), NULL, 0, 0))
TBAD(rope_base_nan, "gad_rope", "NaN/Inf", "base NaN", E_DOMAIN, "rope", "nan",
     gad_rope(F32T(2, 4), NULL, NAN, 0))
TBAD(rope_pos_dtype, "gad_rope", "dtype", "positions f32", E_DTYPE, "rope", "f32",
     gad_rope(F32T(2, 4), F32T(2), 1e4, 0))
TBAD(rope_pos_shape, "gad_rope", "shape", "positions [3] for x [2,4]", E_SHAPE, "rope", "[3]",
     gad_rope(F32T(2, 4), IDX(0, 1, 2), 1e4, 0))
GOOD(rope_empty, "gad_rope", "empty", "x [0,4]", "[0,4]",
     SHAPE_IS(gad_rope(F32T(0, 4), NULL, 1e4, 0), 0, 4))
GOOD(rope_d0, "gad_rope", "empty", "x [3,0]", "[3,0]",
     SHAPE_IS(gad_rope(F32T(3, 0), NULL, 1e4, 0), 3, 0))
GOOD(rope_nan, "gad_rope", "NaN/Inf", "x all NaN", "NaN (no error)",
     all_nan(gad_rope(gad_full(DIMS(2, 4), GAD_F32, NAN), NULL, 1e4, 1)))
TBAD(sinpos_odd, "gad_sinusoidal_positions", "shape", "d = 3", E_SHAPE, "sinusoidal_positions",
     "3", gad_sinusoidal_positions(4, 3, 1e4, GAD_F32))
TBAD(sinpos_neg, "gad_sinusoidal_positions", "shape", "T = -1", E_SHAPE, "sinusoidal_positions",
     "-1", gad_sinusoidal_positions(-1, 4, 1e4, GAD_F32))
TBAD(sinpos_base, "gad_sinusoidal_positions", "value", "base -2", E_DOMAIN,
     "sinusoidal_positions", "-2", gad_sinusoidal_positions(4, 4, -2, GAD_F32))
TBAD(sinpos_dtype, "gad_sinusoidal_positions", "dtype", "i64", E_DTYPE, "sinusoidal_positions",
     "i64", gad_sinusoidal_positions(4, 4, 1e4, GAD_I64))
GOOD(sinpos_empty, "gad_sinusoidal_positions", "empty", "T = 0", "[0,4]",
     SHAPE_IS(gad_sinusoidal_positions(0, 4, 1e4, GAD_F64), 0, 4))
/* ---- end of attention and positions ---- */

AREA("Checkpoints")

ROW(save_nopath, "gad_save", "NULL", "path NULL", "status", E_DOMAIN, "save", "NULL", 0,
    return gad_save(NULL, (const char *[]){"a"}, (gad_tensor *[]){F32T(2)}, 1) ==
           E_DOMAIN;)
ROW(save_emptypath, "gad_save", "value", "path \"\"", "status", E_DOMAIN, "save",
    "empty", 0,
    return gad_save("", (const char *[]){"a"}, (gad_tensor *[]){F32T(2)}, 1) == E_DOMAIN;)
ROW(save_neg_n, "gad_save", "value", "n = -1", "status", E_DOMAIN, "save", "-1", 0,
    return gad_save(tpath("saved.st"), NULL, NULL, -1) == E_DOMAIN;)
ROW(save_nonames, "gad_save", "NULL", "names NULL with n = 1", "status", E_DOMAIN,
    "save", "names", 0,
    return gad_save(tpath("saved.st"), NULL, (gad_tensor *[]){F32T(2)}, 1) == E_DOMAIN;)
ROW(save_null_name, "gad_save", "NULL", "names[0] NULL", "status", E_DOMAIN, "save",
    "NULL", 0,
    return gad_save(tpath("saved.st"), (const char *[]){NULL}, (gad_tensor *[]){F32T(2)},
                    1) == E_DOMAIN;)
ROW(save_empty_name, "gad_save", "odd", "a name \"\"", "GAD_OK; it loads back", E_OK, "",
    NULL, 0,
    gad_checkpoint *cp = NULL;
    int ok = gad_save(tpath("saved.st"), (const char *[]){""}, (gad_tensor *[]){F32T(2)},
                      1) == GAD_OK &&
             (cp = gad_load(tpath("saved.st"))) && gad_checkpoint_count(cp) == 1 &&
             strcmp(gad_checkpoint_name(cp, 0), "") == 0;
    gad_checkpoint_free(cp);
    return ok;)
ROW(save_metadata, "gad_save", "value", "the name \"__metadata__\"", "status", E_DOMAIN,
    "save", "reserved", 0,
    return gad_save(tpath("saved.st"), (const char *[]){"__metadata__"},
                    (gad_tensor *[]){F32T(2)}, 1) == E_DOMAIN;)
ROW(save_ctrl, "gad_save", "odd", "a name with a newline and an ESC",
    "GAD_OK; the header escapes them (\\u000a, \\u001b); it loads back", E_OK, "", NULL, 0,
    gad_checkpoint *cp = NULL;
    int ok = gad_save(tpath("saved.st"), (const char *[]){"a\nb\x1b"},
                      (gad_tensor *[]){F32T(2)}, 1) == GAD_OK &&
             (cp = gad_load(tpath("saved.st"))) &&
             strcmp(gad_checkpoint_name(cp, 0), "a\nb\x1b") == 0;
    gad_checkpoint_free(cp);
    return ok;)
ROW(save_utf8, "gad_save", "value", "a name that is not UTF-8 (\"\\xff\")", "status",
    E_DOMAIN, "save", "UTF-8", 0,
    return gad_save(tpath("saved.st"), (const char *[]){"\xff"},
                    (gad_tensor *[]){F32T(2)}, 1) == E_DOMAIN;)
ROW(save_dup, "gad_save", "value", "the name \"w\" twice", "status", E_DOMAIN, "save",
    "duplicate", 0,
    return gad_save(tpath("saved.st"), (const char *[]){"w", "w"},
                    (gad_tensor *[]){F32T(2), F32T(3)}, 2) == E_DOMAIN;)
ROW(save_null_tensor, "gad_save", "NULL", "tensors[0] NULL", "status", E_DOMAIN, "save",
    "NULL", 0,
    return gad_save(tpath("saved.st"), (const char *[]){"a"}, (gad_tensor *[]){NULL}, 1) ==
           E_DOMAIN;)
ROW(save_baddir, "gad_save", "io", "a path in a directory that does not exist", "status",
    E_IO, "save", "no/such/dir", 0,
    return gad_save(tpath("no/such/dir/x.st"), (const char *[]){"a"},
                    (gad_tensor *[]){F32T(2)}, 1) == E_IO;)
ROW(save_isdir, "gad_save", "io", "path an existing directory", "status", E_IO, "save",
    NULL, 0,
    char p[128];
    snprintf(p, sizeof p, "%s/", g_tmpdir);
    return gad_save(p, (const char *[]){"a"}, (gad_tensor *[]){F32T(2)}, 1) == E_IO;)
ROW(save_none, "gad_save", "empty", "n = 0", "GAD_OK; a file with no tensors", E_OK, "",
    NULL, 0,
    gad_checkpoint *cp = NULL;
    int ok = gad_save(tpath("empty.st"), NULL, NULL, 0) == GAD_OK &&
             (cp = gad_load(tpath("empty.st"))) && gad_checkpoint_count(cp) == 0;
    gad_checkpoint_free(cp);
    return ok;)
ROW(save_views, "gad_save", "empty", "an empty tensor, a scalar and a broadcast view",
    "GAD_OK", E_OK, "", NULL, 0,
    return gad_save(tpath("saved.st"), (const char *[]){"e", "s", "v"},
                    (gad_tensor *[]){F32T(0, 3), S64(1), bview(2, 3)}, 3) == GAD_OK;)
SBAD(save_released, "gad_save", "released", "tensors[0] released", E_DOMAIN, "save",
     "use of a released tensor", gad_save("/nonexistent/x.safetensors", (const char *[]){"a"},
                    (gad_tensor *[]){dead()}, 1))
TBAD(load_nopath, "gad_load", "NULL", "path NULL", E_DOMAIN, "load", "NULL",
     gad_load(NULL))
TBAD(load_missing_file, "gad_load", "io", "a file that does not exist", E_IO, "load",
     "missing.st", gad_load(tpath("missing.st")))
TBAD(load_dir, "gad_load", "io", "a directory", E_IO, "load", "gad_bad_",
     gad_load(g_tmpdir))
ROW(load_fifo, "gad_load", "io", "a FIFO (named pipe) with no writer", "NULL, at once",
    E_IO, "load", "FIFO", ISOLATE,
    unlink(tpath("fifo.st"));
    int ok = mkfifo(tpath("fifo.st"), 0600) == 0 && gad_load(tpath("fifo.st")) == NULL;
    unlink(tpath("fifo.st"));
    return ok;)
TBAD(load_device, "gad_load", "io", "a character device (/dev/null)", E_IO, "load",
     "character device", gad_load("/dev/null"))
ROW(load_garbage, "gad_load", "format", "a text file", "NULL", E_FORMAT, "load",
    "header length", 0,
    const char *s = "this is not a safetensors file at all\n";
    return write_bytes("garbage.st", s, strlen(s)) && gad_load(tpath("garbage.st")) == NULL;)
ROW(load_short, "gad_load", "format", "a file of 3 bytes", "NULL", E_FORMAT, "load",
    "3 bytes", 0,
    return write_bytes("short.st", "abc", 3) && gad_load(tpath("short.st")) == NULL;)
ROW(load_badjson, "gad_load", "format", "a header that is not JSON", "NULL", E_FORMAT,
    "load", NULL, 0,
    return write_st("badjson.st", "{not json}", 0) && gad_load(tpath("badjson.st")) == NULL;)
ROW(load_trunc, "gad_load", "format", "data offsets past the end of the file", "NULL",
    E_FORMAT, "load", "past the end", 0,
    return write_st("trunc.st", "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],"
                    "\"data_offsets\":[0,8]}}", 4) &&
           gad_load(tpath("trunc.st")) == NULL;)
ROW(load_dupname, "gad_load", "format", "the name \"x\" twice in the header", "NULL",
    E_FORMAT, "load", "duplicate", 0,
    return write_st("dup.st", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],"
                    "\"data_offsets\":[0,4]},\"x\":{\"dtype\":\"F32\",\"shape\":[1],"
                    "\"data_offsets\":[4,8]}}", 8) &&
           gad_load(tpath("dup.st")) == NULL;)
ROW(load_meta, "gad_load", "format", "\"__metadata__\" holding a number", "NULL", E_FORMAT,
    "load", NULL, 0,
    return write_st("meta.st", "{\"__metadata__\":{\"a\":1}}", 0) &&
           gad_load(tpath("meta.st")) == NULL;)
ROW(load_gap, "gad_load", "format", "4 bytes that belong to no tensor", "NULL", E_FORMAT,
    "load", "belong to no tensor", 0,
    return write_st("gap.st", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],"
                    "\"data_offsets\":[0,4]}}", 8) &&
           gad_load(tpath("gap.st")) == NULL;)
/* ---- safetensors dtypes and metadata (issue 29, helper stio) */
ROW(load_e8m0, "gad_load", "dtype", "a well-formed F8_E8M0 tensor", "NULL", E_UNSUP, "load",
    "tensor 'x' has dtype F8_E8M0", 0,
    return write_st("e8m0.st", "{\"x\":{\"dtype\":\"F8_E8M0\",\"shape\":[2],"
                    "\"data_offsets\":[0,2]}}", 2) &&
           gad_load(tpath("e8m0.st")) == NULL;)
ROW(load_half_wrong_size, "gad_load", "format", "an F16 [4] tensor given 16 bytes", "NULL",
    E_FORMAT, "load", "hold 16 bytes, but F16 with shape [4] needs 8", 0,
    return write_st("f16size.st", "{\"x\":{\"dtype\":\"F16\",\"shape\":[4],"
                    "\"data_offsets\":[0,16]}}", 16) &&
           gad_load(tpath("f16size.st")) == NULL;)
ROW(load_half_truncated, "gad_load", "format", "BF16 data cut short by the file's end", "NULL",
    E_FORMAT, "load", "past the end of the data", 0,
    return write_st("bf16cut.st", "{\"x\":{\"dtype\":\"BF16\",\"shape\":[8],"
                    "\"data_offsets\":[0,16]}}", 10) &&
           gad_load(tpath("bf16cut.st")) == NULL;)
ROW(load_meta_number, "gad_load", "format", "metadata {\"epochs\": 3} (not string to string)",
    "NULL", E_FORMAT, "load", "__metadata__ key 'epochs': the value is not a string", 0,
    return write_st("metanum.st", "{\"__metadata__\":{\"epochs\":3}}", 0) &&
           gad_load(tpath("metanum.st")) == NULL;)
ROW(load_meta_dupkey, "gad_load", "format", "the metadata key \"format\" twice", "NULL",
    E_FORMAT, "load", "duplicate key 'format'", 0,
    return write_st("metadup.st", "{\"__metadata__\":{\"format\":\"pt\",\"format\":\"np\"}}",
                    0) &&
           gad_load(tpath("metadup.st")) == NULL;)
ROW(ckpt_get_u64_big, "gad_checkpoint_get", "value", "a U64 value of 2^63 (read as i64)", "NULL",
    E_UNSUP, "checkpoint_get", "9223372036854775808", 0,
    static const unsigned char v[8] = {0, 0, 0, 0, 0, 0, 0, 0x80};
    gad_checkpoint *cp = NULL;
    int ok = write_st("u64.st", "{\"x\":{\"dtype\":\"U64\",\"shape\":[1],"
                      "\"data_offsets\":[0,8]}}", 8);
    FILE *f = ok ? fopen(tpath("u64.st"), "r+b") : NULL;
    ok = f && fseek(f, -8, SEEK_END) == 0 && fwrite(v, 1, 8, f) == 8;
    if (f) fclose(f);
    ok = ok && (cp = gad_load(tpath("u64.st"))) != NULL && gad_checkpoint_get(cp, "x") == NULL;
    gad_checkpoint_free(cp);
    return ok;)
TBAD(load_names_nopath, "gad_load_names", "NULL", "path NULL", E_DOMAIN, "load_names", "NULL",
     gad_load_names(NULL, NULL, 0))
TBAD(load_names_nonames, "gad_load_names", "NULL", "names NULL, n = 1", E_DOMAIN, "load_names",
     "names is NULL", gad_load_names(good_path(), NULL, 1))
TBAD(load_names_neg, "gad_load_names", "value", "n = -1", E_DOMAIN, "load_names", "-1",
     gad_load_names(good_path(), NULL, -1))
TBAD(load_names_absent, "gad_load_names", "index", "a name not in the file", E_INDEX, "load",
     "no tensor named 'zz'", gad_load_names(good_path(), (const char *[]){"zz"}, 1))
TBAD(load_names_twice, "gad_load_names", "value", "the name \"a\" twice", E_DOMAIN, "load",
     "'a' is named twice", gad_load_names(good_path(), (const char *[]){"a", "a"}, 2))
ROW(load_names_unsup, "gad_load_names", "dtype", "selecting a C64 tensor", "NULL", E_UNSUP,
    "load", "tensor 'c' has dtype C64", 0,
    return write_st("c64.st", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                    "\"c\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[4,12]}}", 12) &&
           gad_load_names(tpath("c64.st"), (const char *[]){"c"}, 1) == NULL;)
SBAD(save_meta_dupkey, "gad_save_meta", "value", "the metadata key \"k\" twice", E_DOMAIN, "save",
     "duplicate metadata key 'k'",
     gad_save_meta(tpath("m.st"), NULL, NULL, 0, (const char *[]){"k", "1", "k", "2"}, 2))
SBAD(save_meta_nullval, "gad_save_meta", "NULL", "a NULL metadata value", E_DOMAIN, "save",
     "metadata value 0 is NULL",
     gad_save_meta(tpath("m.st"), NULL, NULL, 0, (const char *[]){"k", NULL}, 1))
SBAD(save_meta_utf8, "gad_save_meta", "value", "a metadata key that is not UTF-8", E_DOMAIN,
     "save", "metadata key 0 is not valid UTF-8",
     gad_save_meta(tpath("m.st"), NULL, NULL, 0, (const char *[]){"\xff", "v"}, 1))
SBAD(save_meta_nometa, "gad_save_meta", "NULL", "meta NULL, n_meta = 1", E_DOMAIN, "save",
     "meta is NULL", gad_save_meta(tpath("m.st"), NULL, NULL, 0, NULL, 1))
SBAD(params_save_meta_null, "gad_params_save_meta", "NULL", "ps NULL", E_DOMAIN, "params_save",
     "NULL", gad_params_save_meta(NULL, tpath("m.st"), NULL, 0))
GOOD(ckpt_meta_count_null, "gad_checkpoint_meta_count", "NULL", "cp NULL", "0",
     gad_checkpoint_meta_count(NULL) == 0)
TBAD(ckpt_meta_key_null, "gad_checkpoint_meta_key", "NULL", "cp NULL", E_DOMAIN,
     "checkpoint_meta_key", "NULL", gad_checkpoint_meta_key(NULL, 0))
ROW(ckpt_meta_key_range, "gad_checkpoint_meta_key", "index", "i = 0 of no metadata", "NULL",
    E_INDEX, "checkpoint_meta_key", "outside [0, 0)", 0,
    gad_checkpoint *cp = good_ckpt();
    int ok = cp && gad_checkpoint_meta_key(cp, 0) == NULL;
    gad_checkpoint_free(cp);
    return ok;)
TBAD(ckpt_meta_null, "gad_checkpoint_meta", "NULL", "cp NULL", E_DOMAIN, "checkpoint_meta",
     "checkpoint is NULL", gad_checkpoint_meta(NULL, "k"))
ROW(ckpt_meta_absent, "gad_checkpoint_meta", "index", "a key the file lacks",
    "NULL, and no error", E_OK, "", NULL, 0,
    gad_checkpoint *cp = good_ckpt();
    int ok = cp && gad_checkpoint_meta(cp, "format") == NULL && gad_last_error() == NULL;
    gad_checkpoint_free(cp);
    return ok;)
ROW(load_rank9, "gad_load", "rank", "a tensor of rank 9", "NULL", E_UNSUP, "load",
    "rank 9", 0,
    return write_st("rank9.st", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                    "\"data_offsets\":[0,4]}}", 4) &&
           gad_load(tpath("rank9.st")) == NULL;)
ROW(load_hugedims, "gad_load", "huge", "a shape [2^32,2^32,2^32] in the header", "NULL",
    E_FORMAT, "load", "too many", 0,
    return write_st("huge.st", "{\"x\":{\"dtype\":\"F32\",\"shape\":"
                    "[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 4) &&
           gad_load(tpath("huge.st")) == NULL;)
ROW(load_nomem, "gad_load", "memory", "the allocator fails", "NULL", E_MEM, "load", NULL,
    0,
    failing_allocator(1);
    gad_checkpoint *cp = gad_load(good_path());
    failing_allocator(0);
    gad_checkpoint_free(cp);
    return cp == NULL;)
ROW(ckpt_free_null, "gad_checkpoint_free", "NULL", "cp NULL", "nothing (a no-op)", E_OK,
    "", NULL, 0, gad_checkpoint_free(NULL); return 1;)
GOOD(ckpt_count_null, "gad_checkpoint_count", "NULL", "cp NULL", "0",
     gad_checkpoint_count(NULL) == 0)
ROW(ckpt_name_null, "gad_checkpoint_name", "NULL", "cp NULL", "NULL", E_DOMAIN,
    "checkpoint_name", NULL, 0, return gad_checkpoint_name(NULL, 0) == NULL;)
ROW(ckpt_name_range, "gad_checkpoint_name", "index", "i = 2 of 2 tensors", "NULL",
    E_INDEX, "checkpoint_name", "2", 0,
    gad_checkpoint *cp = good_ckpt();
    int ok = cp && gad_checkpoint_name(cp, 2) == NULL;
    gad_checkpoint_free(cp);
    return ok;)
ROW(ckpt_name_neg, "gad_checkpoint_name", "index", "i = -1", "NULL", E_INDEX,
    "checkpoint_name", "-1", 0,
    gad_checkpoint *cp = good_ckpt();
    int ok = cp && gad_checkpoint_name(cp, -1) == NULL;
    gad_checkpoint_free(cp);
    return ok;)
TBAD(ckpt_get_on_bad_dev, "gad_checkpoint_get_on", "value", "device 77", E_DEVICE,
     "checkpoint_get_on", "77 names no device", gad_checkpoint_get_on(NULL, "w", 77))
TBAD(ckpt_get_on_null, "gad_checkpoint_get_on", "NULL", "cp NULL", E_DOMAIN, "checkpoint_get",
     NULL, gad_checkpoint_get_on(NULL, "w", GAD_CPU))
TBAD(ckpt_get_null, "gad_checkpoint_get", "NULL", "cp NULL", E_DOMAIN, "checkpoint_get",
     "checkpoint", gad_checkpoint_get(NULL, "a"))
ROW(ckpt_get_noname, "gad_checkpoint_get", "NULL", "name NULL", "NULL", E_DOMAIN,
    "checkpoint_get", "name", 0,
    gad_checkpoint *cp = good_ckpt();
    int ok = cp && gad_checkpoint_get(cp, NULL) == NULL;
    gad_checkpoint_free(cp);
    return ok;)
ROW(ckpt_get_absent, "gad_checkpoint_get", "index", "a name not in the file", "NULL",
    E_INDEX, "checkpoint_get", "zz", 0,
    gad_checkpoint *cp = good_ckpt();
    int ok = cp && gad_checkpoint_get(cp, "zz") == NULL;
    gad_checkpoint_free(cp);
    return ok;)
ROW(ckpt_get_nomem, "gad_checkpoint_get", "memory", "the allocator fails", "NULL",
    E_MEM, "checkpoint_get", "'a'", 0,
    gad_checkpoint *cp = good_ckpt();
    failing_allocator(1);
    gad_tensor *t = cp ? gad_checkpoint_get(cp, "a") : NULL;
    failing_allocator(0);
    gad_checkpoint_free(cp);
    return cp && t == NULL;)
ROW(ckpt_get_cut, "gad_checkpoint_get", "io", "the file emptied in place after gad_load",
    "NULL", E_IO, "checkpoint_get", "ended early", 0,
    int ok = make_good_file();
    gad_checkpoint *cp = good_ckpt();
    ok = ok && cp && truncate(good_path(), 0) == 0 && gad_checkpoint_get(cp, "a") == NULL;
    gad_checkpoint_free(cp);
    return make_good_file() && ok;)
ROW(ckpt_get_ok, "gad_checkpoint_get", "odd", "a tensor after gad_checkpoint_free",
    "the tensor stays valid", E_OK, "", NULL, 0,
    gad_checkpoint *cp = good_ckpt();
    gad_tensor *t = cp ? gad_checkpoint_get(cp, "a") : NULL;
    gad_checkpoint_free(cp);
    return SHAPE_IS(t, 2, 3) && at(t, 1) == -0.5;)


AREA("Call sites")

ROW(call_site_enter_null, "gad_call_site_enter", "NULL", "file NULL",
    "the previous site; none recorded after", E_OK, "", NULL, 0,
    gad_call_site prev = gad_call_site_enter(NULL, 5);
    gad_tensor *y = gad_matmul(F32T(2, 3), F32T(2, 3));
    const gad_error *e = gad_last_error();
    int ok = prev.file == NULL && !y && e && e->file == NULL && e->line == 0;
    gad_call_site_leave(prev);
    gad_clear_error();
    return ok;)
ROW(call_site_leave_restores, "gad_call_site_leave", "odd", "nested enters and leaves",
    "each leave restores the site before its enter", E_OK, "", NULL, 0,
    gad_call_site a = gad_call_site_enter("a.c", 1);
    gad_call_site b = gad_call_site_enter("b.c", 2);
    gad_call_site_leave(b);
    gad_tensor *y = gad_matmul(F32T(2, 3), F32T(2, 3));
    const gad_error *e = gad_last_error();
    int ok = !y && e && e->file && strcmp(e->file, "a.c") == 0 && e->line == 1 &&
             strstr(e->text, " (at a.c:1)") != NULL;
    gad_call_site_leave(a);
    gad_clear_error();
    return ok;)
ROW(error_set_at_kind_ok, "gad_error_set_at", "value", "kind GAD_OK", "NULL; a domain error",
    E_DOMAIN, "mine", "x", 0,
    return gad_error_set_at("f.c", 3, GAD_OK, "mine", "x") == NULL && gad_last_error() &&
           gad_last_error()->line == 3;)
ROW(error_set_at_null_file, "gad_error_set_at", "NULL", "file NULL", "NULL; no site",
    E_SHAPE, "mine", "y", 0,
    return gad_error_set_at(NULL, 3, GAD_ERR_SHAPE, "mine", "y") == NULL &&
           gad_last_error() && gad_last_error()->file == NULL;)

AREA("Parameter sets and parameter groups")

ROW(params_new_empty, "gad_params_new", "empty", "a new set", "an empty set", E_OK, "",
    NULL, 0,
    gad_params *ps = gad_params_new();
    int ok = ps && gad_params_count(ps) == 0 && gad_params_numel(ps) == 0;
    gad_params_free(ps);
    return ok;)
ROW(params_new_nomem, "gad_params_new", "memory", "the allocator fails", "NULL", E_MEM,
    "params_new", NULL, 0,
    failing_allocator(1);
    gad_params *ps = gad_params_new();
    failing_allocator(0);
    return ps == NULL;)
GOOD(params_free_null, "gad_params_free", "NULL", "ps NULL", "nothing (a no-op)",
     (gad_params_free(NULL), 1))
TBAD(params_add_null_set, "gad_params_add", "NULL", "ps NULL", E_DOMAIN, "params_add", "set",
     gad_params_add(NULL, "w", F32T(2)))
ROW(params_add_null_name, "gad_params_add", "NULL", "name NULL", "NULL", E_DOMAIN,
    "params_add", "name", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add(ps, NULL, F32T(2)) == NULL && gad_params_count(ps) == 0;
    gad_params_free(ps);
    return ok;)
ROW(params_add_null_t, "gad_params_add", "NULL", "t NULL", "NULL", E_DOMAIN, "params_add",
    "\"w\"", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add(ps, "w", NULL) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_add_dup_name, "gad_params_add", "value", "a name already in the set", "NULL",
    E_DOMAIN, "params_add", "already in the set", 0,
    gad_params *ps = set2();
    int ok = gad_params_add(ps, "a", F32T(2)) == NULL && gad_params_count(ps) == 2;
    gad_params_free(ps);
    return ok;)
ROW(params_add_dup_tensor, "gad_params_add", "value", "a tensor already in the set", "NULL",
    E_DOMAIN, "params_add", "same tensor as \"a\"", 0,
    gad_params *ps = set2();
    int ok = gad_params_add(ps, "c", gad_params_at(ps, 0)) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_add_metadata, "gad_params_add", "value", "the name \"__metadata__\"", "NULL",
    E_DOMAIN, "params_add", "reserved", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add(ps, "__metadata__", F32T(2)) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_add_utf8, "gad_params_add", "value", "a name that is not UTF-8", "NULL",
    E_DOMAIN, "params_add", "UTF-8", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add(ps, "w\xc3", F32T(2)) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_add_i64, "gad_params_add", "dtype", "an i64 tensor", "NULL", E_DTYPE,
    "params_add", "i64", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add(ps, "i", I64T(2)) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_add_bf16, "gad_params_add", "dtype", "a bf16 tensor", "the tensor (a half parameter)",
    E_OK, "", NULL, 0,
    gad_params *ps = gad_params_new();
    gad_tensor *t = gad_zeros((int64_t[]){2}, 1, GAD_BF16);
    int ok = ps && t && gad_params_add(ps, "w", t) == t;
    gad_release(t);
    gad_params_free(ps);
    return ok;)
ROW(params_add_op, "gad_params_add", "non-leaf", "t the output of a tracked op", "NULL",
    E_DOMAIN, "params_add", "result of an op", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add(ps, "t", tracked()) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_add_leaf, "gad_params_add", "odd", "t a constant (not yet a leaf)",
    "t, now a leaf", E_OK, "", NULL, 0,
    gad_params *ps = gad_params_new();
    gad_tensor *t = F32T(2);
    int ok = gad_params_add(ps, "", t) == t && gad_is_leaf(t);
    gad_params_free(ps);
    return ok;)
ROW(params_add_released, "gad_params_add", "released", "t released", "NULL; the set unchanged",
    E_DOMAIN, "params_add", "use of a released tensor", 0, gad_params *ps = gad_params_new();
    int ok = !gad_params_add(ps, "a", dead()) && gad_params_count(ps) == 0;
    gad_params_free(ps);
    return ok;)
ROW(params_count_null, "gad_params_count", "NULL", "ps NULL", "-1", E_DOMAIN,
    "params_count", NULL, 0, return gad_params_count(NULL) == -1;)
ROW(params_name_index, "gad_params_name", "index", "i = 2 in a set of 2", "NULL", E_INDEX,
    "params_name", "[0, 2)", 0,
    gad_params *ps = set2();
    int ok = gad_params_name(ps, 2) == NULL;
    gad_params_free(ps);
    return ok;)
TBAD(params_name_null, "gad_params_name", "NULL", "ps NULL", E_DOMAIN, "params_name", NULL,
     gad_params_name(NULL, 0))
ROW(params_at_index, "gad_params_at", "index", "i = -1", "NULL", E_INDEX, "params_at",
    "-1", 0,
    gad_params *ps = set2();
    int ok = gad_params_at(ps, -1) == NULL;
    gad_params_free(ps);
    return ok;)
TBAD(params_at_null, "gad_params_at", "NULL", "ps NULL", E_DOMAIN, "params_at", NULL,
     gad_params_at(NULL, 0))
ROW(params_get_absent, "gad_params_get", "index", "a name not in the set", "NULL",
    E_INDEX, "params_get", "\"zz\"", 0,
    gad_params *ps = set2();
    int ok = gad_params_get(ps, "zz") == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_get_null_name, "gad_params_get", "NULL", "name NULL", "NULL", E_DOMAIN,
    "params_get", NULL, 0,
    gad_params *ps = set2();
    int ok = gad_params_get(ps, NULL) == NULL;
    gad_params_free(ps);
    return ok;)
TBAD(params_tensors_null, "gad_params_tensors", "NULL", "ps NULL", E_DOMAIN,
     "params_tensors", NULL, gad_params_tensors(NULL))
ROW(params_tensors_empty, "gad_params_tensors", "empty", "an empty set", "NULL (no error)",
    E_OK, "", NULL, 0,
    gad_params *ps = gad_params_new();
    int ok = ps && gad_params_tensors(ps) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_numel_null, "gad_params_numel", "NULL", "ps NULL", "-1", E_DOMAIN,
    "params_numel", NULL, 0, return gad_params_numel(NULL) == -1;)
ROW(params_freeze_nomatch, "gad_params_freeze", "index", "a pattern no name matches", "-1",
    E_INDEX, "params_freeze", "\"b.*\"", 0,
    gad_params *ps = set2();
    int ok = gad_params_freeze(ps, "b.*", 1) == -1 && gad_is_leaf(gad_params_at(ps, 0));
    gad_params_free(ps);
    return ok;)
ROW(params_freeze_null, "gad_params_freeze", "NULL", "pattern NULL", "-1", E_DOMAIN,
    "params_freeze", "pattern", 0,
    gad_params *ps = set2();
    int ok = gad_params_freeze(ps, NULL, 1) == -1;
    gad_params_free(ps);
    return ok;)
ROW(params_freeze_nomem, "gad_params_freeze", "memory", "unfreezing; the allocator fails",
    "-1; every parameter as it was", E_MEM, "params_freeze", NULL, 0,
    gad_params *ps = set2();
    gad_params_freeze(ps, "*", 1);
    failing_allocator(1);
    int r = gad_params_freeze(ps, "*", 0);
    failing_allocator(0);
    int ok = r == -1 && !gad_is_tracked(gad_params_at(ps, 0)) &&
             !gad_is_tracked(gad_params_at(ps, 1));
    gad_params_free(ps);
    return ok;)
ROW(params_freeze_again, "gad_params_freeze", "odd", "freezing a frozen parameter",
    "the count matched; it stays frozen", E_OK, "", NULL, 0,
    gad_params *ps = set2();
    int ok = gad_params_freeze(ps, "a", 1) == 1 && gad_params_freeze(ps, "a", 1) == 1 &&
             !gad_is_tracked(gad_params_at(ps, 0)) && gad_is_leaf(gad_params_at(ps, 1));
    gad_params_free(ps);
    return ok;)
ROW(params_grad_null, "gad_params_grad", "NULL", "grads NULL", "status", E_DOMAIN,
    "params_grad", "grads", 0,
    gad_params *ps = set2();
    int ok = gad_params_grad(ps, gad_sum_all(gad_params_at(ps, 0)), NULL) == E_DOMAIN;
    gad_params_free(ps);
    return ok;)
ROW(params_grad_shape, "gad_params_grad", "shape", "out [2,3] (not one element)",
    "status; grads[i] NULL", E_SHAPE, "grad", "[2,3]", 0,
    gad_params *ps = set2();
    gad_tensor *g[2] = {F32T(1), F32T(1)};
    int ok = gad_params_grad(ps, gad_neg(gad_params_at(ps, 0)), g) == E_SHAPE && !g[0] && !g[1];
    gad_params_free(ps);
    return ok;)
ROW(params_grad_frozen, "gad_params_grad", "odd", "a frozen parameter",
    "GAD_OK; NULL for it", E_OK, "", NULL, 0,
    gad_params *ps = set2();
    gad_params_freeze(ps, "a", 1);
    gad_tensor *g[2];
    int ok = gad_params_grad(ps, gad_sum_all(gad_mul(gad_params_at(ps, 0),
                                                     gad_params_at(ps, 1))), g) == GAD_OK &&
             g[0] == NULL && SHAPE_IS(g[1], 3);
    gad_params_free(ps);
    return ok;)
ROW(params_grad_released, "gad_params_grad", "released", "out released",
    "status; grads[i] NULL", E_DOMAIN, "params_grad", "use of a released tensor", 0,
    gad_params *ps = set2();
    gad_tensor *g[2] = {F32T(1), F32T(1)};
    int ok = gad_params_grad(ps, dead(), g) == E_DOMAIN && !g[0] && !g[1];
    gad_params_free(ps);
    return ok;)
SBAD(params_save_null, "gad_params_save", "NULL", "ps NULL", E_DOMAIN, "params_save", NULL,
     gad_params_save(NULL, tpath("p.st")))
ROW(params_save_nopath, "gad_params_save", "NULL", "path NULL", "status", E_DOMAIN, "save",
    "NULL", 0,
    gad_params *ps = set2();
    int ok = gad_params_save(ps, NULL) == E_DOMAIN;
    gad_params_free(ps);
    return ok;)
SBAD(params_load_null, "gad_params_load", "NULL", "ps NULL", E_DOMAIN, "params_load", NULL,
     gad_params_load(NULL, good_path(), 1, NULL))
ROW(params_load_absent, "gad_params_load", "io", "a file that does not exist", "status",
    E_IO, "load", "absent.st", 0,
    gad_params *ps = set2();
    int ok = gad_params_load(ps, tpath("absent.st"), 1, NULL) == E_IO;
    gad_params_free(ps);
    return ok;)
ROW(params_load_mismatch, "gad_params_load", "shape",
    "good.st: \"a\" f32 [2,3] fits, \"b\" is unexpected, \"a.b\" missing",
    "status; nothing written", E_INDEX, "params_load", "missing \"a.b\"", 0,
    gad_params *ps = set2();
    gad_params_load_info in;
    double before = at(gad_params_at(ps, 0), 0);
    int ok = make_good_file() && gad_params_load(ps, good_path(), 1, &in) == E_INDEX &&
             in.missing == 1 && in.unexpected == 1 && at(gad_params_at(ps, 0), 0) == before;
    gad_params_free(ps);
    return ok;)
ROW(params_load_shape, "gad_params_load", "shape", "a tensor of another shape", "status",
    E_SHAPE, "params_load", "[2,3] in the file, f32 [3,2]", 0,
    gad_params *ps = gad_params_new();
    gad_params_add(ps, "a", F32T(3, 2));
    int ok = make_good_file() && gad_params_load(ps, good_path(), 0, NULL) == E_SHAPE;
    gad_params_free(ps);
    return ok;)
ROW(params_load_dtype, "gad_params_load", "dtype", "a tensor of another dtype", "status",
    E_DTYPE, "params_load", "i64 [2] in the file, f32 [2]", 0,
    gad_params *ps = gad_params_new();
    gad_params_add(ps, "b", F32T(2));
    int ok = make_good_file() && gad_params_load(ps, good_path(), 0, NULL) == E_DTYPE;
    gad_params_free(ps);
    return ok;)
ROW(params_load_nonstrict, "gad_params_load", "odd", "not strict, names missing and unexpected",
    "GAD_OK; the rest loaded", E_OK, "", NULL, 0,
    gad_params *ps = set2();
    gad_params_load_info in;
    int ok = make_good_file() && gad_params_load(ps, good_path(), 0, &in) == GAD_OK &&
             in.loaded == 1 && in.missing == 1 && in.unexpected == 1 &&
             at(gad_params_at(ps, 0), 1) == -0.5;
    gad_params_free(ps);
    return ok;)
/* issue 29 layers: tied names (gad_params_add_tied) */
ROW(params_tied_foreign, "gad_params_add_tied", "value", "a tensor that is not in the set",
    "NULL", E_DOMAIN, "params_add_tied", "not a parameter of the set", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add_tied(ps, "head.weight", F32T(2, 3)) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_tied_dup, "gad_params_add_tied", "value", "a name already in the set", "NULL",
    E_DOMAIN, "params_add_tied", "\"w\" is already in the set", 0,
    gad_params *ps = gad_params_new();
    gad_tensor *w = gad_params_add(ps, "w", F32T(2, 3));
    int ok = w && gad_params_add_tied(ps, "w", w) == NULL;
    gad_params_free(ps);
    return ok;)
/* issue 29 layers: a PyTorch state_dict into a layer of another shape */
ROW(nn_load_shape, "gad_params_load", "shape", "a Linear(8, 10) head for PyTorch's [11,8] one",
    "status", E_SHAPE, "params_load", "\"text.head.weight\" is f32 [11,8] in the file, f32 [10,8] "
    "in the set", 0,
    gad_params *ps = gad_params_new();
    gad_nn_ctx c = {ps, NULL, GAD_F32};
    gad_module *m = gad_nn_linear(&c, "text.head", 8, 10, 1);
    int ok = m && gad_params_load(ps, GAD_SOURCE_DIR "/tests/data/torch_layers.safetensors", 0,
                                  NULL) == GAD_ERR_SHAPE;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(params_load_ckpt_null, "gad_params_load_checkpoint", "NULL", "cp NULL", "status",
    E_DOMAIN, "params_load", "checkpoint", 0,
    gad_params *ps = set2();
    int ok = gad_params_load_checkpoint(ps, NULL, 1, NULL) == E_DOMAIN;
    gad_params_free(ps);
    return ok;)
ROW(params_load_ckpt_cut, "gad_params_load_checkpoint", "io",
    "the file emptied in place after gad_load", "status; nothing written", E_IO,
    "checkpoint_get", "ended early", 0,
    int ok = make_good_file();
    gad_checkpoint *cp = good_ckpt();
    gad_params *ps = gad_params_new();
    gad_params_add(ps, "a", F32T(2, 3));
    double before = at(gad_params_at(ps, 0), 0);
    ok = ok && cp && truncate(good_path(), 0) == 0 &&
         gad_params_load_checkpoint(ps, cp, 0, NULL) == E_IO &&
         at(gad_params_at(ps, 0), 0) == before;
    gad_checkpoint_free(cp);
    gad_params_free(ps);
    return make_good_file() && ok;)

TBAD(sgd_groups_none, "gad_sgd_new_groups", "value", "ngroups = 0", E_DOMAIN,
     "sgd_new_groups", "ngroups = 0", gad_sgd_new_groups(NULL, 0, NULL))
ROW(sgd_groups_lr, "gad_sgd_new_groups", "value", "a group's lr -1", "NULL", E_DOMAIN,
    "sgd_new_groups", "groups[0].lr = -1", 0,
    gad_tensor *p = LEAF32(2);
    gad_param_group g = {.params = &p, .n = 1, .lr = -1};
    return gad_sgd_new_groups(&g, 1, NULL) == NULL;)
ROW(sgd_groups_match, "gad_sgd_new_groups", "value", "a group with a .match pattern",
    "NULL", E_DOMAIN, "sgd_new_groups", "match", 0,
    gad_tensor *p = LEAF32(2);
    gad_param_group g = {.params = &p, .n = 1, .match = "*"};
    return gad_sgd_new_groups(&g, 1, NULL) == NULL;)
ROW(sgd_groups_neg_n, "gad_sgd_new_groups", "value", "a group with n = -1", "NULL",
    E_DOMAIN, "sgd_new_groups", "n = -1", 0,
    gad_tensor *p = LEAF32(2);
    gad_param_group g = {.params = &p, .n = -1};
    return gad_sgd_new_groups(&g, 1, NULL) == NULL;)
ROW(adamw_groups_dup, "gad_adamw_new_groups", "value", "one tensor in two groups", "NULL",
    E_DOMAIN, "adamw_new_groups", "same tensor", 0,
    gad_tensor *p = LEAF32(2);
    gad_param_group g[2] = {{.params = &p, .n = 1}, {.params = &p, .n = 1}};
    return gad_adamw_new_groups(g, 2, NULL) == NULL;)
ROW(adamw_groups_wd, "gad_adamw_new_groups", "NaN/Inf", "a group's weight_decay NaN",
    "NULL", E_DOMAIN, "adamw_new_groups", "weight_decay", 0,
    gad_tensor *p = LEAF32(2);
    gad_param_group g = {.params = &p, .n = 1, .weight_decay = NAN};
    return gad_adamw_new_groups(&g, 1, NULL) == NULL;)
ROW(adamw_groups_empty, "gad_adamw_new_groups", "empty", "a group with no tensors",
    "an optimizer (nothing to update)", E_OK, "", NULL, 0,
    gad_param_group g = {.n = 0};
    gad_optim *o = gad_adamw_new_groups(&g, 1, NULL);
    int ok = o && gad_optim_step(o, NULL) == GAD_OK && gad_optim_steps(o) == 1;
    gad_optim_free(o);
    return ok;)
TBAD(sgd_params_null, "gad_sgd_new_params", "NULL", "ps NULL", E_DOMAIN, "sgd_new_params",
     "set", gad_sgd_new_params(NULL, NULL, 0, NULL))
ROW(sgd_params_nomatch, "gad_sgd_new_params", "value", "a group without a .match pattern",
    "NULL", E_DOMAIN, "sgd_new_params", ".match", 0,
    gad_params *ps = set2();
    gad_param_group g = {.lr = 0.1};
    gad_optim *o = gad_sgd_new_params(ps, &g, 1, NULL);
    gad_params_free(ps);
    return o == NULL;)
ROW(adamw_params_unmatched, "gad_adamw_new_params", "index",
    "a pattern that matches no parameter", "NULL", E_INDEX, "adamw_new_params", "\"*.bias\"", 0,
    gad_params *ps = set2();
    gad_param_group g = {.match = "*.bias", .no_weight_decay = 1};
    gad_optim *o = gad_adamw_new_params(ps, &g, 1, NULL);
    gad_params_free(ps);
    return o == NULL;)
ROW(adamw_params_neg, "gad_adamw_new_params", "value", "ngroups = -1", "NULL", E_DOMAIN,
    "adamw_new_params", "-1", 0,
    gad_params *ps = set2();
    gad_optim *o = gad_adamw_new_params(ps, NULL, -1, NULL);
    gad_params_free(ps);
    return o == NULL;)
ROW(adamw_params_empty, "gad_adamw_new_params", "empty", "an empty set",
    "an optimizer (nothing to update)", E_OK, "", NULL, 0,
    gad_params *ps = gad_params_new();
    gad_optim *o = gad_adamw_new_params(ps, NULL, 0, NULL);
    int ok = o && gad_optim_step(o, NULL) == GAD_OK && gad_optim_group_count(o) == 1;
    gad_optim_free(o);
    gad_params_free(ps);
    return ok;)
ROW(adamw_half_param, "gad_adamw_new_params", "dtype", "a set holding a bf16 parameter", "NULL",
    E_UNSUP, "adamw_new_params", "\"w\" is bf16", 0,
    gad_params *ps = gad_params_new();
    gad_tensor *t = gad_zeros((int64_t[]){2}, 1, GAD_BF16);
    int ok = ps && t && gad_params_add(ps, "w", t) == t &&
             gad_adamw_new_params(ps, NULL, 0, NULL) == NULL;
    gad_release(t);
    gad_params_free(ps);
    return ok;)
ROW(optim_group_count_null, "gad_optim_group_count", "NULL", "opt NULL", "-1", E_DOMAIN,
    "optim_group_count", NULL, 0, return gad_optim_group_count(NULL) == -1;)
ROW(optim_group_lr_index, "gad_optim_group_lr", "index", "group 1 of 1", "NaN", E_INDEX,
    "optim_group_lr", "[0, 1)", 0,
    gad_optim *o = sgd1(0);
    int ok = isnan(gad_optim_group_lr(o, 1));
    gad_optim_free(o);
    return ok;)
ROW(optim_group_lr_null, "gad_optim_group_lr", "NULL", "opt NULL", "NaN", E_DOMAIN,
    "optim_group_lr", NULL, 0, return isnan(gad_optim_group_lr(NULL, 0));)
ROW(optim_group_wd_index, "gad_optim_group_weight_decay", "index", "group -1", "NaN",
    E_INDEX, "optim_group_weight_decay", "-1", 0,
    gad_optim *o = adamw1();
    int ok = isnan(gad_optim_group_weight_decay(o, -1));
    gad_optim_free(o);
    return ok;)
ROW(optim_set_group_lr_index, "gad_optim_set_group_lr", "index", "group 3 of 1", "status",
    E_INDEX, "optim_set_group_lr", "3", 0,
    gad_optim *o = sgd1(0);
    int ok = gad_optim_set_group_lr(o, 3, 0.1) == E_INDEX && gad_optim_lr(o) == 0.01;
    gad_optim_free(o);
    return ok;)
ROW(optim_set_group_lr_nan, "gad_optim_set_group_lr", "NaN/Inf", "lr NaN", "status",
    E_DOMAIN, "optim_set_group_lr", "nan", 0,
    gad_optim *o = sgd1(0);
    int ok = gad_optim_set_group_lr(o, 0, NAN) == E_DOMAIN && gad_optim_lr(o) == 0.01;
    gad_optim_free(o);
    return ok;)
SBAD(optim_set_group_lr_null, "gad_optim_set_group_lr", "NULL", "opt NULL", E_DOMAIN,
     "optim_set_group_lr", NULL, gad_optim_set_group_lr(NULL, 0, 0.1))
/* ---- mixed precision (issue 29): working copies and the loss scaler */
SBAD(optim_copies_null, "gad_optim_set_copies", "NULL", "opt NULL", E_DOMAIN,
     "optim_set_copies", NULL,
     gad_optim_set_copies(NULL, (gad_tensor *const[]){gad_requires_grad(gad_cast(F32T(2, 3),
                                                                              GAD_BF16))}))
ROW(optim_copies_shape, "gad_optim_set_copies", "shape", "a [3, 2] copy of a [2, 3] master",
    "status", E_SHAPE, "optim_set_copies", "[3,2]", 0,
    gad_optim *o = sgd1(0);
    gad_tensor *c = gad_requires_grad(gad_cast(F32T(3, 2), GAD_BF16));
    int ok = gad_optim_set_copies(o, &c) == E_SHAPE;
    gad_optim_free(o);
    return ok;)
ROW(optim_copies_dtype, "gad_optim_set_copies", "dtype", "an i64 copy", "status", E_DTYPE,
    "optim_set_copies", "i64", 0,
    gad_optim *o = sgd1(0);
    gad_tensor *c = gad_zeros(DIMS(2, 3), GAD_I64);
    int ok = gad_optim_set_copies(o, &c) == E_DTYPE;
    gad_optim_free(o);
    return ok;)
ROW(optim_copies_nonleaf, "gad_optim_set_copies", "non-leaf", "a copy that is no leaf",
    "status", E_DOMAIN, "optim_set_copies", "not a leaf", 0,
    gad_optim *o = sgd1(0);
    gad_tensor *c = gad_cast(F32T(2, 3), GAD_F16);
    int ok = gad_optim_set_copies(o, &c) == E_DOMAIN;
    gad_optim_free(o);
    return ok;)
TBAD(grad_scaler_new_value, "gad_grad_scaler_new", "value", "init_scale -1", E_DOMAIN,
     "grad_scaler_new", "init_scale",
     gad_grad_scaler_new(&(gad_grad_scaler_opts){.init_scale = -1}))
TBAD(grad_scaler_new_nan, "gad_grad_scaler_new", "NaN/Inf", "growth_factor NaN", E_DOMAIN,
     "grad_scaler_new", "growth_factor",
     gad_grad_scaler_new(&(gad_grad_scaler_opts){.growth_factor = NAN}))
ROW(grad_scaler_free_null, "gad_grad_scaler_free", "NULL", "NULL (accepted)", "nothing", E_OK,
    "", NULL, 0, gad_grad_scaler_free(NULL); return 1;)
ROW(grad_scaler_scale_value_null, "gad_grad_scaler_scale_value", "NULL", "s NULL", "NaN",
    E_DOMAIN, "grad_scaler_scale_value", NULL, 0,
    return isnan(gad_grad_scaler_scale_value(NULL));)
ROW(grad_scaler_scale_null, "gad_grad_scaler_scale", "NULL", "loss NULL", "NULL", E_DOMAIN,
    "grad_scaler_scale", "loss", 0,
    gad_grad_scaler *sc = gad_grad_scaler_new(NULL);
    int ok = gad_grad_scaler_scale(sc, NULL) == NULL;
    gad_grad_scaler_free(sc);
    return ok;)
ROW(grad_scaler_unscale_dtype, "gad_grad_scaler_unscale", "dtype", "an i64 gradient", "-1",
    E_DTYPE, "grad_scaler_unscale", "i64", 0,
    gad_grad_scaler *sc = gad_grad_scaler_new(NULL);
    gad_tensor *g = gad_zeros(DIMS(2), GAD_I64), *out = NULL;
    int ok = gad_grad_scaler_unscale(sc, &g, &out, 1) == -1 && out == NULL;
    gad_grad_scaler_free(sc);
    return ok;)
ROW(grad_scaler_unscale_inf, "gad_grad_scaler_unscale", "NaN/Inf", "an f16 gradient of inf",
    "0 (skip the step)", E_OK, "", NULL, 0,
    gad_grad_scaler *sc = gad_grad_scaler_new(NULL);
    gad_tensor *g = gad_full(DIMS(2), GAD_F16, INFINITY), *out = NULL;
    int ok = gad_grad_scaler_unscale(sc, &g, &out, 1) == 0 && out != NULL;
    gad_grad_scaler_free(sc);
    return ok;)
SBAD(grad_scaler_update_null, "gad_grad_scaler_update", "NULL", "s NULL", E_DOMAIN,
     "grad_scaler_update", NULL, gad_grad_scaler_update(NULL, 1))
ROW(grad_scaler_step_shape, "gad_grad_scaler_step", "shape", "a [3] gradient of a [2, 3] master",
    "status", E_SHAPE, "optim_step", "[3]", 0,
    gad_grad_scaler *sc = gad_grad_scaler_new(NULL);
    gad_optim *o = sgd1(0);
    gad_tensor *g = F32T(3);
    int stepped = -1;
    int ok = gad_grad_scaler_step(sc, o, &g, &stepped) == E_SHAPE && stepped == 0 &&
             gad_optim_steps(o) == 0 && gad_grad_scaler_scale_value(sc) == 65536;
    gad_optim_free(o);
    gad_grad_scaler_free(sc);
    return ok;)
SBAD(grad_scaler_state_null, "gad_grad_scaler_state", "NULL", "s NULL", E_DOMAIN,
     "grad_scaler_state", NULL, gad_grad_scaler_state(NULL, NULL, NULL))
ROW(grad_scaler_load_state_value, "gad_grad_scaler_load_state", "value", "scale 0", "status",
    E_DOMAIN, "grad_scaler_load_state", "scale = 0", 0,
    gad_grad_scaler *sc = gad_grad_scaler_new(NULL);
    int ok = gad_grad_scaler_load_state(sc, 0, 0) == E_DOMAIN &&
             gad_grad_scaler_scale_value(sc) == 65536;
    gad_grad_scaler_free(sc);
    return ok;)
/* ---- buffers and the batch norm layer (issue 28) */
TBAD(params_buf_null_set, "gad_params_add_buffer", "NULL", "ps NULL", E_DOMAIN,
     "params_add_buffer", "set", gad_params_add_buffer(NULL, "m", F32T(2)))
ROW(params_buf_dup_name, "gad_params_add_buffer", "value", "a parameter's name", "NULL",
    E_DOMAIN, "params_add_buffer", "already in the set", 0,
    gad_params *ps = set2();
    int ok = gad_params_add_buffer(ps, "a", F32T(2)) == NULL && gad_params_buffer_count(ps) == 0;
    gad_params_free(ps);
    return ok;)
ROW(params_buf_leaf, "gad_params_add_buffer", "non-leaf", "t a leaf (on the tape)", "NULL",
    E_DOMAIN, "params_add_buffer", "on the tape", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add_buffer(ps, "m", LEAF32(2)) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_buf_i64, "gad_params_add_buffer", "dtype", "an i64 scalar", "the tensor",
    E_OK, "", NULL, 0,
    gad_params *ps = gad_params_new();
    int ok = gad_params_add_buffer(ps, "n", gad_zeros(NULL, 0, GAD_I64)) != NULL &&
             gad_params_buffer_count(ps) == 1 && gad_params_count(ps) == 0;
    gad_params_free(ps);
    return ok;)
ROW(params_buf_count_null, "gad_params_buffer_count", "NULL", "ps NULL", "-1", E_DOMAIN,
    "params_buffer_count", NULL, 0, return gad_params_buffer_count(NULL) == -1;)
ROW(params_buf_name_index, "gad_params_buffer_name", "index", "i = 0 in a set without buffers",
    "NULL", E_INDEX, "params_buffer_name", "[0, 0)", 0,
    gad_params *ps = set2();
    int ok = gad_params_buffer_name(ps, 0) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(params_buf_at_index, "gad_params_buffer_at", "index", "i = -1", "NULL", E_INDEX,
    "params_buffer_at", "index -1", 0,
    gad_params *ps = set2();
    int ok = gad_params_buffer_at(ps, -1) == NULL;
    gad_params_free(ps);
    return ok;)
SBAD(bn_params_null, "gad_batch_norm_params", "NULL", "ps NULL", E_DOMAIN, "batch_norm_params",
     "set", gad_batch_norm_params(NULL, "bn", 3, GAD_F32, 1, 1))
ROW(bn_params_i64, "gad_batch_norm_params", "dtype", "dtype i64", "status", E_DTYPE,
    "batch_norm_params", "i64", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_batch_norm_params(ps, "bn", 3, GAD_I64, 1, 1) == GAD_ERR_DTYPE;
    gad_params_free(ps);
    return ok;)
ROW(bn_params_dup, "gad_batch_norm_params", "value", "a prefix already used", "status",
    E_DOMAIN, "batch_norm_params", "bn.weight", 0,
    gad_params *ps = gad_params_new();
    int ok = gad_batch_norm_params(ps, "bn", 3, GAD_F32, 1, 1) == GAD_OK;
    ok = ok && gad_batch_norm_params(ps, "bn", 3, GAD_F32, 1, 1) == GAD_ERR_DOMAIN &&
         gad_params_count(ps) == 2 && gad_params_buffer_count(ps) == 3;
    gad_params_free(ps);
    return ok;)
ROW(bn_layer_missing, "gad_batch_norm_layer", "index", "no layer under the prefix", "NULL",
    E_INDEX, "batch_norm_layer", "\"bn\"", 0,
    gad_params *ps = set2();
    int ok = gad_batch_norm_layer(ps, "bn", F32T(4, 3), 1, 0.1, 1e-5) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(bn_layer_shape, "gad_batch_norm_layer", "shape", "x [4,2] for a 3-channel layer", "NULL",
    E_SHAPE, "batch_norm_layer", "[N, 3, ...]", 0,
    gad_params *ps = gad_params_new();
    gad_batch_norm_params(ps, "bn", 3, GAD_F32, 1, 1);
    int ok = gad_batch_norm_layer(ps, "bn", F32T(4, 2), 1, 0.1, 1e-5) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(bn_layer_null, "gad_batch_norm_layer", "NULL", "x NULL", "NULL", E_DOMAIN,
    "batch_norm_layer", "input", 0,
    gad_params *ps = set2();
    int ok = gad_batch_norm_layer(ps, "bn", NULL, 1, 0.1, 1e-5) == NULL;
    gad_params_free(ps);
    return ok;)

/* ---- layers with PyTorch's names (issue 29: src/nn/modules.c) ---- */
AREA("Layers with PyTorch's names")

#define NN_CTX                                                                 \
    gad_params *ps = gad_params_new();                                         \
    gad_nn_ctx c = {ps, NULL, GAD_F32}
TBAD(nn_fwd_null, "gad_module_forward", "NULL", "m NULL", E_DOMAIN, "module_forward", "module",
     gad_module_forward(NULL, F32T(2, 3)))
ROW(nn_fwd_linear_shape, "gad_module_forward", "shape", "x [4,2] into Linear(3, 2)", "NULL",
    E_SHAPE, "Linear", "\"fc\": x [4,2] must be [..., 3]", 0,
    NN_CTX;
    gad_module *m = gad_nn_linear(&c, "fc", 3, 2, 1);
    int ok = m && gad_module_forward(m, F32T(4, 2)) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_fwd_bn_rank, "gad_module_forward", "rank", "x [4,3] into BatchNorm2d(3)", "NULL",
    E_SHAPE, "BatchNorm2d", "[N, C, H, W] with C = 3", 0,
    NN_CTX;
    gad_module *m = gad_nn_batch_norm2d(&c, "bn", 3, 1e-5, 0.1, 1, 1);
    int ok = m && gad_module_forward(m, F32T(4, 3)) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_fwd_conv_channels, "gad_module_forward", "shape", "x [1,2,5,5] into Conv2d(3, 4, 3)",
    "NULL", E_SHAPE, "Conv2d", "\"conv\": x [1,2,5,5] must be [N, 3, H, W]", 0,
    NN_CTX;
    gad_module *m = gad_nn_conv2d(&c, "conv", 3, 4, 3, 3, NULL, 1);
    int ok = m && gad_module_forward(m, F32T(1, 2, 5, 5)) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_fwd_emb_dtype, "gad_module_forward", "dtype", "f32 indices into an Embedding", "NULL",
    E_DTYPE, "Embedding", "indices must be i64", 0,
    NN_CTX;
    gad_module *m = gad_nn_embedding(&c, "emb", 4, 2, GAD_NN_NO_PADDING);
    int ok = m && gad_module_forward(m, F32T(3)) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
TBAD(nn_train_null, "gad_module_train", "NULL", "m NULL", E_DOMAIN, "module_train", "module",
     gad_module_train(NULL, 0))
GOOD(nn_training_null, "gad_module_training", "NULL", "m NULL", "-1", gad_module_training(NULL) == -1)
GOOD(nn_type_null, "gad_module_type", "NULL", "m NULL", "\"?\"", !strcmp(gad_module_type(NULL), "?"))
GOOD(nn_prefix_null, "gad_module_prefix", "NULL", "m NULL", "NULL", gad_module_prefix(NULL) == NULL)
ROW(nn_tensor_absent, "gad_module_tensor", "index", "\"bias\" of a bias-less Linear", "NULL",
    E_INDEX, "module_tensor", "Linear \"fc\" has no tensor \"bias\"", 0,
    NN_CTX;
    gad_module *m = gad_nn_linear(&c, "fc", 3, 2, 0);
    int ok = m && gad_module_tensor(m, "bias") == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_child_count_null, "gad_module_child_count", "NULL", "m NULL", "-1", E_DOMAIN,
    "module_child_count", "module", 0, return gad_module_child_count(NULL) == -1;)
ROW(nn_child_range, "gad_module_child", "index", "child 1 of a Sequential holding one", "NULL",
    E_INDEX, "module_child", "has 1 children, asked 1", 0,
    NN_CTX;
    gad_module *s = gad_nn_sequential(&c, "s");
    gad_nn_seq_add(s, gad_nn_relu());
    int ok = gad_module_child(s, 1) == NULL;
    gad_module_free(s);
    gad_params_free(ps);
    return ok;)
GOOD(nn_free_null, "gad_module_free", "NULL", "m NULL", "nothing", (gad_module_free(NULL), 1))
TBAD(nn_seq_null, "gad_nn_sequential", "NULL", "context NULL", E_DOMAIN, "Sequential", "context",
     gad_nn_sequential(NULL, "s"))
TBAD(nn_seq_next_null, "gad_nn_seq_next", "NULL", "container NULL", E_DOMAIN, "nn_seq_next",
     "container", gad_nn_seq_next(NULL))
ROW(nn_seq_add_not_seq, "gad_nn_seq_add", "odd", "a Linear as the container", "NULL", E_DOMAIN,
    "nn_seq_add", "Linear \"fc\" is not a Sequential", 0,
    NN_CTX;
    gad_module *m = gad_nn_linear(&c, "fc", 3, 2, 0);
    int ok = m && gad_nn_seq_add(m, gad_nn_relu()) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_seq_failed_child, "gad_nn_seq_add", "value", "a failed child (Dropout(1.5)), then forward",
    "NULL", E_DOMAIN, "Dropout", "p = 1.5", 0,
    NN_CTX;
    gad_module *s = gad_nn_sequential(&c, "s");
    int ok = gad_nn_seq_add(s, gad_nn_dropout(&c, 1.5)) == NULL &&
             gad_module_forward(s, F32T(2)) == NULL;
    gad_module_free(s);
    gad_params_free(ps);
    return ok;)
ROW(nn_prefix_long, "gad_nn_prefix", "value", "a joined name of 600 bytes", "NULL", E_DOMAIN,
    "Sequential", "longer than 511 bytes", 0,
    NN_CTX;
    gad_module *s = gad_nn_sequential(&c, "s");
    char name[600];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = 0;
    int ok = gad_nn_prefix(s, name) == NULL;
    gad_module_free(s);
    gad_params_free(ps);
    return ok;)
ROW(nn_linear_neg, "gad_nn_linear", "value", "in_features -1", "NULL", E_DOMAIN, "Linear",
    "\"fc\": in_features = -1", 0,
    NN_CTX;
    int ok = gad_nn_linear(&c, "fc", -1, 2, 1) == NULL && gad_params_count(ps) == 0;
    gad_params_free(ps);
    return ok;)
ROW(nn_linear_i64, "gad_nn_linear", "dtype", "parameters of dtype i64", "NULL", E_DTYPE,
    "Linear", "must be f32 or f64, got i64", 0,
    gad_params *ps = gad_params_new();
    gad_nn_ctx c = {ps, NULL, GAD_I64};
    int ok = gad_nn_linear(&c, "fc", 3, 2, 1) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(nn_linear_dup, "gad_nn_linear", "value", "a prefix already used", "NULL", E_DOMAIN, "Linear",
    "\"fc.weight\" is already in the set", 0,
    NN_CTX;
    gad_module *m = gad_nn_linear(&c, "fc", 3, 2, 1);
    int ok = m && gad_nn_linear(&c, "fc", 3, 2, 1) == NULL && gad_params_count(ps) == 2;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_linear_tied_rank, "gad_nn_linear_tied", "rank", "a tied weight [6]", "NULL", E_SHAPE,
    "Linear", "the tied weight f32 [6] must be [out, in]", 0,
    NN_CTX;
    int ok = gad_nn_linear_tied(&c, "head", F32T(6), 1) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(nn_emb_pad, "gad_nn_embedding", "index", "padding_idx 5 of 5 rows", "NULL", E_DOMAIN,
    "Embedding", "padding_idx = 5 must be within num_embeddings = 5", 0,
    NN_CTX;
    int ok = gad_nn_embedding(&c, "emb", 5, 2, 5) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(nn_ln_eps, "gad_nn_layer_norm", "NaN/Inf", "eps NaN", "NULL", E_DOMAIN, "LayerNorm",
    "eps = nan", 0,
    NN_CTX;
    int64_t d = 4;
    int ok = gad_nn_layer_norm(&c, "ln", &d, 1, NAN, 1, 1) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(nn_rms_rank0, "gad_nn_rms_norm", "rank", "normalized_shape of 0 dims", "NULL", E_DOMAIN,
    "RMSNorm", "normalized_shape needs 1 to", 0,
    NN_CTX;
    int64_t d = 4;
    int ok = gad_nn_rms_norm(&c, "rn", &d, 0, NAN, 1) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(nn_mha_heads, "gad_nn_multihead_attention", "value", "embed_dim 10, num_heads 3", "NULL",
    E_DOMAIN, "MultiheadAttention", "embed_dim = 10 is not divisible by num_heads = 3", 0,
    NN_CTX;
    int ok = gad_nn_multihead_attention(&c, "attn", 10, 3, 0.0, 1) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(nn_mha_fwd_shape, "gad_nn_mha_forward", "shape", "q [2,3,5] for embed_dim 4", "NULL",
    E_SHAPE, "MultiheadAttention", "must be [B, T, 4]", 0,
    NN_CTX;
    gad_module *m = gad_nn_multihead_attention(&c, "attn", 4, 2, 0.0, 1);
    gad_tensor *q = F32T(2, 3, 5);
    int ok = m && gad_nn_mha_forward(m, q, q, q, NULL, NULL, 0) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_mha_fwd_mask, "gad_nn_mha_forward", "shape", "attn_mask [2,2] for T = S = 3", "NULL",
    E_SHAPE, "MultiheadAttention", "attn_mask [2,2] must be [3,3] or [4,3,3]", 0,
    NN_CTX;
    gad_module *m = gad_nn_multihead_attention(&c, "attn", 4, 2, 0.0, 1);
    gad_tensor *q = F32T(2, 3, 4);
    int ok = m && gad_nn_mha_forward(m, q, q, q, NULL, F32T(2, 2), 0) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_enc_heads, "gad_nn_transformer_encoder_layer", "value", "d_model 6, nhead 4", "NULL",
    E_DOMAIN, "TransformerEncoderLayer", "d_model = 6 must be > 0 and divisible by nhead = 4", 0,
    NN_CTX;
    int ok = gad_nn_transformer_encoder_layer(&c, "enc", 6, 4, 8, 0.1, GAD_NN_RELU, 1e-5, 0, 1) ==
                 NULL &&
             gad_params_count(ps) == 0;
    gad_params_free(ps);
    return ok;)
ROW(nn_enc_fwd_kind, "gad_nn_encoder_layer_forward", "odd", "a Linear given", "NULL", E_DOMAIN,
    "nn_encoder_layer_forward", "is not a TransformerEncoderLayer", 0,
    NN_CTX;
    gad_module *m = gad_nn_linear(&c, "fc", 3, 2, 0);
    int ok = m && gad_nn_encoder_layer_forward(m, F32T(2, 3), NULL, NULL, 0) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_enc_fwd_width, "gad_nn_encoder_layer_forward", "shape", "x [2,3,5] for d_model 4",
    "NULL", E_SHAPE, "TransformerEncoderLayer", "\"enc\": x [2,3,5] must be [B, T, 4]", 0,
    NN_CTX;
    gad_module *m =
        gad_nn_transformer_encoder_layer(&c, "enc", 4, 2, 8, 0.0, GAD_NN_GELU, 1e-5, 1, 1);
    int ok = m && gad_nn_encoder_layer_forward(m, F32T(2, 3, 5), NULL, NULL, 0) == NULL;
    gad_module_free(m);
    gad_params_free(ps);
    return ok;)
ROW(nn_conv_groups, "gad_nn_conv2d", "value", "groups 3 for 4 -> 6 channels", "NULL", E_DOMAIN,
    "Conv2d", "groups = 3 must divide in_channels = 4 and out_channels = 6", 0,
    NN_CTX;
    gad_conv_opts o = {.groups = 3};
    int ok = gad_nn_conv2d(&c, "conv", 4, 6, 3, 3, &o, 1) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(nn_bn2d_i64, "gad_nn_batch_norm2d", "dtype", "parameters of dtype i64", "NULL", E_DTYPE,
    "BatchNorm2d", "got i64", 0,
    gad_params *ps = gad_params_new();
    gad_nn_ctx c = {ps, NULL, GAD_I64};
    int ok = gad_nn_batch_norm2d(&c, "bn", 3, 1e-5, 0.1, 1, 1) == NULL;
    gad_params_free(ps);
    return ok;)
ROW(nn_bn1d_zero, "gad_nn_batch_norm1d", "value", "num_features 0", "NULL", E_DOMAIN,
    "BatchNorm1d", "num_features = 0 must be > 0", 0,
    NN_CTX;
    int ok = gad_nn_batch_norm1d(&c, "bn", 0, 1e-5, 0.1, 1, 1) == NULL;
    gad_params_free(ps);
    return ok;)
GOOD(nn_relu_ok, "gad_nn_relu", "odd", "no arguments", "a module",
     ({ gad_module *m = gad_nn_relu(); int ok_ = m != NULL; gad_module_free(m); ok_; }))
GOOD(nn_gelu_ok, "gad_nn_gelu", "odd", "tanh approximation", "a module",
     ({ gad_module *m = gad_nn_gelu(1); int ok_ = m != NULL; gad_module_free(m); ok_; }))
TBAD(nn_dropout_p, "gad_nn_dropout", "value", "p -0.5", E_DOMAIN, "Dropout", "p = -0.5",
     gad_nn_dropout(NULL, -0.5))
ROW(nn_flatten_range, "gad_nn_flatten", "axis", "start_dim 3 of a rank-2 input", "NULL",
    E_SHAPE, "Flatten", "start_dim = 3, end_dim = -1 out of range for rank 2", 0,
    gad_module *m = gad_nn_flatten(3, -1);
    int ok = m && gad_module_forward(m, F32T(2, 3)) == NULL;
    gad_module_free(m);
    return ok;)
TBAD(nn_maxpool_null, "gad_nn_max_pool2d", "NULL", "opts NULL", E_DOMAIN, "MaxPool2d", "options",
     gad_nn_max_pool2d(NULL))
TBAD(nn_adaptive_neg, "gad_nn_adaptive_avg_pool2d", "value", "output_size (-1, 1)", E_DOMAIN,
     "AdaptiveAvgPool2d", "(-1, 1)", gad_nn_adaptive_avg_pool2d(-1, 1))
#undef NN_CTX

AREA("Data")

GOOD(zlib_available, "gad_zlib_available", "odd", "any build", "0 or 1",
     gad_zlib_available() == 0 || gad_zlib_available() == 1)
ROW(rb_null, "gad_read_bytes", "NULL", "path NULL", "status", E_DOMAIN, "read_bytes",
    "path", 0,
    unsigned char *d;
    size_t n;
    return gad_read_bytes(NULL, 0, &d, &n) == E_DOMAIN && d == NULL && n == 0;)
ROW(rb_missing, "gad_read_bytes", "io", "a file that does not exist", "status", E_IO,
    "read_bytes", "missing.txt", 0,
    unsigned char *d;
    size_t n;
    return gad_read_bytes(tpath("missing.txt"), 0, &d, &n) == E_IO && d == NULL;)
ROW(rb_dir, "gad_read_bytes", "io", "a directory", "status", E_IO, "read_bytes",
    "directory", 0,
    unsigned char *d;
    size_t n;
    return gad_read_bytes(g_tmpdir, 0, &d, &n) == E_IO;)
ROW(rb_fifo, "gad_read_bytes", "io", "a FIFO (named pipe) with no writer",
    "status, at once", E_IO, "read_bytes", "FIFO", ISOLATE,
    unsigned char *d;
    size_t n;
    unlink(tpath("fifo.txt"));
    int ok = mkfifo(tpath("fifo.txt"), 0600) == 0 &&
             gad_read_bytes(tpath("fifo.txt"), 0, &d, &n) == E_IO;
    unlink(tpath("fifo.txt"));
    return ok;)
ROW(rb_limit, "gad_read_bytes", "format", "a 10-byte file, max_bytes 9", "status",
    E_FORMAT, "read_bytes", "limit of 9 bytes", 0,
    unsigned char *d;
    size_t n;
    return write_bytes("ten.txt", "0123456789", 10) &&
           gad_read_bytes(tpath("ten.txt"), 9, &d, &n) == E_FORMAT && d == NULL;)
ROW(rb_nomem, "gad_read_bytes", "memory", "the allocator fails", "status", E_MEM,
    "read_bytes", "ten.txt", 0,
    unsigned char *d;
    size_t n;
    int ok = write_bytes("ten.txt", "0123456789", 10);
    failing_allocator(1);
    gad_status st = gad_read_bytes(tpath("ten.txt"), 0, &d, &n);
    failing_allocator(0);
    return ok && st == E_MEM && d == NULL;)
ROW(rb_empty, "gad_read_bytes", "empty", "an empty file", "GAD_OK, n = 0", E_OK, "", NULL,
    0,
    unsigned char *d = NULL;
    size_t n = 1;
    int ok = write_bytes("empty.txt", "", 0) &&
             gad_read_bytes(tpath("empty.txt"), 0, &d, &n) == GAD_OK && d && n == 0 &&
             d[0] == 0;
    gad_mem_free(d);
    return ok;)
TBAD(csv_null, "gad_read_csv", "NULL", "path NULL", E_DOMAIN, "read_csv", "path",
     gad_read_csv(NULL, NULL))
TBAD(csv_dtype, "gad_read_csv", "dtype", "opts dtype i64", E_DOMAIN, "read_csv", "i64",
     gad_read_csv(tpath("x.csv"), &(gad_csv_opts){.dtype = GAD_I64}))
TBAD(csv_delim, "gad_read_csv", "value", "delimiter '.'", E_DOMAIN, "read_csv",
     "delimiter", gad_read_csv(tpath("x.csv"), &(gad_csv_opts){.delimiter = '.'}))
TBAD(csv_missing, "gad_read_csv", "io", "a file that does not exist", E_IO, "read_csv",
     "missing.csv", gad_read_csv(tpath("missing.csv"), NULL))
ROW(csv_field, "gad_read_csv", "format", "the field \"x\" on line 2", "NULL", E_FORMAT,
    "read_csv", "line 2, column 2: 'x' is not a number", 0,
    return write_bytes("bad.csv", "1,2\n3,x\n", 8) && gad_read_csv(tpath("bad.csv"), NULL) ==
           NULL;)
ROW(csv_ragged, "gad_read_csv", "format", "a row of 1 field after one of 2", "NULL",
    E_FORMAT, "read_csv", "line 2 has 1 field, line 1 has 2", 0,
    return write_bytes("ragged.csv", "1,2\n3\n", 6) &&
           gad_read_csv(tpath("ragged.csv"), NULL) == NULL;)
ROW(csv_empty, "gad_read_csv", "empty", "an empty file", "NULL", E_FORMAT, "read_csv",
    "no rows of numbers", 0,
    return write_bytes("empty.csv", "", 0) && gad_read_csv(tpath("empty.csv"), NULL) == NULL;)
ROW(csv_limit, "gad_read_csv", "huge", "a file past max_bytes", "NULL", E_FORMAT,
    "read_csv", "limit of 4 bytes", 0,
    return write_bytes("five.csv", "1,2,3", 5) &&
           gad_read_csv(tpath("five.csv"), &(gad_csv_opts){.max_bytes = 4}) == NULL;)
ROW(csv_nomem, "gad_read_csv", "memory", "the allocator fails", "NULL", E_MEM, "read_csv",
    NULL, 0,
    int ok = write_bytes("one.csv", "1\n", 2);
    failing_allocator(1);
    gad_tensor *t = gad_read_csv(tpath("one.csv"), NULL);
    failing_allocator(0);
    return ok && t == NULL;)
TBAD(sampler_neg, "gad_sampler_new", "value", "n = -1", E_DOMAIN, "sampler_new", "n = -1",
     (void *)gad_sampler_new(-1, 4, 0, NULL))
TBAD(sampler_batch0, "gad_sampler_new", "value", "batch = 0", E_DOMAIN, "sampler_new",
     "batch = 0", (void *)gad_sampler_new(8, 0, 0, NULL))
TBAD(sampler_huge, "gad_sampler_new", "huge", "n = INT64_MAX", E_MEM, "sampler_new",
     "cannot allocate", (void *)gad_sampler_new(INT64_MAX, 4, 0, NULL))
ROW(sampler_nomem, "gad_sampler_new", "memory", "the allocator fails", "NULL", E_MEM,
    "sampler_new", NULL, 0,
    failing_allocator(1);
    gad_sampler *s = gad_sampler_new(8, 4, 0, NULL);
    failing_allocator(0);
    gad_sampler_free(s);
    return s == NULL;)
ROW(sampler_zero, "gad_sampler_new", "empty", "n = 0", "a sampler of no batches", E_OK, "",
    NULL, 0,
    gad_sampler *s = gad_sampler_new(0, 4, 0, NULL);
    gad_tensor *b = NULL;
    int ok = s && gad_sampler_num_batches(s) == 0 && gad_sampler_next(s, &b) == 0 && !b;
    gad_sampler_free(s);
    return ok;)
ROW(sampler_free_null, "gad_sampler_free", "NULL", "s NULL", "nothing (a no-op)", E_OK, "",
    NULL, 0, gad_sampler_free(NULL); return 1;)
ROW(sampler_next_null, "gad_sampler_next", "NULL", "s NULL", "-1", E_DOMAIN, "sampler_next",
    "sampler", 0,
    gad_tensor *b;
    return gad_sampler_next(NULL, &b) == -1 && b == NULL;)
ROW(sampler_next_nomem, "gad_sampler_next", "memory", "the allocator fails", "-1", E_MEM,
    "from_i64", NULL, 0,
    gad_sampler *s = gad_sampler_new(8, 4, 0, NULL);
    gad_tensor *b = NULL;
    failing_allocator(1);
    int r = s ? gad_sampler_next(s, &b) : 0;
    failing_allocator(0);
    int ok = r == -1 && b == NULL && gad_sampler_batch_index(s) == 0;
    gad_sampler_free(s);
    return ok;)
GOOD(sampler_nb_null, "gad_sampler_num_batches", "NULL", "s NULL", "0",
     gad_sampler_num_batches(NULL) == 0)
GOOD(sampler_epoch_null, "gad_sampler_epoch", "NULL", "s NULL", "0",
     gad_sampler_epoch(NULL) == 0)
GOOD(sampler_bi_null, "gad_sampler_batch_index", "NULL", "s NULL", "0",
     gad_sampler_batch_index(NULL) == 0)
SBAD(sampler_seek_null, "gad_sampler_seek", "NULL", "s NULL", E_DOMAIN, "sampler_seek",
     "sampler", gad_sampler_seek(NULL, 0, 0))
ROW(sampler_seek_range, "gad_sampler_seek", "index", "batch 3 of 2 per epoch", "status",
    E_DOMAIN, "sampler_seek", "[0, 2]", 0,
    gad_sampler *s = gad_sampler_new(8, 4, 0, NULL);
    int ok = s && gad_sampler_seek(s, 0, 3) == E_DOMAIN;
    gad_sampler_free(s);
    return ok;)
GOOD(sampler_seed_odd, "gad_sampler_epoch_seed", "odd", "a negative epoch", "a seed",
     gad_sampler_epoch_seed(1, -1) != gad_sampler_epoch_seed(1, 0))
AREA("Distributed (a world of one: this test is not run by an MPI launcher)")
ROW(dist_init_env, "gad_dist_init", "value", "GAD_DIST_TIMEOUT=abc in the environment",
    "status", E_DOMAIN, "dist_init", "GAD_DIST_TIMEOUT", 0,
    setenv("GAD_DIST_TIMEOUT", "abc", 1);
    gad_status s = gad_dist_init(NULL, NULL);
    unsetenv("GAD_DIST_TIMEOUT");
    return s == GAD_ERR_DOMAIN && gad_dist_size() == 1;)
GOOD(dist_init_null, "gad_dist_init", "NULL", "argc and argv NULL, twice",
     "GAD_OK, a world of one", gad_dist_init(NULL, NULL) == GAD_OK &&
     gad_dist_init(NULL, NULL) == GAD_OK && gad_dist_size() == 1)
GOOD(dist_rank_one, "gad_dist_rank", "odd", "a world of one", "0", gad_dist_rank() == 0)
GOOD(dist_size_one, "gad_dist_size", "odd", "a world of one", "1", gad_dist_size() == 1)
GOOD(dist_backend_one, "gad_dist_backend", "odd", "a world of one", "\"none\"",
     strcmp(gad_dist_backend(), "none") == 0)
GOOD(dist_timeout_pos, "gad_dist_timeout", "odd", "no setting made", "> 0",
     gad_dist_timeout() > 0)
GOOD(dist_set_timeout_bad, "gad_dist_set_timeout", "NaN/Inf", "seconds = NaN, -1, inf",
     "the previous value; the deadline is unchanged",
     gad_dist_set_timeout(NAN) == gad_dist_timeout() &&
     gad_dist_set_timeout(-1) == gad_dist_timeout() &&
     gad_dist_set_timeout(INFINITY) == gad_dist_timeout())
GOOD(dist_bucket_min, "gad_dist_bucket_bytes", "odd", "any build", ">= 4096",
     gad_dist_bucket_bytes() >= 4096)
SBAD(dist_allreduce_null, "gad_dist_allreduce", "NULL", "tensors NULL, n = 1", E_DOMAIN,
     "dist_allreduce", "tensors", gad_dist_allreduce(NULL, 1, GAD_DIST_SUM))
SBAD(dist_allreduce_nullitem, "gad_dist_allreduce", "NULL", "tensors[0] NULL", E_DOMAIN,
     "dist_allreduce", "tensors[0]", gad_dist_allreduce((gad_tensor *[]){NULL}, 1, GAD_DIST_SUM))
SBAD(dist_allreduce_neg, "gad_dist_allreduce", "value", "n = -1", E_DOMAIN, "dist_allreduce",
     "-1", gad_dist_allreduce(NULL, -1, GAD_DIST_SUM))
SBAD(dist_allreduce_op, "gad_dist_allreduce", "value", "op = 9", E_DOMAIN, "dist_allreduce",
     "op = 9", gad_dist_allreduce((gad_tensor *[]){mk(GAD_F32, DIMS(2))}, 1, (gad_dist_op)9))
SBAD(dist_allreduce_i64, "gad_dist_allreduce", "dtype", "an i64 tensor", E_DOMAIN,
     "dist_allreduce", "i64", gad_dist_allreduce((gad_tensor *[]){mk(GAD_I64, DIMS(2))}, 1,
                                                 GAD_DIST_SUM))
SBAD(dist_allreduce_tracked, "gad_dist_allreduce", "tracked", "the output of a tracked op",
     E_UNIQUE, "data_mut", NULL,
     gad_dist_allreduce((gad_tensor *[]){tracked()}, 1, GAD_DIST_SUM))
ROW(dist_allreduce_one, "gad_dist_allreduce", "odd", "a mean over a world of one, and empty",
    "GAD_OK, the values unchanged", E_OK, "", NULL, 0,
    gad_tensor *ts[2] = {mk(GAD_F64, DIMS(3)), mk(GAD_F32, DIMS(0))};
    return gad_dist_allreduce(ts, 2, GAD_DIST_MEAN) == GAD_OK && at(ts[0], 1) == -0.5;)
SBAD(dist_allreduce_f64_null, "gad_dist_allreduce_f64", "NULL", "values NULL, n = 2",
     E_DOMAIN, "dist_allreduce_f64", "values", gad_dist_allreduce_f64(NULL, 2, GAD_DIST_SUM))
SBAD(dist_allreduce_f64_op, "gad_dist_allreduce_f64", "value", "op = -1", E_DOMAIN,
     "dist_allreduce_f64", "op = -1", gad_dist_allreduce_f64((double[]){1}, 1, (gad_dist_op)-1))
ROW(dist_allreduce_f64_one, "gad_dist_allreduce_f64", "NaN/Inf", "NaN and inf, a world of one",
    "GAD_OK, the values unchanged", E_OK, "", NULL, 0,
    double v[2] = {NAN, INFINITY};
    return gad_dist_allreduce_f64(v, 2, GAD_DIST_MEAN) == GAD_OK && isnan(v[0]) &&
           v[1] == INFINITY;)
SBAD(dist_broadcast_root, "gad_dist_broadcast", "index", "root = 1 in a world of one",
     E_DOMAIN, "dist_broadcast", "root = 1",
     gad_dist_broadcast((gad_tensor *[]){mk(GAD_F32, DIMS(2))}, 1, 1))
SBAD(dist_broadcast_null, "gad_dist_broadcast", "NULL", "tensors NULL, n = 1", E_DOMAIN,
     "dist_broadcast", "tensors", gad_dist_broadcast(NULL, 1, 0))
GOOD(dist_broadcast_i64, "gad_dist_broadcast", "odd", "an i64 tensor from root 0",
     "GAD_OK (any dtype)", gad_dist_broadcast((gad_tensor *[]){mk(GAD_I64, DIMS(2))}, 1, 0) == GAD_OK)
SBAD(dist_avg_null, "gad_dist_average_grads", "NULL", "params NULL, n = 1", E_DOMAIN,
     "dist_average_grads", "params", gad_dist_average_grads(NULL, NULL, 1))
SBAD(dist_avg_nullgrad, "gad_dist_average_grads", "NULL", "grads[0] NULL", E_DOMAIN,
     "dist_average_grads", "grads[0]",
     gad_dist_average_grads((gad_tensor *[]){gad_requires_grad(mk(GAD_F32, DIMS(2)))},
                            (gad_tensor *[]){NULL}, 1))
SBAD(dist_avg_shape, "gad_dist_average_grads", "shape", "a [3] gradient of a [2] parameter",
     E_SHAPE, "dist_average_grads", "[3]",
     gad_dist_average_grads((gad_tensor *[]){gad_requires_grad(mk(GAD_F32, DIMS(2)))},
                            (gad_tensor *[]){mk(GAD_F32, DIMS(3))}, 1))
SBAD(dist_avg_dtype, "gad_dist_average_grads", "dtype", "an f64 gradient of an f32 parameter",
     E_DTYPE, "dist_average_grads", "f64",
     gad_dist_average_grads((gad_tensor *[]){gad_requires_grad(mk(GAD_F32, DIMS(2)))},
                            (gad_tensor *[]){mk(GAD_F64, DIMS(2))}, 1))
GOOD(dist_avg_empty_slot, "gad_dist_average_grads", "odd", "grads NULL, an empty slot",
     "GAD_OK (the parameter is skipped)",
     gad_dist_average_grads((gad_tensor *[]){gad_requires_grad(mk(GAD_F32, DIMS(2)))}, NULL, 1) ==
         GAD_OK)
GOOD(dist_barrier_one, "gad_dist_barrier", "odd", "a world of one", "GAD_OK",
     gad_dist_barrier() == GAD_OK)
ROW(dist_stats_null, "gad_dist_stats_get", "NULL", "out NULL", "nothing (a no-op)", E_OK, "",
    NULL, 0, gad_dist_stats_get(NULL); return 1;)
ROW(dist_stats_reset, "gad_dist_stats_reset", "odd", "then gad_dist_stats_get", "zeros", E_OK,
    "", NULL, 0, gad_dist_stats st; gad_dist_stats_reset(); gad_dist_stats_get(&st);
    return st.calls == 0 && st.bytes == 0 && st.seconds == 0;)
GOOD(dist_finalize_one, "gad_dist_finalize", "odd", "a world of one, twice", "GAD_OK",
     gad_dist_finalize() == GAD_OK && gad_dist_finalize() == GAD_OK)

AREA("Pooling (issue 28)")
#define PO(...) (&(gad_pool_opts){__VA_ARGS__})
TBAD(mpool_null, "gad_max_pool2d", "NULL", "x NULL", E_DOMAIN, "max_pool2d", NULL,
     gad_max_pool2d(NULL, PO(.kernel = {2, 2}), NULL))
TBAD(mpool_opts_null, "gad_max_pool2d", "NULL", "options NULL", E_DOMAIN, "max_pool2d", NULL,
     gad_max_pool2d(F32T(1, 1, 4, 4), NULL, NULL))
TBAD(mpool_released, "gad_max_pool2d", "released", "x released", E_DOMAIN, "max_pool2d",
     "use of a released tensor", gad_max_pool2d(dead(), PO(.kernel = {2, 2}), NULL))
TBAD(mpool_i64, "gad_max_pool2d", "dtype", "x i64", E_DTYPE, "max_pool2d", "i64",
     gad_max_pool2d(I64T(1, 1, 4, 4), PO(.kernel = {2, 2}), NULL))
TBAD(mpool_rank, "gad_max_pool2d", "rank", "x [4,4] (not [C,H,W] or [N,C,H,W])", E_SHAPE,
     "max_pool2d", "[4,4]", gad_max_pool2d(F32T(4, 4), PO(.kernel = {2, 2}), NULL))
TBAD(mpool_empty_c, "gad_max_pool2d", "empty", "x [2,0,4,4] (an empty channel dim)", E_SHAPE,
     "max_pool2d", "[2,0,4,4]", gad_max_pool2d(F32T(2, 0, 4, 4), PO(.kernel = {2, 2}), NULL))
GOOD(mpool_empty_n, "gad_max_pool2d", "empty", "x [0,2,4,4] (an empty batch)", "[0,2,2,2]",
     SHAPE_IS(gad_max_pool2d(F32T(0, 2, 4, 4), PO(.kernel = {2, 2}), NULL), 0, 2, 2, 2))
TBAD(mpool_kernel0, "gad_max_pool2d", "value", "kernel (0, 2)", E_DOMAIN, "max_pool2d",
     "kernel_size", gad_max_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {0, 2}), NULL))
TBAD(mpool_stride, "gad_max_pool2d", "value", "stride (-1, 1)", E_DOMAIN, "max_pool2d", "stride",
     gad_max_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {2, 2}, .stride = {-1, 1}), NULL))
TBAD(mpool_dil, "gad_max_pool2d", "value", "dilation (1, -2)", E_DOMAIN, "max_pool2d",
     "dilation", gad_max_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {2, 2}, .dilation = {1, -2}), NULL))
TBAD(mpool_padneg, "gad_max_pool2d", "value", "padding (-1, 0)", E_DOMAIN, "max_pool2d",
     "non-negative", gad_max_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {2, 2}, .padding = {-1, 0}), NULL))
TBAD(mpool_padhalf, "gad_max_pool2d", "value", "padding 2 > kernel 3 / 2", E_DOMAIN,
     "max_pool2d", "half of kernel",
     gad_max_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {3, 3}, .padding = {2, 2}), NULL))
TBAD(mpool_small, "gad_max_pool2d", "shape", "kernel 5 over a 4x4 input", E_SHAPE, "max_pool2d",
     "too small", gad_max_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {5, 5}), NULL))
TBAD(mpool_padonly, "gad_max_pool2d", "shape", "a dilated window wholly in the padding",
     E_SHAPE, "max_pool2d", "only padding",
     gad_max_pool2d(F32T(1, 1, 1, 1), PO(.kernel = {1, 2}, .padding = {0, 1}, .dilation = {1, 2}),
                    NULL))
GOOD(mpool_unbatched, "gad_max_pool2d", "odd", "x [C,H,W], ceil_mode", "[2,2,2]",
     SHAPE_IS(gad_max_pool2d(F32T(2, 3, 3), PO(.kernel = {2, 2}, .ceil_mode = 1), NULL), 2, 2, 2))
TBAD(mpool1_null, "gad_max_pool1d", "NULL", "x NULL", E_DOMAIN, "max_pool1d", NULL,
     gad_max_pool1d(NULL, PO(.kernel = {2}), NULL))
TBAD(mpool1_rank, "gad_max_pool1d", "rank", "x [1,1,4,4]", E_SHAPE, "max_pool1d", "[1,1,4,4]",
     gad_max_pool1d(F32T(1, 1, 4, 4), PO(.kernel = {2}), NULL))
TBAD(mpool1_small, "gad_max_pool1d", "shape", "kernel 5 over 4", E_SHAPE, "max_pool1d",
     "too small", gad_max_pool1d(F32T(1, 1, 4), PO(.kernel = {5}), NULL))
GOOD(mpool1_empty_n, "gad_max_pool1d", "empty", "x [0,2,5]", "[0,2,2]",
     SHAPE_IS(gad_max_pool1d(F32T(0, 2, 5), PO(.kernel = {2}), NULL), 0, 2, 2))
TBAD(apool_null, "gad_avg_pool2d", "NULL", "x NULL", E_DOMAIN, "avg_pool2d", NULL,
     gad_avg_pool2d(NULL, PO(.kernel = {2, 2})))
TBAD(apool_i64, "gad_avg_pool2d", "dtype", "x i64", E_DTYPE, "avg_pool2d", "i64",
     gad_avg_pool2d(I64T(1, 1, 4, 4), PO(.kernel = {2, 2})))
TBAD(apool_rank, "gad_avg_pool2d", "rank", "x [4]", E_SHAPE, "avg_pool2d", "[4]",
     gad_avg_pool2d(F32T(4), PO(.kernel = {2, 2})))
TBAD(apool_dil, "gad_avg_pool2d", "value", "dilation 2 (avg pooling has none)", E_DOMAIN,
     "avg_pool2d", "dilation", gad_avg_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {2, 2}, .dilation = {2, 2})))
TBAD(apool_div, "gad_avg_pool2d", "value", "divisor_override -1", E_DOMAIN, "avg_pool2d",
     "divisor", gad_avg_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {2, 2}, .divisor_override = -1)))
TBAD(apool_padhalf, "gad_avg_pool2d", "value", "padding 2 > kernel 3 / 2", E_DOMAIN,
     "avg_pool2d", "half of kernel",
     gad_avg_pool2d(F32T(1, 1, 4, 4), PO(.kernel = {3, 3}, .padding = {2, 2})))
GOOD(apool_empty_n, "gad_avg_pool2d", "empty", "x [0,1,4,4]", "[0,1,2,2]",
     SHAPE_IS(gad_avg_pool2d(F32T(0, 1, 4, 4), PO(.kernel = {2, 2})), 0, 1, 2, 2))
TBAD(apool1_null, "gad_avg_pool1d", "NULL", "x NULL", E_DOMAIN, "avg_pool1d", NULL,
     gad_avg_pool1d(NULL, PO(.kernel = {2})))
TBAD(apool1_rank, "gad_avg_pool1d", "rank", "x [4]", E_SHAPE, "avg_pool1d", "[4]",
     gad_avg_pool1d(F32T(4), PO(.kernel = {2})))
GOOD(apool1_ceil, "gad_avg_pool1d", "odd", "x [1,5], k 2, ceil_mode", "[1,3]",
     SHAPE_IS(gad_avg_pool1d(F32T(1, 5), PO(.kernel = {2}, .ceil_mode = 1)), 1, 3))
TBAD(aapool_null, "gad_adaptive_avg_pool2d", "NULL", "x NULL", E_DOMAIN, "adaptive_avg_pool2d",
     NULL, gad_adaptive_avg_pool2d(NULL, 1, 1))
TBAD(aapool_neg, "gad_adaptive_avg_pool2d", "value", "output size (-1, 2)", E_DOMAIN,
     "adaptive_avg_pool2d", "-1", gad_adaptive_avg_pool2d(F32T(1, 1, 4, 4), -1, 2))
TBAD(aapool_empty, "gad_adaptive_avg_pool2d", "empty", "x [2,3,0,5]", E_SHAPE,
     "adaptive_avg_pool2d", "[2,3,0,5]", gad_adaptive_avg_pool2d(F32T(2, 3, 0, 5), 2, 2))
TBAD(aapool_i64, "gad_adaptive_avg_pool2d", "dtype", "x i64", E_DTYPE, "adaptive_avg_pool2d",
     "i64", gad_adaptive_avg_pool2d(I64T(1, 1, 4, 4), 1, 1))
GOOD(aapool_zero, "gad_adaptive_avg_pool2d", "empty", "output size (0, 2)", "[1,1,0,2]",
     SHAPE_IS(gad_adaptive_avg_pool2d(F32T(1, 1, 4, 4), 0, 2), 1, 1, 0, 2))
ROW(aapool_zero_grad, "gad_adaptive_avg_pool2d", "empty", "output size (2, 0), its gradient",
    "zeros of x's shape (torch: an error)", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(1, 1, 4, 4), *g[1];
    return gad_grad(gad_sum_all(gad_adaptive_avg_pool2d(x, 2, 0)), &x, 1, g) == GAD_OK &&
           SHAPE_IS(g[0], 1, 1, 4, 4) && all_zero(g[0]);)
ROW(ampool_zero_grad, "gad_adaptive_max_pool2d", "empty", "output size (0, 3), its gradient",
    "zeros of x's shape (torch: an error)", E_OK, "", NULL, 0,
    gad_tensor *x = LEAF32(2, 3, 5), *g[1];
    return gad_grad(gad_sum_all(gad_adaptive_max_pool2d(x, 0, 3, NULL)), &x, 1, g) == GAD_OK &&
           SHAPE_IS(g[0], 2, 3, 5) && all_zero(g[0]);)
GOOD(aapool_global, "gad_adaptive_avg_pool2d", "odd", "output 1x1 (global average pooling)",
     "[2,3,1,1]", SHAPE_IS(gad_adaptive_avg_pool2d(F32T(2, 3, 5, 7), 1, 1), 2, 3, 1, 1))
GOOD(aap_one_nan, "gad_adaptive_avg_pool2d", "NaN/Inf", "output 1x1 of a plane with a NaN",
     "NaN", isnan(at(gad_adaptive_avg_pool2d(gad_full(DIMS(1, 1, 2, 2), GAD_F32, NAN), 1, 1), 0)))
TBAD(ampool_null, "gad_adaptive_max_pool2d", "NULL", "x NULL", E_DOMAIN, "adaptive_max_pool2d",
     NULL, gad_adaptive_max_pool2d(NULL, 1, 1, NULL))
TBAD(ampool_rank, "gad_adaptive_max_pool2d", "rank", "x [4,4]", E_SHAPE, "adaptive_max_pool2d",
     "[4,4]", gad_adaptive_max_pool2d(F32T(4, 4), 2, 2, NULL))
TBAD(ampool_neg, "gad_adaptive_max_pool2d", "value", "output size (2, -3)", E_DOMAIN,
     "adaptive_max_pool2d", "-3", gad_adaptive_max_pool2d(F32T(1, 1, 4, 4), 2, -3, NULL))
GOOD(ampool_larger, "gad_adaptive_max_pool2d", "odd", "an output larger than the input",
     "[1,1,6,5]", SHAPE_IS(gad_adaptive_max_pool2d(F32T(1, 1, 4, 4), 6, 5, NULL), 1, 1, 6, 5))
#undef PO

AREA("Shape ops for images (issue 28)")
#define P4(a, b, c, d) ((const int64_t[]){a, b, c, d})
#define FO(...) (&(gad_fold_opts){__VA_ARGS__})
TBAD(pad_null, "gad_pad", "NULL", "x NULL", E_DOMAIN, "pad", NULL,
     gad_pad(NULL, P4(1, 1, 1, 1), 4, GAD_PAD_CONSTANT, 0))
TBAD(pad_nullpads, "gad_pad", "NULL", "pads NULL, npads 2", E_DOMAIN, "pad", NULL,
     gad_pad(F32T(2, 3), NULL, 2, GAD_PAD_CONSTANT, 0))
TBAD(pad_released, "gad_pad", "released", "x released", E_DOMAIN, "pad",
     "use of a released tensor", gad_pad(dead(), P4(1, 1, 1, 1), 2, GAD_PAD_CONSTANT, 0))
TBAD(pad_odd, "gad_pad", "shape", "npads 3", E_SHAPE, "pad", "divisible by 2",
     gad_pad(F32T(2, 3), P4(1, 1, 1, 1), 3, GAD_PAD_CONSTANT, 0))
TBAD(pad_long, "gad_pad", "rank", "3 pairs for a 2-D x", E_SHAPE, "pad", "too large",
     gad_pad(F32T(2, 3), ((const int64_t[]){1, 1, 1, 1, 1, 1}), 6, GAD_PAD_CONSTANT, 0))
TBAD(pad_reflect_big, "gad_pad", "value", "reflect pad 3 of a dim of 3", E_SHAPE, "pad",
     "less than", gad_pad(F32T(1, 3, 3), P4(3, 0, 0, 0), 2, GAD_PAD_REFLECT, 0))
TBAD(pad_circ_big, "gad_pad", "value", "circular pad 4 of a dim of 3", E_SHAPE, "pad",
     "more than once", gad_pad(F32T(1, 3, 3), P4(0, 4, 0, 0), 2, GAD_PAD_CIRCULAR, 0))
TBAD(pad_neg_refl, "gad_pad", "value", "a negative reflect pad", E_DOMAIN, "pad", ">= 0",
     gad_pad(F32T(1, 3, 3), P4(-1, 0, 0, 0), 2, GAD_PAD_REFLECT, 0))
TBAD(pad_crop_neg, "gad_pad", "value", "a crop past the dim", E_SHAPE, "pad", "negative size",
     gad_pad(F32T(2, 3), P4(-2, -2, 0, 0), 2, GAD_PAD_CONSTANT, 0))
TBAD(pad_mode, "gad_pad", "value", "mode 7", E_DOMAIN, "pad", "mode",
     gad_pad(F32T(2, 3), P4(1, 1, 0, 0), 2, (gad_pad_mode)7, 0))
TBAD(pad_rank_refl, "gad_pad", "rank", "reflect of a 1-D x", E_SHAPE, "pad", "[3]",
     gad_pad(F32T(3), P4(1, 1, 0, 0), 2, GAD_PAD_REFLECT, 0))
TBAD(pad_bool_refl, "gad_pad", "dtype", "reflect of a bool x (PyTorch refuses it)", E_DTYPE,
     "pad", "bool", gad_pad(BOOLT(2, 3), P4(1, 1, 0, 0), 2, GAD_PAD_REFLECT, 0))
GOOD(pad_i64_refl, "gad_pad", "dtype", "reflect of an i64 x", "[2,5]",
     SHAPE_IS(gad_pad(I64T(2, 3), P4(1, 1, 0, 0), 2, GAD_PAD_REFLECT, 0), 2, 5))
GOOD(pad_bool_circ, "gad_pad", "dtype", "circular of a bool x", "[2,5]",
     SHAPE_IS(gad_pad(BOOLT(2, 3), P4(1, 1, 0, 0), 2, GAD_PAD_CIRCULAR, 0), 2, 5))
TBAD(pad_empty_repl, "gad_pad", "empty", "replicate of an empty dim", E_SHAPE, "pad", "empty",
     gad_pad(F32T(2, 0), P4(1, 1, 0, 0), 2, GAD_PAD_REPLICATE, 0))
GOOD(pad_i64_const, "gad_pad", "dtype", "constant pad of an i64 x", "[2,5]",
     SHAPE_IS(gad_pad(I64T(2, 3), P4(1, 1, 0, 0), 2, GAD_PAD_CONSTANT, 7), 2, 5))
GOOD(pad_none, "gad_pad", "odd", "npads 0", "a copy of x",
     SHAPE_IS(gad_pad(F32T(2, 3), NULL, 0, GAD_PAD_CONSTANT, 0), 2, 3))
GOOD(pad_empty_batch, "gad_pad", "empty", "reflect of [0,2,3]", "[0,2,5]",
     SHAPE_IS(gad_pad(F32T(0, 2, 3), P4(1, 1, 0, 0), 2, GAD_PAD_REFLECT, 0), 0, 2, 5))
TBAD(interp_null, "gad_interpolate", "NULL", "x NULL", E_DOMAIN, "interpolate", NULL,
     gad_interpolate(NULL, P4(2, 2, 0, 0), NULL, 2, GAD_INTERP_NEAREST, 0))
TBAD(interp_both, "gad_interpolate", "NULL", "size and scale_factor both given", E_DOMAIN,
     "interpolate", "only one", gad_interpolate(F32T(1, 1, 2, 2), P4(2, 2, 0, 0),
                                                ((const double[]){2, 2}), 2, GAD_INTERP_NEAREST, 0))
TBAD(interp_neither, "gad_interpolate", "NULL", "neither size nor scale_factor", E_DOMAIN,
     "interpolate", "either", gad_interpolate(F32T(1, 1, 2, 2), NULL, NULL, 2, GAD_INTERP_NEAREST, 0))
TBAD(interp_rank, "gad_interpolate", "rank", "bilinear of [1,2,3]", E_SHAPE, "interpolate",
     "[1,2,3]", gad_interpolate(F32T(1, 2, 3), P4(2, 2, 0, 0), NULL, 2, GAD_INTERP_BILINEAR, 0))
TBAD(interp_i64, "gad_interpolate", "dtype", "x i64", E_DTYPE, "interpolate", "i64",
     gad_interpolate(I64T(1, 1, 2, 2), P4(2, 2, 0, 0), NULL, 2, GAD_INTERP_NEAREST, 0))
TBAD(interp_zero, "gad_interpolate", "value", "size (0, 2)", E_SHAPE, "interpolate", "greater than 0",
     gad_interpolate(F32T(1, 1, 2, 2), P4(0, 2, 0, 0), NULL, 2, GAD_INTERP_NEAREST, 0))
TBAD(interp_sf_nan, "gad_interpolate", "NaN/Inf", "scale_factor NaN", E_DOMAIN, "interpolate",
     "scale_factor", gad_interpolate(F32T(1, 1, 2, 2), NULL, ((const double[]){NAN, 2}), 2,
                                     GAD_INTERP_NEAREST, 0))
TBAD(interp_align_nearest, "gad_interpolate", "value", "align_corners with nearest", E_DOMAIN,
     "interpolate", "align_corners",
     gad_interpolate(F32T(1, 1, 2, 2), P4(3, 3, 0, 0), NULL, 2, GAD_INTERP_NEAREST, 1))
TBAD(interp_n, "gad_interpolate", "shape", "n = 1 for a 2-D image", E_SHAPE, "interpolate", "1 sizes",
     gad_interpolate(F32T(1, 1, 2, 2), P4(3, 3, 0, 0), NULL, 1, GAD_INTERP_NEAREST, 0))
GOOD(interp_empty_batch, "gad_interpolate", "empty", "x [0,2,3,3]", "[0,2,6,6]",
     SHAPE_IS(gad_interpolate(F32T(0, 2, 3, 3), P4(6, 6, 0, 0), NULL, 2, GAD_INTERP_BILINEAR, 1),
              0, 2, 6, 6))
TBAD(pshuf_null, "gad_pixel_shuffle", "NULL", "x NULL", E_DOMAIN, "pixel_shuffle", NULL,
     gad_pixel_shuffle(NULL, 2))
TBAD(pshuf_div, "gad_pixel_shuffle", "shape", "6 channels, factor 2", E_SHAPE, "pixel_shuffle",
     "divisible", gad_pixel_shuffle(F32T(1, 6, 2, 2), 2))
TBAD(pshuf_factor, "gad_pixel_shuffle", "value", "factor 0", E_DOMAIN, "pixel_shuffle", "factor",
     gad_pixel_shuffle(F32T(1, 4, 2, 2), 0))
TBAD(pshuf_rank, "gad_pixel_shuffle", "rank", "x [4,2]", E_SHAPE, "pixel_shuffle", "[4,2]",
     gad_pixel_shuffle(F32T(4, 2), 2))
GOOD(pshuf_unbatched, "gad_pixel_shuffle", "odd", "x [C,H,W], i64", "[1,4,4]",
     SHAPE_IS(gad_pixel_shuffle(I64T(4, 2, 2), 2), 1, 4, 4))
GOOD(pshuf_empty, "gad_pixel_shuffle", "empty", "x [0,4,2,2], factor 2", "[0,1,4,4]",
     SHAPE_IS(gad_pixel_shuffle(F32T(0, 4, 2, 2), 2), 0, 1, 4, 4))
TBAD(punshuf_null, "gad_pixel_unshuffle", "NULL", "x NULL", E_DOMAIN, "pixel_unshuffle", NULL,
     gad_pixel_unshuffle(NULL, 2))
TBAD(punshuf_div, "gad_pixel_unshuffle", "shape", "H 3, factor 2", E_SHAPE, "pixel_unshuffle",
     "divisible", gad_pixel_unshuffle(F32T(1, 1, 3, 2), 2))
TBAD(punshuf_factor, "gad_pixel_unshuffle", "value", "factor -1", E_DOMAIN, "pixel_unshuffle",
     "factor", gad_pixel_unshuffle(F32T(1, 1, 2, 2), -1))
TBAD(punshuf_rank, "gad_pixel_unshuffle", "rank", "x [4,2]", E_SHAPE, "pixel_unshuffle", "[4,2]",
     gad_pixel_unshuffle(F32T(4, 2), 2))
GOOD(punshuf_empty, "gad_pixel_unshuffle", "empty", "x [0,1,2,2], factor 2", "[0,4,1,1]",
     SHAPE_IS(gad_pixel_unshuffle(F32T(0, 1, 2, 2), 2), 0, 4, 1, 1))
TBAD(unfold_null, "gad_unfold", "NULL", "x NULL", E_DOMAIN, "unfold", NULL,
     gad_unfold(NULL, FO(.kernel = {2, 2})))
TBAD(unfold_opts_null, "gad_unfold", "NULL", "options NULL", E_DOMAIN, "unfold", NULL,
     gad_unfold(F32T(1, 1, 3, 3), NULL))
TBAD(unfold_rank, "gad_unfold", "rank", "x [3,3]", E_SHAPE, "unfold", "[3,3]",
     gad_unfold(F32T(3, 3), FO(.kernel = {2, 2})))
TBAD(unfold_kernel, "gad_unfold", "value", "kernel (0, 2)", E_DOMAIN, "unfold", "kernel",
     gad_unfold(F32T(1, 1, 3, 3), FO(.kernel = {0, 2})))
TBAD(unfold_noblock, "gad_unfold", "shape", "kernel 4 over 3x3", E_SHAPE, "unfold", "no sliding",
     gad_unfold(F32T(1, 1, 3, 3), FO(.kernel = {4, 4})))
TBAD(unfold_i64, "gad_unfold", "dtype", "x i64", E_DTYPE, "unfold", "i64",
     gad_unfold(I64T(1, 1, 3, 3), FO(.kernel = {2, 2})))
GOOD(unfold_empty, "gad_unfold", "empty", "x [0,2,3,3]", "[0,8,4]",
     SHAPE_IS(gad_unfold(F32T(0, 2, 3, 3), FO(.kernel = {2, 2})), 0, 8, 4))
TBAD(fold_null, "gad_fold", "NULL", "cols NULL", E_DOMAIN, "fold", NULL,
     gad_fold(NULL, P4(3, 3, 0, 0), FO(.kernel = {2, 2})))
TBAD(fold_size_null, "gad_fold", "NULL", "output_size NULL", E_DOMAIN, "fold", NULL,
     gad_fold(F32T(1, 4, 4), NULL, FO(.kernel = {2, 2})))
TBAD(fold_div, "gad_fold", "shape", "6 rows for a 2x2 kernel", E_SHAPE, "fold", "divisible",
     gad_fold(F32T(1, 6, 4), P4(3, 3, 0, 0), FO(.kernel = {2, 2})))
TBAD(fold_blocks, "gad_fold", "shape", "5 blocks where 4 fit", E_SHAPE, "fold", "sliding blocks",
     gad_fold(F32T(1, 4, 5), P4(3, 3, 0, 0), FO(.kernel = {2, 2})))
TBAD(fold_rank, "gad_fold", "rank", "cols [4]", E_SHAPE, "fold", "[4]",
     gad_fold(F32T(4), P4(3, 3, 0, 0), FO(.kernel = {2, 2})))
GOOD(fold_unbatched, "gad_fold", "odd", "cols [C kh kw, L]", "[1,3,3]",
     SHAPE_IS(gad_fold(F32T(4, 4), P4(3, 3, 0, 0), FO(.kernel = {2, 2})), 1, 3, 3))

#undef P4
#undef FO

#endif /* BAD_ROWS_PASS */
