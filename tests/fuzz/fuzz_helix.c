/* fuzz_helix.c: a structure-aware fuzzer of helix_lm's checkpoints
 * (libFuzzer entry point), driving the program's own code in-process.
 *
 * At start it trains two tiny helix_lm runs (helix_lm's train(), a few
 * steps) and keeps their valid checkpoints. An input is an edit program
 * applied to one of them: its first byte picks the checkpoint, then every
 * 10-byte record [op, sel, 8 bytes of value] edits it:
 *   op 0  set the scalar `sel` (hp.*, run.*, opt.step) to an i64 value
 *   op 1  set it to an f64 value (the 8 bytes as a double: NaN, Inf, ...)
 *   op 2  set it to one of the values at the edges (0, -1, 2^31, 2^57,
 *         2^62, INT64_MAX, INT64_MIN, NaN, +-Inf, 1e300, 0.5, the bounds of
 *         helix_lm's ranges and one past them), as i64 or f64
 *   op 3  change the shape of the tensor `sel`: set, insert or remove one
 *         dimension (the data is the old one repeated, at most 2^18 values)
 *   op 4  drop the tensor `sel`
 *   op 5  change the dtype of the tensor `sel` (f32, f64 or i64)
 * The result is written as a safetensors file (gad_save), so the fuzzer
 * explores helix_lm's handling of configurations and shapes rather than the
 * loader's parsing (fuzz_load does that). Each input then goes through:
 *   - sample: load_model and generate (a few bytes);
 *   - eval: evaluate on a small text (at most 4 validation windows, as
 *     `eval --val-windows 4`);
 *   - resume: train --resume for one more step (eval at the end only,
 *     into a scratch run directory), and the checkpoint it writes must load.
 * The invariants (a violation aborts): no crash, no sanitizer report, no
 * hang (the work is bounded by the checks helix_lm makes); a checkpoint
 * that loads samples and evaluates without an error, to a finite loss;
 * after a successful resume, its new checkpoint loads at the step it
 * reached. helix_lm's messages for rejected checkpoints go to stderr (run
 * libFuzzer with -close_fd_mask=2 to keep them out of its output). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "data.h"
#include "gad.h"
#include "helix_model.h"
#include "metrics.h"
#include "train.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void violated(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;
#include <stdarg.h>
static void violated(const char *fmt, ...) {
    va_list ap;
    fputs("fuzz_helix: invariant violated: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

#define NBASE 2
#define MAX_EDITS 16
#define MAX_VALUES (1 << 18) /* the most values a reshaped tensor gets */
#define MAX_NAMES 256

static char root[4096], text_path[4200], run_dir[4200], ckpt_path[4200], base_dir[NBASE][4200];
static gad_checkpoint *base[NBASE];
static dataset text;

static void rm_run_files(const char *dir) {
    const char *files[] = {"checkpoint.safetensors", "metrics.csv", "loss.svg"};
    char p[4300];
    for (int i = 0; i < 3; i++) remove(join_path(p, sizeof p, dir, files[i]));
}

static void cleanup(void) {
    if (!root[0]) return;
    rm_run_files(run_dir);
    rmdir(run_dir);
    for (int i = 0; i < NBASE; i++) {
        gad_checkpoint_free(base[i]);
        rm_run_files(base_dir[i]);
        rmdir(base_dir[i]);
    }
    remove(text_path);
    rmdir(root);
    free(text.bytes);
}

/* A tiny run of `steps` steps into dir; its checkpoint. */
static gad_checkpoint *make_base(const char *dir, int64_t d, int64_t layers, int64_t batch,
                                 int64_t seq, int64_t steps) {
    config c = default_config();
    c.d = d, c.layers = layers, c.batch = batch, c.seq = seq, c.steps = steps;
    c.warmup = 2, c.val_windows = 4, c.eval_every = 0, c.ckpt_every = 0, c.bytes = 0;
    c.data = text_path;
    c.out = dir;
    given_set none;
    memset(&none, 0, sizeof none);
    train_result res;
    int rc = train(&c, &none, 1, &res);
    free(res.mt.rows);
    if (rc != 0) violated("cannot train the base checkpoint in %s", dir);
    char p[4300];
    gad_checkpoint *cp = gad_load(join_path(p, sizeof p, dir, "checkpoint.safetensors"));
    if (!cp) violated("cannot load the base checkpoint %s", p);
    return cp;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    gad_set_num_threads(1);
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(root, sizeof root, "%s/gad_fuzz_helix.XXXXXX", tmp); /* mkdtemp's template */
    if (!mkdtemp(root)) violated("cannot make a temporary directory in %s", tmp);
    atexit(cleanup);
    join_path(text_path, sizeof text_path, root, "text.txt");
    join_path(run_dir, sizeof run_dir, root, "run");
    join_path(ckpt_path, sizeof ckpt_path, run_dir, "checkpoint.safetensors");
    FILE *f = fopen(text_path, "w");
    if (!f) violated("cannot write %s", text_path);
    for (int i = 0; i < 1500; i++) fprintf(f, "In the beginning God created %d\n", i * 7919 % 10007);
    fclose(f);
    if (load_text(text_path, &text) != 0) violated("cannot read %s", text_path);
    if (make_dirs(run_dir) != 0) violated("cannot make %s", run_dir);
    const int64_t shapes[NBASE][5] = {{8, 1, 2, 8, 3}, {4, 2, 3, 5, 12}};
    for (int i = 0; i < NBASE; i++) {
        char name[16];
        snprintf(name, sizeof name, "base%d", i);
        join_path(base_dir[i], sizeof base_dir[i], root, name);
        base[i] = make_base(base_dir[i], shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
                            shapes[i][4]);
    }
    return 0;
}

