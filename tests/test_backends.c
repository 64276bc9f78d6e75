/* test_backends.c: a back end may leave any kernel entry NULL (backend.h).
 * The test device's entries are taken away one at a time (and each family
 * as a whole), and every op of the registry runs on it, forward and
 * backward, on every gradcheck sample, beside the optimizers' updates, the
 * gradient clipping and the anomaly check: each either gives the bits it
 * gives with the full table, or fails with an unsupported error naming the
 * op and the device ("gather: not supported on test:0"), and leaves no
 * tensor or storage behind. Every entry is needed by some op. What needs
 * what makes docs/backends.md, the op x back end table:
 *
 *   test_backends              the checks, and that docs/backends.md is current
 *   test_backends --markdown   print docs/backends.md (make generated) */
#include "test.h"

#include <stddef.h>

#include "backend/backend.h"
#include "gad_int.h"
#include "ops/ops_int.h"
#include "test_registry.h"

#include <math.h>
#include <stdlib.h>

#include "test_device.h"

/* ------------------------------------------------------------- entries */

typedef struct entry_id {
    const char *fam, *name; /* fam NULL: a core entry; name NULL: the family */
} entry_id;

static const entry_id entries[] = {
#define X(e) {NULL, #e},
    GAD_BE_CORE_ENTRIES(X)
#undef X
#define F(f, e) {#f, #e},
    GAD_BE_FAMILY_ENTRIES(F)
#undef F
#define FAM(f) {#f, NULL},
    GAD_BE_FAMILIES(FAM)
#undef FAM
};
enum { NENT = sizeof entries / sizeof entries[0] };

/* Take entry k away from the test device's table (td_table_reset puts it
 * back). */
static void td_remove(int k) {
    int i = 0;
#define X(e)                                                                   \
    if (i++ == k) td_backend.e = NULL;
    GAD_BE_CORE_ENTRIES(X)
#undef X
#define F(f, e)                                                                \
    if (i++ == k) td_##f.e = NULL;
    GAD_BE_FAMILY_ENTRIES(F)
#undef F
#define FAM(f)                                                                 \
    if (i++ == k) td_backend.f = NULL;
    GAD_BE_FAMILIES(FAM)
#undef FAM
}

/* Every entry is in the lists: the structs hold nothing else (a family's
 * ends with its half flag). */
