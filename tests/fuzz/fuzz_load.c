/* fuzz_load.c: the checkpoint-loader fuzzer (libFuzzer entry point).
 *
 * The input is the content of a safetensors file. It is written to a
 * temporary file (one per process, rewritten for every input) and loaded
 * with gad_load. The invariants (a violation calls abort()):
 *  - no crash, no sanitizer report, no leak (LeakSanitizer, and gad's live
 *    tensor and storage counts return to where they were);
 *  - a failed load records an error of kind format, io or unsupported with
 *    op "load" and a non-empty message;
 *  - a loaded checkpoint lists count() names; every name gets a sane tensor
 *    back from gad_checkpoint_get, whose elements gad_read_* can read (as
 *    its own dtype and converted); an out-of-range index and an absent name
 *    are index errors;
 *  - a round trip: the tensors saved again with gad_save (which must write
 *    every name that gad_load accepts: control characters, the empty name)
 *    load back with the same names in the same order and bit-identical
 *    values. */
#include "gad.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_load"
#include "fuzz_fail.h"

static char dir_path[4096], in_path[4200], out_path[4200];

static void cleanup(void) {
    if (!dir_path[0]) return;
    unlink(in_path);
    unlink(out_path);
    rmdir(dir_path);
}

static void setup(void) {
    if (dir_path[0]) return;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(dir_path, sizeof dir_path, "%s/gad_fuzz_load.XXXXXX", tmp);
    if (!mkdtemp(dir_path)) {
        perror("fuzz_load: mkdtemp");
        abort();
    }
    snprintf(in_path, sizeof in_path, "%s/in.safetensors", dir_path);
    snprintf(out_path, sizeof out_path, "%s/out.safetensors", dir_path);
    atexit(cleanup);
}

static void write_file(const char *path, const uint8_t *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror("fuzz_load: open");
        abort();
    }
    while (size > 0) {
        ssize_t w = write(fd, data, size);
        if (w <= 0) {
            perror("fuzz_load: write");
            abort();
        }
        data += w;
        size -= (size_t)w;
    }
    close(fd);
}

/* Check a tensor from the checkpoint; returns its numel. */
static int64_t check_tensor(gad_tensor *t, const char *name) {
    if (!t) fail("checkpoint_get('%.80s') failed: %s", name,
                 gad_last_error() ? gad_last_error()->text : "(no error)");
    if (gad_last_error()) fail("checkpoint_get returned a tensor with an error pending");
    int rank = gad_rank(t);
    gad_dtype_t dt = gad_dtype(t);
    if (rank < 0 || rank > GAD_MAX_RANK) fail("tensor '%.80s': rank %d", name, rank);
    if (dt < GAD_F32 || dt > GAD_U8) /* every gad dtype (issue 29) */
        fail("tensor '%.80s': dtype %d", name, (int)dt);
    int64_t n = 1;
    int zero = 0;
    for (int i = 0; i < rank; i++) {
        int64_t d = gad_shape(t)[i];
        if (d < 0) fail("tensor '%.80s': negative dim", name);
        if (d == 0) zero = 1;
        else if (n > INT64_MAX / d) n = INT64_MAX; /* only with a zero dim */
        else n *= d;
    }
    if (zero) n = 0;
    if (gad_numel(t) != n) fail("tensor '%.80s': numel %lld, shape holds %lld", name,
                                (long long)gad_numel(t), (long long)n);
    if (!gad_is_contiguous(t)) fail("tensor '%.80s' is not contiguous", name);
    /* read it as its own dtype and converted, with the exact capacity */
    size_t cap = (size_t)n;
    void *buf = malloc((cap ? cap : 1) * 8);
    if (!buf) abort();
    gad_status st[3] = {gad_read_f32(t, buf, cap), gad_read_f64(t, buf, cap),
                        gad_read_i64(t, buf, cap)};
    for (int k = 0; k < 3; k++)
        if (st[k] != GAD_OK) fail("tensor '%.80s': read %d failed", name, k);
    if (n > 0 && (dt == GAD_F32 || dt == GAD_F64 || dt == GAD_I64)) {
        const void *d = gad_data(t);
        if (!d) fail("tensor '%.80s': gad_data is NULL", name);
        /* read as its own dtype: exactly the stored bytes */
        size_t es = gad_dtype_size(dt);
        if (dt == GAD_I64) gad_read_i64(t, buf, cap);
        else if (dt == GAD_F64) gad_read_f64(t, buf, cap);
        else gad_read_f32(t, buf, cap);
        if (memcmp(buf, d, cap * es) != 0)
            fail("tensor '%.80s': reading it as %s changes its bytes", name,
                 gad_dtype_name(dt));
        if (gad_read_f32(t, buf, cap - 1) == GAD_OK)
            fail("tensor '%.80s': a read with too small a capacity succeeded", name);
        check_error_recorded("read_f32 (too small)");
        gad_clear_error();
    }
    free(buf);
    return n;
}

static int same_tensor(gad_tensor *a, gad_tensor *b) {
    if (gad_dtype(a) != gad_dtype(b) || gad_rank(a) != gad_rank(b)) return 0;
    for (int i = 0; i < gad_rank(a); i++)
        if (gad_shape(a)[i] != gad_shape(b)[i]) return 0;
    int64_t n = gad_numel(a);
    if (n == 0) return 1;
    return memcmp(gad_data(a), gad_data(b), (size_t)n * gad_dtype_size(gad_dtype(a))) == 0;
}