/* ------------------------------------------------------------ the edits */

static const char *const scalars[] = {
    "hp.d", "hp.layers", "hp.batch", "hp.seq", "hp.val-windows", "hp.steps", "hp.warmup",
    "hp.seed", "hp.eval-every", "hp.ckpt-every", "hp.time-budget", "hp.lr", "hp.min-lr",
    "hp.clip", "hp.wd", "hp.beta1", "hp.beta2", "run.step", "run.seconds", "run.threads",
    "run.version", "run.lr_anchor", "run.lr_anchor_lr", "run.lr_total", "opt.step"};
#define N_SCALARS (int)(sizeof scalars / sizeof scalars[0])

static const int64_t edge_i64[] = {0, 1, -1, 2, 3, 4, 7, 8, 9, 16, 64, 255, 256, 65535, 65536,
                                   65537, 8192, 8193, 1000000000000LL, 1000000000001LL,
                                   (int64_t)1 << 31, (int64_t)1 << 32, (int64_t)1 << 53,
                                   (int64_t)1 << 57, (int64_t)1 << 61, (int64_t)1 << 62,
                                   INT64_MAX, INT64_MIN, INT64_MAX / 4};
static const double edge_f64[] = {0.0, -0.0, 0.5, 1.0, 2.5, -1.0, 1e-12, 1e300, -1e300, 10.0,
                                  10.5, 0.999999, 1e9, 1e12, 2.4e18, 9.3e18, 1e-320};

typedef struct edited {
    int n;
    char *names[MAX_NAMES];
    gad_tensor *ts[MAX_NAMES];
} edited;

static int find(const edited *e, const char *name) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->names[i], name)) return i;
    return -1;
}

/* Replace (or add) the tensor of name with t (owned by e). */
static void put(edited *e, const char *name, gad_tensor *t) {
    if (!t) {
        gad_clear_error();
        return;
    }
    int i = find(e, name);
    if (i < 0) {
        if (e->n == MAX_NAMES) {
            gad_release(t);
            return;
        }
        i = e->n++;
        e->names[i] = strdup(name);
        if (!e->names[i]) violated("out of memory");
    } else {
        gad_release(e->ts[i]);
    }
    e->ts[i] = t;
}

static void drop(edited *e, int i) {
    gad_release(e->ts[i]);
    free(e->names[i]);
    e->ts[i] = e->ts[e->n - 1];
    e->names[i] = e->names[e->n - 1];
    e->n--;
}

/* t with a new shape, its values repeated (as f64, then cast back). */
static gad_tensor *reshaped(gad_tensor *t, const int64_t *shape, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0 || shape[i] > MAX_VALUES) return NULL;
        n *= shape[i];
        if (n > MAX_VALUES) return NULL;
    }
    int64_t have = gad_numel(t);
    double *v = malloc((size_t)(have > 0 ? have : 1) * sizeof *v);
    double *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    gad_tensor *r = NULL;
    if (v && w && (have == 0 || gad_read_f64(t, v, (size_t)have) == GAD_OK)) {
        for (int64_t i = 0; i < n; i++) w[i] = have > 0 ? v[i % have] : 0.0;
        gad_tensor *f = gad_from_f64(w, shape, rank);
        r = f && gad_dtype(t) != GAD_F64 ? gad_cast(f, gad_dtype(t)) : f;
        if (r != f) gad_release(f);
    }
    free(v);
    free(w);
    return r;
}