TEST(the_lists_name_every_entry) {
    size_t fn = sizeof(void (*)(void)), core = 0, fams = 0;
#define X(e) core++;
    GAD_BE_CORE_ENTRIES(X)
#undef X
#define FAM(f) fams++;
    GAD_BE_FAMILIES(FAM)
#undef FAM
    CHECK(sizeof(gad_backend) == 2 * sizeof(void *) + core * fn + fams * sizeof(void *));
#define FAM(f)                                                                 \
    {                                                                          \
        size_t n = 0;                                                          \
        for (int k = 0; k < NENT; k++)                                         \
            n += entries[k].fam && entries[k].name && !strcmp(entries[k].fam, #f); \
        CHECK_MSG(offsetof(gad_be_##f, half) == n * fn &&                      \
                      sizeof(gad_be_##f) == n * fn + sizeof(void *),           \
                  "family %s: %zu entries listed, then half", #f, n);           \
    }
    GAD_BE_FAMILIES(FAM)
#undef FAM
}

static const char *entry_name(int k, char *buf, size_t cap) {
    const entry_id *e = &entries[k];
    if (!e->fam) snprintf(buf, cap, "%s", e->name);
    else if (!e->name) snprintf(buf, cap, "%s (all)", e->fam);
    else snprintf(buf, cap, "%s.%s", e->fam, e->name);
    return buf;
}

/* ---------------------------------------------------------------- rows */

/* The rows: the registry's ops (1 .. GAD_OP_COUNT_ - 1), then the work
 * outside it that uses kernels of its own. */
enum { X_ADAMW, X_SGD, X_CLIP, X_ANOMALY, NEXTRA };
static const char *const extra_names[NEXTRA] = {"optim_step (AdamW)",
                                                "optim_step (SGD)", "clip_grad_norm",
                                                "anomaly mode (grad)"};
/* the op its errors name */
static const char *const extra_ops[NEXTRA] = {"optim_step", "optim_step",
                                              "clip_grad_norm", "mul_scalar"};
enum { NROWS = GAD_OP_COUNT_ + NEXTRA };

static const char *row_name(int row) {
    return row < GAD_OP_COUNT_ ? gad__ops[row].info.name : extra_names[row - GAD_OP_COUNT_];
}

/* Views: they need no kernel forward (checked with an empty table), and
 * the loop over entries skips them. */
static const char *const views[] = {"reshape", "permute", "slice", "select", "broadcast_to",
                                    "stop_gradient"};

static int is_view(int row) {
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        if (row < GAD_OP_COUNT_ && !strcmp(row_name(row), views[i])) return 1;
    return 0;
}

/* need[row][k]: 1 the forward needs entry k, 2 only the backward */
static unsigned char need[NROWS][NENT];

/* The op name an unsupported error from row must give. */
static const char *want_op(int row) {
    return row < GAD_OP_COUNT_ ? gad__ops[row].info.name : extra_ops[row - GAD_OP_COUNT_];
}

static int check_unsupported(int row, int k, const char *what) {
    const gad_error *e = gad_last_error();
    char en[64], want[96];
    snprintf(want, sizeof want, "%s: not supported on test:0", want_op(row));
    int ok = e && e->kind == GAD_ERR_UNSUPPORTED && !strcmp(e->op, want_op(row)) &&
             strstr(e->text, want);
    /* convolution and pooling: the rows' samples call the public functions
     * (gad_conv1d/2d/3d, gad_max_pool1d/2d, gad_adaptive_max_pool2d, ...),
     * which name themselves (conv_transpose and avg_pool likewise) */
    char nd[64];
    int wrapped = row == GAD_OP_CONV || row == GAD_OP_CONV_TRANSPOSE || row == GAD_OP_MAX_POOL ||
                  row == GAD_OP_AVG_POOL;
    for (int d = 1; d <= 4 && wrapped && !ok && e && e->kind == GAD_ERR_UNSUPPORTED; d++) {
        if (d < 4) snprintf(nd, sizeof nd, "%s%dd", want_op(row), d);
        else snprintf(nd, sizeof nd, "adaptive_%s2d", want_op(row));
        if (!strcmp(e->op, nd)) {
            snprintf(want, sizeof want, "%s: not supported on test:0", nd);
            ok = strstr(e->text, want) != NULL;
        }
    }
    /* a composite's backward runs the VJPs of the ops it recorded: the
     * engine names the node's op */
    if (!ok && e && e->kind == GAD_ERR_UNSUPPORTED && row >= GAD_OP_COMPOSITE_ &&
        row < GAD_OP_COUNT_ && !strcmp(what, "backward"))
        ok = strstr(e->text, ": not supported on test:0") != NULL;
    CHECK_MSG(ok, "%s without %s, %s: want \"%s\", got %s", row_name(row),
              entry_name(k, en, sizeof en), what, want, e ? e->text : "no error");
    return ok;
}

/* ------------------------------------------------------------ the runs */

static gad_tensor *to_td(gad_tensor *t) {
    if (!t) return NULL;
    gad_tensor *d = gad__own(gad__to_dev("test", t, TD));
    return d && gad_is_leaf(t) ? gad_requires_grad(d) : d;
}

#define MAXEL 4096

static int same_bits(gad_tensor *a, gad_tensor *b) {
    static double va[MAXEL], vb[MAXEL];
    int64_t na = gad_numel(a), nb = gad_numel(b);
    if (na != nb || na > MAXEL || gad_dtype(a) != gad_dtype(b) || gad_rank(a) != gad_rank(b))
        return 0;
    if (gad_read_f64(a, va, MAXEL) != GAD_OK || gad_read_f64(b, vb, MAXEL) != GAD_OK) return 0;
    for (int64_t i = 0; i < na; i++)
        if (memcmp(&va[i], &vb[i], sizeof va[i]) != 0 && !(isnan(va[i]) && isnan(vb[i])))
            return 0;
    return 1;
}

typedef struct counts {
    int64_t tensors, storages, bytes, dev_bytes;
} counts;

static counts now(void) {
    gad_mem_stats m;
    gad_mem_stats_get(&m);
    return (counts){m.live_tensors, m.live_storages, m.live_bytes, m.device_live_bytes};
}

/* The forward and, when tracked, the backward (seeded with ones) of one
 * sample on the test device as its table is now: 0 with y and the
 * gradients in g, 1 the forward failed, 2 the backward did. */
static int run_sample(gad_op_sample *s, gad_tensor **din, gad_tensor **leaves, int nl,
                      gad_tensor **y, gad_tensor **g) {
    *y = s->apply(s, din, s->n);
    if (!*y) return 1;
    if (!gad_is_tracked(*y) || nl == 0 || (gad_dtype(*y) != GAD_F32 && gad_dtype(*y) != GAD_F64))
        return 0;
    gad_tensor *seed = to_td(gad_ones(gad_shape(*y), gad_rank(*y), gad_dtype(*y)));
    return gad_grad_ex(*y, seed, leaves, nl, g, 0) == GAD_OK ? 0 : 2;
}

/* Registry op `op` without entry k (k < 0: none), every sample. */
static void gaps_of_op(int op, int k) {
    gad_rng *rng = gad_rng_new(91);
    for (int v = 0;; v++) {
        counts before = now();
        gad_op_sample s;
        if (!test_sample(op, rng, v, &s)) break;
        gad_tensor *din[12], *leaves[12], *g0[12], *g1[12], *y0, *y1;
        int nl = 0;
        for (int i = 0; i < s.n; i++) {
            din[i] = to_td(s.in[i]);
            if (s.in[i] && gad_is_leaf(s.in[i])) leaves[nl++] = din[i];
        }
        td_table_reset();
        int rc0 = run_sample(&s, din, leaves, nl, &y0, g0);
        CHECK_MSG(rc0 == 0, "%s %s with the full table: %s", row_name(op), s.what,
                  gad_last_error() ? gad_last_error()->text : "");
        gad_clear_error();
        if (rc0 == 0 && k >= 0) {
            td_remove(k);
            int rc = run_sample(&s, din, leaves, nl, &y1, g1);
            td_table_reset();
            char en[64];
            if (rc == 0) {
                CHECK_MSG(same_bits(y0, y1), "%s %s without %s: other values", row_name(op),
                          s.what, entry_name(k, en, sizeof en));
            } else {
                check_unsupported(op, k, rc == 1 ? "forward" : "backward");
                if (entries[k].name && (!need[op][k] || rc == 1)) need[op][k] = (unsigned char)rc;
            }
        }
        gad_clear_error();
        gad_scope_end();
        counts after = now();
        char en[64];
        CHECK_MSG(!memcmp(&before, &after, sizeof before),
                  "%s %s without %s: leaked (tensors %lld -> %lld, storages %lld -> %lld)",
                  row_name(op), s.what, k >= 0 ? entry_name(k, en, sizeof en) : "nothing",
                  (long long)before.tensors, (long long)after.tensors,
                  (long long)before.storages, (long long)after.storages);
    }
    gad_rng_free(rng);
}

/* Row X_* without entry k. */
static void gaps_of_extra(int x, int k) {
    int row = GAD_OP_COUNT_ + x;
    counts before = now();
    td_table_reset();
    if (k >= 0) td_remove(k);
    gad_scope_begin();
    int64_t shape[1] = {5};
    gad_tensor *p = to_td(gad_requires_grad(gad_full(shape, 1, GAD_F32, 2)));
    gad_tensor *g = gad__own(gad__to_dev("test", gad_full(shape, 1, GAD_F32, 3), TD));
    int ok = 1, rc = 1;
    if (x == X_ADAMW || x == X_SGD) {
        gad_sgd_opts so = {.lr = 0.1, .momentum = 0.9};
        gad_optim *o = x == X_ADAMW ? gad_adamw_new(&p, 1, NULL) : gad_sgd_new(&p, 1, &so);
        ok = o && gad_optim_step(o, &g) == GAD_OK;
        gad_optim_free(o);
    } else if (x == X_CLIP) {
        double norm = gad_clip_grad_norm(&g, 1, 0.5);
        ok = norm > 0.5;
    } else {
        int was = gad_set_anomaly(1);
        gad_tensor *y = gad_mul_scalar(p, 2), *gp = NULL;
        rc = y ? 2 : 1;
        ok = y && gad_grad_ex(y, gad__own(gad__to_dev("test", gad_ones(shape, 1, GAD_F32), TD)),
                              &p, 1, &gp, 0) == GAD_OK;
        gad_set_anomaly(was);
    }
    td_table_reset();
    char en[64];
    if (k < 0) {
        CHECK_MSG(ok, "%s with the full table: %s", row_name(row),
                  gad_last_error() ? gad_last_error()->text : "");
    } else if (!ok) {
        check_unsupported(row, k, "the call");
        if (entries[k].name && (!need[row][k] || rc == 1)) need[row][k] = (unsigned char)rc;
    }
    gad_clear_error();
    gad_scope_end();
    counts after = now();
    CHECK_MSG(!memcmp(&before, &after, sizeof before), "%s without %s: leaked", row_name(row),
              k >= 0 ? entry_name(k, en, sizeof en) : "nothing");
}

static void find_gaps(void) {
    for (int k = -1; k < NENT; k++) {
        for (int op = 1; op < GAD_OP_COUNT_; op++)
            if (!is_view(op)) gaps_of_op(op, k);
        for (int x = 0; x < NEXTRA; x++) gaps_of_extra(x, k);
    }
}

TEST(every_gap_is_an_unsupported_error) {
    find_gaps();
    /* every entry is needed by some op */
    for (int k = 0; k < NENT; k++) {
        if (!entries[k].name) continue;
        int used = 0;
        for (int r = 1; r < NROWS; r++) used |= need[r][k] != 0;
        char en[64];
        CHECK_MSG(used, "no op needs %s", entry_name(k, en, sizeof en));
    }
}

/* The views run forward with no kernel at all. */
TEST(views_need_no_kernel) {
    gad_rng *rng = gad_rng_new(92);
    int seen = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        if (!is_view(op)) continue;
        seen++;
        gad_op_sample s;
        if (!test_sample(op, rng, 0, &s)) continue;
        gad_tensor *din[12];
        for (int i = 0; i < s.n; i++) din[i] = to_td(s.in[i]);
        for (int k = 0; k < NENT; k++) td_remove(k);
        gad_tensor *y = s.apply(&s, din, s.n);
        td_table_reset();
        CHECK_MSG(y != NULL, "view %s needs a kernel: %s", row_name(op),
                  gad_last_error() ? gad_last_error()->text : "");
        gad_clear_error();
        gad_scope_end();
    }
    gad_rng_free(rng);
    CHECK(seen == (int)(sizeof views / sizeof views[0]));
}

/* The composite ops name themselves, not the op inside them. */
TEST(composites_name_themselves) {
    gad_scope_begin();
    gad_tensor *x = to_td(gad_full((int64_t[]){2, 3}, 2, GAD_F32, 1.5));
    td_remove(1); /* binary */
    CHECK(gad_variance(x, NULL, 0, 0) == NULL);
    CHECK_MSG(gad_last_error() && !strcmp(gad_last_error()->op, "variance") &&
                  strstr(gad_last_error()->text, "variance: not supported on test:0"),
              "%s", gad_last_error() ? gad_last_error()->text : "no error");
    gad_clear_error();
    CHECK(gad_logsumexp(x, 1, 0) == NULL);
    CHECK(gad_last_error() && !strcmp(gad_last_error()->op, "logsumexp"));
    gad_clear_error();
    CHECK(gad_mse_loss(x, x, GAD_REDUCE_MEAN) == NULL);
    CHECK(gad_last_error() && !strcmp(gad_last_error()->op, "mse_loss"));
    gad_clear_error();
    td_table_reset();
    td_backend.cat_into = NULL;
    CHECK(gad_stack((gad_tensor *[]){x, x}, 2, 0) == NULL);
    CHECK(gad_last_error() && !strcmp(gad_last_error()->op, "stack"));
    gad_clear_error();
    td_table_reset();
    td_backend.matmul = NULL;
    gad_tensor *w = to_td(gad_full((int64_t[]){3, 4}, 2, GAD_F32, 0.5));
    CHECK(gad_linear(x, w, NULL) == NULL);
    CHECK_MSG(gad_last_error() && !strcmp(gad_last_error()->op, "linear"), "%s",
              gad_last_error() ? gad_last_error()->text : "no error");
    gad_clear_error();
    td_table_reset();
    gad_scope_end();
}

/* A VJP's unsupported error names its op, and an unsupported error that
 * was pending before the backward pass stays the thread's first error,
 * under its own op. */
TEST(a_vjp_gap_names_its_op_not_an_older_error) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(to_td(gad_full((int64_t[]){2, 3}, 2, GAD_F32, 0.5)));
    gad_tensor *y = gad_sum_all(gad_tanh(x));
    CHECK(y != NULL);
    td_backend.grad = NULL; /* tanh's backward */
    gad_tensor *g = NULL;
    CHECK(gad_grad(y, &x, 1, &g) == GAD_ERR_UNSUPPORTED);
    CHECK_MSG(gad_last_error() && !strcmp(gad_last_error()->op, "tanh"), "%s",
              gad_last_error() ? gad_last_error()->text : "no error");
    gad_clear_error();
    td_backend.softmax = NULL;
    CHECK(gad_softmax(x, 1) == NULL); /* the older error, left pending */
    CHECK(gad_last_error() && gad_last_error()->kind == GAD_ERR_UNSUPPORTED);
    CHECK(gad_grad(y, &x, 1, &g) != GAD_OK);
    CHECK_MSG(gad_last_error() && !strcmp(gad_last_error()->op, "softmax"), "%s",
              gad_last_error() ? gad_last_error()->text : "no error");
    gad_clear_error();
    td_table_reset();
    gad_scope_end();
}

/* ------------------------------------------------------ docs/backends.md */

/* Whether back end source `path` sets entry k: its table's initializer
 * (type `gad_backend`, or the family's `gad_be_<family>`) holds ".name =".
 * The CUDA back end's tables, read from its source, since a build without
 * CUDA has no CUDA table to look at. */
static int source_sets(const char *text, const char *type, const char *name) {
    char decl[80], field[80];
    snprintf(decl, sizeof decl, "const %s ", type);
    snprintf(field, sizeof field, ".%s =", name);
    for (const char *p = strstr(text, decl); p; p = strstr(p + 1, decl)) {
        const char *open = strchr(p, '{'), *semi = strchr(p, ';');
        if (!open || (semi && semi < open)) continue; /* a declaration */
        const char *close = strstr(open, "};");
        for (const char *f = strstr(open, field); f && f < close; f = strstr(f + 1, field))
            if (f[-1] == ' ' || f[-1] == '\n' || f[-1] == '{') return 1;
    }
    return 0;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

enum { BE_CPU, BE_CUDA, BE_TEST, NBE };

/* has[b][k]: back end b sets entry k (its family too) */
static int has_entry(const gad_backend *be, int k) {
    int i = 0;
#define X(e)                                                                   \
    if (i++ == k) return be->e != NULL;
    GAD_BE_CORE_ENTRIES(X)
#undef X
#define F(f, e)                                                                \
    if (i++ == k) return be->f != NULL && be->f->e != NULL;
    GAD_BE_FAMILY_ENTRIES(F)
#undef F
    return 1;
}

static int cuda_has(const char *src, int k) {
    const entry_id *e = &entries[k];
    if (!e->fam) return source_sets(src, "gad_backend", e->name);
    char type[64];
    snprintf(type, sizeof type, "gad_be_%s", e->fam);
    return source_sets(src, "gad_backend", e->fam) && source_sets(src, type, e->name);
}

#include "backend/embedding.h"
#include "backend/helix.h"
#include "backend/attention.h"
#include "backend/masked_ce.h"
#include "backend/rms_norm.h"
#include "backend/scan.h"

/* The page, in a buffer of the caller's. */
static size_t markdown(char *out, size_t cap) {
    char *src = slurp(GAD_SOURCE_DIR "/src/cuda/backend.c");
    int has[NBE][NENT];
    for (int k = 0; k < NENT; k++) {
        has[BE_CPU][k] = has_entry(&gad__cpu_backend, k);
        has[BE_TEST][k] = has_entry(&td_backend, k);
        has[BE_CUDA][k] = src && entries[k].name ? cuda_has(src, k) : 1;
    }
    free(src);
    size_t n = 0;
#define OUT(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
    OUT("# Which op runs on which back end\n\n"
        "Generated by `tests/test_backends.c` from the back ends' tables "
        "(`src/backend/backend.h`): `make generated`, or\n"
        "`build/tests/test_backends --markdown > docs/backends.md`; do not edit by hand.\n\n"
        "A back end may leave any kernel entry NULL; an op that needs it then fails with\n"
        "an unsupported error, \"OP: not supported on DEVICE\". The test takes the test\n"
        "device's entries away one at a time and runs every op of the registry on it\n"
        "(forward and backward): an op needs the entries whose absence made it fail.\n"
        "The CUDA column reads the tables in `src/cuda/backend.c`. \"forward only\":\n"
        "the backward lacks a kernel. Views need no kernel.\n\n"
        "| op | kernels it needs | CPU | CUDA | test |\n"
        "|---|---|---|---|---|\n");
    for (int r = 1; r < NROWS; r++) {
        OUT("| %s | ", row_name(r));
        if (is_view(r)) {
            OUT("none (a view) | yes | yes | yes |\n");
            continue;
        }
        int any = 0;
        char en[64];
        for (int k = 0; k < NENT; k++)
            if (need[r][k])
                OUT("%s`%s`%s", any++ ? ", " : "", entry_name(k, en, sizeof en),
                    need[r][k] == 2 ? " (backward)" : "");
        if (!any) OUT("none");
        for (int b = 0; b < NBE; b++) {
            int fwd = 1, bwd = 1;
            for (int k = 0; k < NENT; k++) {
                if (!need[r][k] || has[b][k]) continue;
                if (need[r][k] == 1) fwd = 0;
                else bwd = 0;
            }
            OUT(" | %s", !fwd ? "no" : bwd ? "yes" : "forward only");
        }
        OUT(" |\n");
    }
#undef OUT
    return n;
}

TEST(backends_md_is_current) {
    static char page[1 << 16];
    size_t n = markdown(page, sizeof page);
    CHECK(n < sizeof page);
    char *doc = slurp(GAD_SOURCE_DIR "/docs/backends.md");
    CHECK_MSG(doc && !strcmp(doc, page),
              "docs/backends.md %s; regenerate it: make generated (or test_backends "
              "--markdown > docs/backends.md)",
              doc ? "is stale" : "is missing");
    free(doc);
}

int main(int argc, char **argv) {
    register_test_device();
    if (TD < 0) {
        fprintf(stderr, "could not register the test device\n");
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--markdown")) {
        find_gaps();
        static char page[1 << 16];
        size_t n = markdown(page, sizeof page);
        if (n >= sizeof page) return 1;
        fputs(page, stdout);
        return test_failures_ ? 1 : 0;
    }
    RUN(the_lists_name_every_entry);
    RUN(views_need_no_kernel);
    RUN(composites_name_themselves);
    RUN(a_vjp_gap_names_its_op_not_an_older_error);
    RUN(every_gap_is_an_unsupported_error);
    RUN(backends_md_is_current);
    return test_summary();
}