static void round_trip(const char **names, gad_tensor **ts, int n) {
    gad_status st = gad_save(out_path, names, ts, n);
    if (st != GAD_OK)
        fail("saving a loaded checkpoint failed: %s", check_error_recorded("save")->text);
    gad_checkpoint *cp = gad_load(out_path);
    if (!cp) fail("a checkpoint gad_save wrote does not load: %s",
                  gad_last_error() ? gad_last_error()->text : "(no error)");
    if (gad_checkpoint_count(cp) != n)
        fail("round trip: %d tensors, %d after", n, gad_checkpoint_count(cp));
    for (int i = 0; i < n; i++) {
        const char *name = gad_checkpoint_name(cp, i);
        if (!name || strcmp(name, names[i]) != 0)
            fail("round trip: name %d is '%.80s', was '%.80s'", i, name ? name : "(null)",
                 names[i]);
        gad_tensor *t = gad_checkpoint_get(cp, name);
        check_tensor(t, name);
        if (!same_tensor(t, ts[i])) fail("round trip: tensor '%.80s' changed", name);
    }
    gad_checkpoint_free(cp);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("OMP_WAIT_POLICY", "passive", 0);
    setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    write_file(in_path, data, size);
    gad_clear_error();
    gad_mem_stats m0, m1;
    gad_mem_stats_get(&m0);
    gad_scope_begin();

    gad_checkpoint *cp = gad_load(in_path);
    if (!cp) {
        const gad_error *e = check_error_recorded("load");
        if (e->kind != GAD_ERR_FORMAT && e->kind != GAD_ERR_IO &&
            e->kind != GAD_ERR_UNSUPPORTED)
            fail("load failed with a %s error: %s", gad_status_str(e->kind), e->text);
        if (strcmp(e->op, "load") != 0) fail("load failed with op '%s'", e->op);
    } else {
        if (gad_last_error()) fail("load succeeded with an error pending");
        int n = gad_checkpoint_count(cp);
        if (n < 0) fail("count %d", n);
        const char **names = calloc((size_t)n + 1, sizeof *names);
        gad_tensor **ts = calloc((size_t)n + 1, sizeof *ts);
        if (!names || !ts) abort();
        int unreadable = 0;
        for (int i = 0; i < n; i++) {
            names[i] = gad_checkpoint_name(cp, i);
            if (!names[i]) fail("checkpoint_name(%d) of %d is NULL", i, n);
            ts[i] = gad_checkpoint_get(cp, names[i]);
            if (!ts[i] && gad_last_error() &&
                (gad_last_error()->kind == GAD_ERR_FORMAT ||       /* a BOOL byte > 1 */
                 gad_last_error()->kind == GAD_ERR_UNSUPPORTED)) { /* a U64 > INT64_MAX */
                if (strcmp(gad_last_error()->op, "checkpoint_get") != 0)
                    fail("checkpoint_get failed with op '%s'", gad_last_error()->op);
                gad_clear_error();
                unreadable = 1;
                continue;
            }
            check_tensor(ts[i], names[i]);
            for (int j = 0; j < i; j++)
                if (strcmp(names[i], names[j]) == 0) fail("duplicate name '%.80s'", names[i]);
        }
        /* the metadata: every key listed has its value; past the end, an
         * index error */
        int nm = gad_checkpoint_meta_count(cp);
        if (nm < 0) fail("meta count %d", nm);
        for (int i = 0; i < nm; i++) {
            const char *k = gad_checkpoint_meta_key(cp, i);
            if (!k || !gad_checkpoint_meta(cp, k)) fail("metadata key %d has no value", i);
        }
        if (gad_checkpoint_meta_key(cp, nm) != NULL ||
            check_error_recorded("checkpoint_meta_key")->kind != GAD_ERR_INDEX)
            fail("checkpoint_meta_key(%d) of %d: not an index error", nm, nm);
        gad_clear_error();
        /* selecting every tensor gives the same checkpoint */
        gad_checkpoint *sel = gad_load_names(in_path, names, n);
        if (!sel || gad_checkpoint_count(sel) != n || gad_checkpoint_meta_count(sel) != nm)
            fail("load_names of every name differs from load: %s",
                 gad_last_error() ? gad_last_error()->text : "(no error)");
        gad_checkpoint_free(sel);
        const int bad_i[2] = {-1, n};
        for (int k = 0; k < 2; k++) {
            if (gad_checkpoint_name(cp, bad_i[k]) != NULL)
                fail("checkpoint_name(%d) of %d is not NULL", bad_i[k], n);
            if (check_error_recorded("checkpoint_name")->kind != GAD_ERR_INDEX)
                fail("checkpoint_name out of range: not an index error");
            gad_clear_error();
        }
        const char *absent = "\x7f absent \x7f";
        gad_tensor *t = gad_checkpoint_get(cp, absent);
        int listed = 0;
        for (int i = 0; i < n; i++) listed |= strcmp(names[i], absent) == 0;
        if (!t) {
            if (listed) fail("checkpoint_get of a listed name failed");
            if (check_error_recorded("checkpoint_get")->kind != GAD_ERR_INDEX)
                fail("checkpoint_get of an absent name: not an index error");
        } else if (!listed) {
            fail("checkpoint_get found a name that is not listed");
        }
        gad_clear_error();
        if (!unreadable) round_trip(names, ts, n);
        free(names);
        free(ts);
        gad_checkpoint_free(cp);
    }
    gad_clear_error();
    gad_scope_end();
    gad_mem_stats_get(&m1);
    if (m1.live_tensors != m0.live_tensors || m1.live_storages != m0.live_storages)
        fail("leak: %lld tensors and %lld storages alive (%lld and %lld before)",
             (long long)m1.live_tensors, (long long)m1.live_storages,
             (long long)m0.live_tensors, (long long)m0.live_storages);
    return 0;
}