static void apply(edited *e, const uint8_t *rec) {
    int op = rec[0] % 6, sel = rec[1];
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)rec[2 + i] << (8 * i);
    if (op <= 2) {
        const char *name = scalars[sel % N_SCALARS];
        int64_t iv;
        double dv;
        int as_f64 = op == 1;
        if (op == 0) {
            memcpy(&iv, &u, sizeof iv);
        } else if (op == 1) {
            memcpy(&dv, &u, sizeof dv);
        } else if (rec[2] & 1) {
            as_f64 = 1;
            int k = rec[3] % 20;
            dv = k < 17 ? edge_f64[k] : k == 17 ? NAN : k == 18 ? INFINITY : -INFINITY;
        } else {
            iv = edge_i64[rec[3] % (sizeof edge_i64 / sizeof edge_i64[0])];
        }
        put(e, name, as_f64 ? gad_scalar_f64(dv) : gad_from_i64(&iv, NULL, 0));
        return;
    }
    if (e->n == 0) return;
    int i = sel % e->n;
    gad_tensor *t = e->ts[i];
    if (op == 4) {
        drop(e, i);
    } else if (op == 3) {
        int64_t shape[GAD_MAX_RANK];
        int rank = gad_rank(t);
        memcpy(shape, gad_shape(t), (size_t)rank * sizeof *shape);
        int at = rank > 0 ? rec[2] % (rank + 1) : 0, how = rec[3] % 3;
        int64_t size = (int64_t)(rec[4] | (rec[5] << 8)) % 1025;
        if (how == 0 && at < rank) {
            shape[at] = size;
        } else if (how == 1 && rank < GAD_MAX_RANK) {
            memmove(shape + at + 1, shape + at, (size_t)(rank - at) * sizeof *shape);
            shape[at] = size;
            rank++;
        } else if (rank > 0) {
            if (at == rank) at--;
            memmove(shape + at, shape + at + 1, (size_t)(rank - at - 1) * sizeof *shape);
            rank--;
        }
        gad_tensor *r = reshaped(t, shape, rank);
        if (r) {
            gad_release(e->ts[i]);
            e->ts[i] = r;
        } else {
            gad_clear_error();
        }
    } else {
        const gad_dtype_t dts[3] = {GAD_F32, GAD_F64, GAD_I64};
        gad_tensor *r = gad_cast(t, dts[rec[2] % 3]);
        if (r) {
            gad_release(e->ts[i]);
            e->ts[i] = r;
        } else {
            gad_clear_error();
        }
    }
}

/* ------------------------------------------------------------- the runs */

/* sample and eval of the checkpoint at ckpt_path; 0 when it loaded */
static int sample_and_eval(int64_t *step) {
    config c = default_config(), saved;
    c.ckpt = ckpt_path;
    run_state rs;
    model m;
    char path[4300];
    if (load_model(&c, &saved, &rs, &m, path, sizeof path) != 0) return -1;
    if (m.d != saved.d || m.layers != saved.layers) violated("the model is not the checkpoint's");
    FILE *null = fopen("/dev/null", "w");
    if (!null) violated("cannot open /dev/null");
    if (generate(&m, "And", 3, 0.8, 40, 1, null) != 0)
        violated("a checkpoint that loads (d %lld) does not sample", (long long)saved.d);
    fclose(null);
    if (check_data_fits(&text, text_path, saved.seq) == 0) {
        double v = NAN;
        int64_t nw = saved.val_windows < 4 ? saved.val_windows : 4;
        if (evaluate(&m, &text, nw, saved.batch, saved.seq, &v) != 0 || !isfinite(v))
            violated("a checkpoint that loads does not evaluate (loss %g)", v);
    }
    *step = rs.step;
    model_free(&m);
    return 0;
}

/* train --resume --steps step+1 --val-windows 4 --eval-every 0 --ckpt-every 0 */
static void resume(int64_t step) {
    config c = default_config();
    given_set given;
    memset(&given, 0, sizeof given);
    const char *opts[] = {"steps", "val-windows", "eval-every", "ckpt-every", "bytes", "data"};
    for (int i = 0; i < 6; i++) given.on[option_index(opts[i])] = 1;
    c.resume = 1;
    c.out = run_dir;
    c.data = text_path;
    c.steps = step < MAX_STEPS ? step + 1 : (int64_t)MAX_STEPS;
    c.val_windows = 4;
    c.eval_every = 0;
    c.ckpt_every = 0;
    c.bytes = 0;
    train_result res;
    int rc = train(&c, &given, 1, &res);
    free(res.mt.rows);
    gad_clear_error();
    if (rc != 0) return;
    int64_t after = -1;
    if (sample_and_eval(&after) != 0)
        violated("the checkpoint that a resumed run wrote does not load");
    if (after != res.steps)
        violated("the resumed run reached step %lld, its checkpoint holds %lld",
                 (long long)res.steps, (long long)after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const gad_checkpoint *cp = base[data[0] % NBASE];
    edited e = {0};
    int n = gad_checkpoint_count(cp);
    for (int i = 0; i < n && e.n < MAX_NAMES; i++) {
        const char *name = gad_checkpoint_name(cp, i);
        gad_tensor *t = name ? gad_checkpoint_get(cp, name) : NULL;
        if (!t) violated("the base checkpoint lost tensor %d", i);
        e.names[e.n] = strdup(name);
        e.ts[e.n++] = t;
    }
    for (size_t off = 1, k = 0; off + 10 <= size && k < MAX_EDITS; off += 10, k++)
        apply(&e, data + off);
    rm_run_files(run_dir);
    int saved = gad_save(ckpt_path, (const char *const *)e.names, e.ts, e.n) == GAD_OK;
    gad_clear_error();
    for (int i = 0; i < e.n; i++) {
        gad_release(e.ts[i]);
        free(e.names[i]);
    }
    if (!saved) return 0;
    int64_t step = 0;
    int loaded = sample_and_eval(&step) == 0;
    gad_clear_error();
    resume(loaded ? step : 0);
    gad_clear_error();
    gad_cache_trim();
    return 0;
}
