/* test_checkpoint.c: gad_save / gad_load (safetensors).
 *
 * Round trips of every dtype and rank (empty and non-contiguous tensors
 * included), names that need JSON escapes, overwriting, failed saves that
 * must leave the old file alone, a table of malformed files (each rejected
 * with the right kind, by op "load"), every prefix of a valid file, a
 * mutation sweep (no crash; run it under ASan), a file written by Python
 * (committed, so it is checked without Python) and, when /usr/bin/python3
 * exists, live interop in both directions. Every test ends with the memory
 * counters back where they started. Files go to a mkdtemp directory. */
#define _DEFAULT_SOURCE /* mknod, makedev: a device node made by the test */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "test_tmpdir.h"

#define PYTHON "/usr/bin/python3"
#define INTEROP_PY GAD_SOURCE_DIR "/tests/reference/safetensors_interop.py"
#define PY_WRITTEN GAD_SOURCE_DIR "/tests/reference/python_written.safetensors"

/* ------------------------------------------------------------ helpers */

static char tmpdir[64];

static const char *tpath(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
    return buf;
}

static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

/* The whole file (malloc'd; *n its size), or NULL. */
static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
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

static int same_file(const char *path, const unsigned char *p, size_t n) {
    size_t m = 0;
    unsigned char *q = read_file(path, &m);
    int same = q && m == n && memcmp(p, q, n) == 0;
    free(q);
    return same;
}

/* Entries of dir whose name contains ".tmp." (temporary files of a save). */
static int count_tmp_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp.")) k++;
    closedir(d);
    return k;
}

static gad_mem_stats mem_base;
static void mem_mark(void) { gad_mem_stats_get(&mem_base); }

#define CHECK_NO_LEAK()                                                        \
    do {                                                                       \
        gad_mem_stats s_;                                                      \
        gad_mem_stats_get(&s_);                                                \
        CHECK_MSG(s_.live_tensors == mem_base.live_tensors &&                  \
                      s_.live_storages == mem_base.live_storages &&            \
                      s_.live_bytes == mem_base.live_bytes,                    \
                  "tensors %lld -> %lld, storages %lld -> %lld, bytes %lld "   \
                  "-> %lld", (long long)mem_base.live_tensors,                 \
                  (long long)s_.live_tensors,                                  \
                  (long long)mem_base.live_storages,                           \
                  (long long)s_.live_storages, (long long)mem_base.live_bytes, \
                  (long long)s_.live_bytes);                                   \
    } while (0)

/* The pending error has this kind and op, and its message contains needle
 * (NULL: anything); clears it. */
#define CHECK_ERR_MSG(kind_, op_, needle_)                                     \
    do {                                                                       \
        const gad_error *e_ = gad_last_error();                                \
        const char *n_ = (needle_);                                            \
        CHECK_MSG(e_ && e_->kind == (kind_) && strcmp(e_->op, (op_)) == 0 &&   \
                      (!n_ || strstr(e_->message, n_)),                        \
                  "expected %s error in %s saying '%s', got: %s",              \
                  gad_status_str(kind_), (op_), n_ ? n_ : "",                  \
                  e_ ? e_->text : "no error");                                 \
        gad_clear_error();                                                     \
    } while (0)

/* 1 if t's row-major bytes are exactly p[0..n). */
static int tensor_bytes_are(gad_tensor *t, const void *p, size_t n) {
    gad_scope_begin();
    gad_tensor *c = gad_contiguous(t);
    size_t have = (size_t)gad_numel(c) * gad_dtype_size(gad_dtype(c));
    int ok = c && have == n && (n == 0 || memcmp(gad_data(c), p, n) == 0);
    gad_scope_end();
    return ok;
}

/* 1 if a and b have the same dtype, shape and bytes. */
static int same_tensor(gad_tensor *a, gad_tensor *b) {
    if (!a || !b || gad_dtype(a) != gad_dtype(b) || gad_rank(a) != gad_rank(b))
        return 0;
    if (gad_rank(a) &&
        memcmp(gad_shape(a), gad_shape(b), (size_t)gad_rank(a) * 8) != 0)
        return 0;
    gad_scope_begin();
    gad_tensor *c = gad_contiguous(b);
    int ok = tensor_bytes_are(a, gad_data(c),
                              (size_t)gad_numel(c) * gad_dtype_size(gad_dtype(c)));
    gad_scope_end();
    return ok;
}

/* A tensor with distinct values, special values included: NaN, +-inf, -0,
 * a subnormal for floats; the i64 extremes for i64. */
static gad_tensor *make_tensor(gad_dtype_t dt, const int64_t *shape, int rank,
                               int seed) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i + 7 * seed;
        if (dt == GAD_F32) {
            float v = (float)k * 0.37f - 5.0f;
            if (i % 11 == 3) v = NAN;
            if (i % 11 == 5) v = -INFINITY;
            if (i % 11 == 7) v = -0.0f;
            if (i % 11 == 9) v = 1e-40f;
            ((float *)buf)[i] = v;
        } else if (dt == GAD_F64) {
            double v = (double)k / 3.0 - 2.0;
            if (i % 11 == 3) v = NAN;
            if (i % 11 == 5) v = INFINITY;
            if (i % 11 == 7) v = -0.0;
            if (i % 11 == 9) v = 4e-320;
            ((double *)buf)[i] = v;
        } else if (dt == GAD_BOOL) {
            ((uint8_t *)buf)[i] = (uint8_t)(k % 3 == 0);
        } else {
            int64_t v = k * 1000003 - 77;
            if (i % 11 == 3) v = INT64_MIN;
            if (i % 11 == 5) v = INT64_MAX;
            if (i % 11 == 7) v = -(INT64_C(1) << 53) - 1;
            ((int64_t *)buf)[i] = v;
        }
    }
    gad_tensor *t = dt == GAD_F32    ? gad_from_f32(buf, shape, rank)
                    : dt == GAD_F64  ? gad_from_f64(buf, shape, rank)
                    : dt == GAD_BOOL ? gad_from_bool(buf, shape, rank)
                                     : gad_from_i64(buf, shape, rank);
    free(buf);
    return t;
}

/* Save, load, and check that the checkpoint holds exactly names/tensors in
 * that order. Returns the checkpoint (or NULL). */
static gad_checkpoint *round_trip(const char *path, const char *const *names,
                                  gad_tensor *const *ts, int n) {
    gad_status st = gad_save(path, names, ts, n);
    CHECK_MSG(st == GAD_OK, "save: %s",
              gad_last_error() ? gad_last_error()->text : "");
    gad_checkpoint *cp = gad_load(path);
    CHECK_MSG(cp != NULL, "load: %s",
              gad_last_error() ? gad_last_error()->text : "");
    if (!cp) return NULL;
    CHECK(gad_checkpoint_count(cp) == n);
    for (int i = 0; i < n && i < gad_checkpoint_count(cp); i++) {
        const char *got = gad_checkpoint_name(cp, i);
        CHECK_MSG(got && strcmp(got, names[i]) == 0, "name %d: '%s' vs '%s'",
                  i, got ? got : "(null)", names[i]);
        gad_tensor *g = gad_checkpoint_get(cp, names[i]);
        CHECK_MSG(same_tensor(g, ts[i]), "tensor '%s' differs", names[i]);
    }
    CHECK_OK();
    return cp;
}

/* ------------------------------------------------------------ round trips */

TEST(round_trip_every_dtype_and_rank) {
    mem_mark();
    gad_scope_begin();
    enum { MAXT = 56 };
    char namebuf[MAXT][32];
    const char *names[MAXT];
    gad_tensor *ts[MAXT];
    int n = 0;
    static const int64_t dims[8] = {2, 1, 3, 1, 2, 4, 2, 1};
    static const int64_t empties[4][8] = {
        {0}, {3, 0}, {2, 0, 4}, {1, 1, 1, 1, 1, 1, 1, 0}};
    static const int empty_rank[4] = {1, 2, 3, 8};
    const gad_dtype_t dts[4] = {GAD_F32, GAD_F64, GAD_I64, GAD_BOOL};
    for (int d = 0; d < 4; d++) {
        for (int r = 0; r <= GAD_MAX_RANK; r++) {
            snprintf(namebuf[n], 32, "%s.rank%d", gad_dtype_name(dts[d]), r);
            names[n] = namebuf[n];
            ts[n] = make_tensor(dts[d], dims, r, n);
            n++;
        }
        for (int k = 0; k < 4; k++) {
            snprintf(namebuf[n], 32, "%s.empty%d", gad_dtype_name(dts[d]), k);
            names[n] = namebuf[n];
            ts[n] = make_tensor(dts[d], empties[k], empty_rank[k], n);
            n++;
        }
    }
    char path[256];
    tpath(path, sizeof path, "ranks.safetensors");
    gad_checkpoint *cp = round_trip(path, names, ts, n);
    /* The layout: the header length is a multiple of 8 and the file is
     * exactly 8 + header + data. */
    size_t len = 0;
    unsigned char *bytes = read_file(path, &len);
    CHECK(bytes && len >= 16);
    if (bytes && len >= 16) {
        uint64_t hlen = 0;
        for (int k = 7; k >= 0; k--) hlen = hlen << 8 | bytes[k];
        size_t data = 0;
        for (int i = 0; i < n; i++)
            data += (size_t)gad_numel(ts[i]) * gad_dtype_size(gad_dtype(ts[i]));
        CHECK(hlen % 8 == 0);
        CHECK(8 + hlen + data == len);
        CHECK(bytes[8] == '{');
    }
    free(bytes);
    gad_checkpoint_free(cp);
    gad_scope_end();
    CHECK_NO_LEAK();
}

TEST(non_contiguous_inputs_save_their_logical_values) {
    mem_mark();
    gad_scope_begin();
    int64_t s34[2] = {3, 4}, s234[3] = {2, 3, 4}, s6[1] = {6}, s3[1] = {3},
            s23[2] = {2, 3}, s22[2] = {2, 2};
    gad_tensor *a = gad_transpose(gad_arange(0, 12, 1, GAD_F32) ? gad_reshape(
                                      gad_arange(0, 12, 1, GAD_F32), s34, 2)
                                                                : NULL);
    int axes[3] = {2, 0, 1};
    gad_tensor *b = gad_permute(make_tensor(GAD_F64, s234, 3, 1), axes, 3);
    gad_range step2 = GAD_RANGE_STEP(GAD_NIL, GAD_NIL, 2);
    gad_tensor *c = gad_slice(make_tensor(GAD_I64, s6, 1, 2), &step2, 1);
    gad_tensor *d = gad_broadcast_to(make_tensor(GAD_F32, s3, 1, 3), s23, 2);
    gad_tensor *leaf = gad_requires_grad(make_tensor(GAD_F64, s22, 2, 4));
    gad_tensor *e = gad_transpose(leaf); /* a tracked view */
    CHECK(a && b && c && d && e);
    CHECK(!gad_is_contiguous(a) && !gad_is_contiguous(b) &&
          !gad_is_contiguous(c) && !gad_is_contiguous(d) &&
          !gad_is_contiguous(e));
    const char *names[5] = {"transposed", "permuted", "strided", "broadcast",
                            "tracked"};
    gad_tensor *ts[5] = {a, b, c, d, e};
    char path[256];
    gad_checkpoint *cp =
        round_trip(tpath(path, sizeof path, "views.safetensors"), names, ts, 5);
    if (cp) {
        gad_tensor *g = gad_checkpoint_get(cp, "transposed");
        CHECK_SHAPE(g, 4, 3);
        CHECK_VALUES(g, 0, 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11);
        CHECK(!gad_is_tracked(gad_checkpoint_get(cp, "tracked")));
        CHECK_SHAPE(gad_checkpoint_get(cp, "strided"), 3);
    }
    gad_checkpoint_free(cp);
    gad_scope_end();
    CHECK_OK();
    CHECK_NO_LEAK();
}

TEST(names_with_quotes_backslashes_and_unicode) {
    mem_mark();
    gad_scope_begin();
    const char *names[] = {
        "a\"b",          "c\\d",         "\"",          "\\",
        "\\\"",          "\"\\\"\\",     "x.y[0]/z",    "/",
        " spaced name ", "{\"fake\":1}", "__metadata", "\xc3\xbc/\xce\xb8/\xf0\x9d\x9c\x83",
        "\xf0\x9f\x98\x80 emoji", "~\x7e!"};
    enum { N = (int)(sizeof names / sizeof names[0]) };
    gad_tensor *ts[N];
    for (int i = 0; i < N; i++) ts[i] = gad_scalar_f32((float)i);
    char path[256];
    tpath(path, sizeof path, "names.safetensors");
    gad_checkpoint *cp = round_trip(path, names, ts, N);
    for (int i = 0; cp && i < N; i++)
        CHECK_VALUES(gad_checkpoint_get(cp, names[i]), 0, (double)i);
    gad_checkpoint_free(cp);
    /* The header escapes exactly the quote and the backslash. */
    size_t len = 0;
    unsigned char *bytes = read_file(path, &len);
    char *text = bytes ? calloc(len + 1, 1) : NULL;
    if (text) memcpy(text, bytes, len);
    for (size_t k = 0; text && k < len; k++)
        if (!text[k]) text[k] = '.';
    CHECK(text && strstr(text + 8, "\"a\\\"b\":"));
    CHECK(text && strstr(text + 8, "\"c\\\\d\":"));
    CHECK(text && strstr(text + 8, "\"\\\"\\\\\\\"\\\\\":"));
    CHECK(text && strstr(text + 8, "\xc3\xbc/\xce\xb8/\xf0\x9d\x9c\x83"));
    free(text);
    free(bytes);
    gad_scope_end();
    CHECK_NO_LEAK();
}

TEST(empty_checkpoint) {
    mem_mark();
    char path[256];
    tpath(path, sizeof path, "none.safetensors");
    CHECK(gad_save(path, NULL, NULL, 0) == GAD_OK);
    static const unsigned char want[16] = {8, 0, 0, 0, 0, 0, 0, 0,
                                           '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
    CHECK(same_file(path, want, sizeof want));
    gad_checkpoint *cp = gad_load(path);
    CHECK(cp && gad_checkpoint_count(cp) == 0);
    CHECK(gad_checkpoint_name(cp, 0) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "checkpoint_name", NULL);
    CHECK(gad_checkpoint_get(cp, "x") == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "checkpoint_get", "'x'");
    gad_checkpoint_free(cp);
    CHECK_NO_LEAK();
}

TEST(checkpoint_accessors) {
    mem_mark();
    int64_t s2[1] = {2};
    gad_tensor *a = gad_from_f32((const float[]){1.5f, -2}, s2, 1);
    gad_tensor *b = gad_from_i64((const int64_t[]){7, -7}, s2, 1);
    const char *names[2] = {"zeta", "alpha"};
    gad_tensor *ts[2] = {a, b};
    char path[256];
    tpath(path, sizeof path, "acc.safetensors");
    CHECK(gad_save(path, names, ts, 2) == GAD_OK);
    gad_release(a);
    gad_release(b);
    gad_checkpoint *cp = gad_load(path);
    CHECK(cp != NULL);
    CHECK(gad_checkpoint_count(cp) == 2);
    /* file order is the order given to save, not sorted */
    CHECK(cp && strcmp(gad_checkpoint_name(cp, 0), "zeta") == 0);
    CHECK(cp && strcmp(gad_checkpoint_name(cp, 1), "alpha") == 0);
    CHECK(gad_checkpoint_name(cp, 2) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "checkpoint_name", NULL);
    CHECK(gad_checkpoint_name(cp, -1) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "checkpoint_name", NULL);
    CHECK(gad_checkpoint_get(cp, "beta") == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "checkpoint_get", "'beta'");
    CHECK(gad_checkpoint_get(cp, "") == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "checkpoint_get", NULL);
    CHECK(gad_checkpoint_get(cp, NULL) == NULL);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "checkpoint_get", NULL);
    CHECK(gad_checkpoint_get(NULL, "zeta") == NULL);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "checkpoint_get", NULL);
    CHECK(gad_checkpoint_count(NULL) == 0);
    CHECK_OK();
    CHECK(gad_checkpoint_name(NULL, 0) == NULL);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "checkpoint_name", NULL);
    gad_checkpoint_free(NULL);
    /* With no scope open the caller owns each result; every get is a new
     * tensor, and it outlives the checkpoint. */
    gad_tensor *g1 = gad_checkpoint_get(cp, "zeta");
    gad_tensor *g2 = gad_checkpoint_get(cp, "zeta");
    gad_tensor *g3 = gad_checkpoint_get(cp, "alpha");
    CHECK(g1 && g2 && g1 != g2);
    gad_checkpoint_free(cp);
    CHECK_VALUES(g1, 0, 1.5, -2);
    CHECK_VALUES(g2, 0, 1.5, -2);
    CHECK(gad_dtype(g3) == GAD_I64);
    CHECK_VALUES(g3, 0, 7, -7);
    gad_release(g1);
    gad_release(g2);
    gad_release(g3);
    /* Inside a scope, the scope owns them. */
    cp = gad_load(path);
    gad_scope_begin();
    for (int k = 0; k < 10; k++) CHECK(gad_checkpoint_get(cp, "alpha") != NULL);
    gad_scope_end();
    gad_checkpoint_free(cp);
    CHECK_OK();
    CHECK_NO_LEAK();
}

/* gad_load keeps the file open and gad_checkpoint_get reads each tensor
 * from it: a file replaced since (gad_save renames a new file over the
 * path) leaves the checkpoint as it was; a file cut short in place makes
 * the get an io error, never a crash or stale memory. */
TEST(checkpoint_reads_the_file_it_opened) {
    mem_mark();
    int64_t s4[1] = {4};
    char path[256];
    tpath(path, sizeof path, "lazy.safetensors");
    gad_tensor *a = gad_from_f64((const double[]){1, 2, 3, 4}, s4, 1);
    gad_tensor *b = gad_from_f64((const double[]){-1, -2, -3, -4}, s4, 1);
    const char *names[2] = {"a", "b"};
    gad_tensor *ts[2] = {a, b};
    CHECK(gad_save(path, names, ts, 2) == GAD_OK);
    gad_checkpoint *cp = gad_load(path);
    CHECK(cp != NULL);
    /* replaced: the open checkpoint still reads the file it opened */
    gad_tensor *ts2[2] = {b, a};
    CHECK(gad_save(path, names, ts2, 2) == GAD_OK);
    gad_scope_begin();
    CHECK_VALUES(gad_checkpoint_get(cp, "a"), 0, 1, 2, 3, 4);
    CHECK_VALUES(gad_checkpoint_get(cp, "b"), 0, -1, -2, -3, -4);
    gad_scope_end();
    gad_checkpoint_free(cp);
    /* emptied in place after the load */
    cp = gad_load(path);
    CHECK(cp != NULL);
    CHECK(truncate(path, 0) == 0);
    gad_scope_begin();
    CHECK(cp && gad_checkpoint_get(cp, "a") == NULL);
    CHECK_ERR_MSG(GAD_ERR_IO, "checkpoint_get", "'a'");
    CHECK(cp && gad_checkpoint_get(cp, "b") == NULL);
    CHECK_ERR_MSG(GAD_ERR_IO, "checkpoint_get", "ended early");
    gad_scope_end();
    gad_checkpoint_free(cp);
    gad_release(a);
    gad_release(b);
    CHECK_OK();
    CHECK_NO_LEAK();
}

/* ------------------------------------------------------------ save errors */

TEST(save_rejects_bad_arguments) {
    mem_mark();
    gad_tensor *t = gad_scalar_f32(1);
    char path[256];
    tpath(path, sizeof path, "never.safetensors");
    struct {
        const char *what;
        const char *n0, *n1;
        int null_tensor;
        const char *needle;
    } cases[] = {
        {"NULL name", NULL, "b", 0, "is NULL"},
        {"duplicate", "a", "a", 0, "duplicate name 'a'"},
        {"duplicate empty names", "", "", 0, "duplicate name ''"},
        {"invalid UTF-8", "\xff\xfe", "b", 0, "UTF-8"},
        {"overlong UTF-8", "\xc0\xaf", "b", 0, "UTF-8"},
        {"truncated UTF-8", "ab\xe2\x82", "b", 0, "UTF-8"},
        {"UTF-16 surrogate in UTF-8", "\xed\xa0\x80", "b", 0, "UTF-8"},
        {"reserved", "__metadata__", "b", 0, "reserved"},
        {"NULL tensor", "a", "b", 1, "'b' is NULL"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *names[2] = {cases[k].n0, cases[k].n1};
        gad_tensor *ts[2] = {t, cases[k].null_tensor ? NULL : t};
        gad_status st = gad_save(path, names, ts, 2);
        CHECK_MSG(st == GAD_ERR_DOMAIN, "%s: status %s", cases[k].what,
                  gad_status_str(st));
        CHECK_ERR_MSG(GAD_ERR_DOMAIN, "save", cases[k].needle);
    }
    const char *one[1] = {"a"};
    gad_tensor *tt[1] = {t};
    CHECK(gad_save(NULL, one, tt, 1) == GAD_ERR_DOMAIN);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "save", NULL);
    CHECK(gad_save("", one, tt, 1) == GAD_ERR_DOMAIN);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "save", NULL);
    CHECK(gad_save(path, one, tt, -1) == GAD_ERR_DOMAIN);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "save", NULL);
    CHECK(gad_save(path, NULL, tt, 1) == GAD_ERR_DOMAIN);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "save", NULL);
    CHECK(gad_save(path, one, NULL, 1) == GAD_ERR_DOMAIN);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "save", NULL);
    CHECK(access(path, F_OK) != 0); /* nothing was written */
    CHECK(count_tmp_files(tmpdir) == 0);
    gad_release(t);
    CHECK_NO_LEAK();
}

/* ------------------------------------------------------- overwriting */

TEST(overwrite_keeps_only_the_new_content) {
    mem_mark();
    gad_scope_begin();
    char path[256];
    tpath(path, sizeof path, "over.safetensors");
    int64_t big[1] = {1000}, two[1] = {2};
    const char *na[3] = {"x", "y", "z"};
    gad_tensor *ta[3] = {make_tensor(GAD_F32, big, 1, 1),
                         make_tensor(GAD_F64, big, 1, 2),
                         make_tensor(GAD_I64, two, 1, 3)};
    CHECK(gad_save(path, na, ta, 3) == GAD_OK);
    chmod(path, 0640);
    const char *nb[1] = {"only"};
    gad_tensor *tb[1] = {gad_from_f32((const float[]){4, 5}, two, 1)};
    CHECK(gad_save(path, nb, tb, 1) == GAD_OK);
    gad_checkpoint *cp = gad_load(path);
    CHECK(cp && gad_checkpoint_count(cp) == 1);
    CHECK_VALUES(gad_checkpoint_get(cp, "only"), 0, 4, 5);
    CHECK(gad_checkpoint_get(cp, "x") == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "checkpoint_get", NULL);
    gad_checkpoint_free(cp);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    /* 8 + a header padded to 8 + 8 data bytes, nothing of the old file */
    CHECK(st.st_size % 8 == 0 && st.st_size < 120);
    CHECK((st.st_mode & 0777) == 0640); /* the permissions are kept */
    CHECK(count_tmp_files(tmpdir) == 0);
    gad_scope_end();
    CHECK_OK();
    CHECK_NO_LEAK();
}

/* ------------------------------------------------ failed saves (atomicity) */

TEST(failed_saves_leave_the_old_file_and_no_temporary) {
    mem_mark();
    gad_scope_begin();
    int64_t s1[1] = {3};
    const char *names[1] = {"w"};
    gad_tensor *old_t[1] = {gad_from_f32((const float[]){1, 2, 3}, s1, 1)};
    char path[256], dir[256];

    /* A directory that does not exist. */
    tpath(path, sizeof path, "no_such_dir/x.safetensors");
    CHECK(gad_save(path, names, old_t, 1) == GAD_ERR_IO);
    CHECK_ERR_MSG(GAD_ERR_IO, "save", "no_such_dir/x.safetensors");
    CHECK(gad_save(path, names, old_t, 1) == GAD_ERR_IO);
    CHECK_ERR_MSG(GAD_ERR_IO, "save", strerror(ENOENT));

    /* A path that is a directory: the temporary file is written, the rename
     * fails, and the temporary file must be removed. */
    tpath(dir, sizeof dir, "isdir");
    CHECK(mkdir(dir, 0755) == 0);
    CHECK(gad_save(dir, names, old_t, 1) == GAD_ERR_IO);
    CHECK_ERR_MSG(GAD_ERR_IO, "save", "isdir");
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(count_tmp_files(tmpdir) == 0);

    /* A write that fails half-way (the file size limit, as a full disk
     * would): the old file is intact. */
    tpath(path, sizeof path, "limited.safetensors");
    CHECK(gad_save(path, names, old_t, 1) == GAD_OK);
    size_t old_len = 0;
    unsigned char *old_bytes = read_file(path, &old_len);
    int64_t sbig[1] = {100000};
    gad_tensor *big_t[1] = {make_tensor(GAD_F32, sbig, 1, 5)};
    struct rlimit saved;
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    if (saved.rlim_max == RLIM_INFINITY || saved.rlim_max >= 8192) {
        struct rlimit lim = saved;
        lim.rlim_cur = 8192;
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
        gad_status st2 = gad_save(path, names, big_t, 1);
        setrlimit(RLIMIT_FSIZE, &saved);
        signal(SIGXFSZ, prev);
        CHECK(st2 == GAD_ERR_IO);
        CHECK_ERR_MSG(GAD_ERR_IO, "save", strerror(EFBIG));
        CHECK(same_file(path, old_bytes, old_len));
        CHECK(count_tmp_files(tmpdir) == 0);
    } else
        printf("     (hard RLIMIT_FSIZE below 8 KiB: the failed-write case "
               "is skipped)\n");

    /* A read-only directory (root ignores permissions, so only as a user). */
    tpath(dir, sizeof dir, "readonly");
    CHECK(mkdir(dir, 0755) == 0);
    tpath(path, sizeof path, "readonly/x.safetensors");
    CHECK(gad_save(path, names, old_t, 1) == GAD_OK);
    if (geteuid() != 0) {
        CHECK(chmod(dir, 0555) == 0);
        CHECK(gad_save(path, names, big_t, 1) == GAD_ERR_IO);
        CHECK_ERR_MSG(GAD_ERR_IO, "save", "readonly/x.safetensors");
        chmod(dir, 0755);
        CHECK(same_file(path, old_bytes, old_len));
        CHECK(count_tmp_files(dir) == 0);
    } else
        printf("     (running as root, which ignores directory permissions: "
               "the read-only directory case is skipped; the failed write "
               "above covers it)\n");
    free(old_bytes);
    gad_scope_end();
    CHECK_NO_LEAK();
}

/* ---------------------------------- saving onto what is not a regular file */

/* gad_save(path) and gad_params_save(path) each fail with an io error whose
 * message names path and `kind`; what is at path is still `mode_type`, and
 * no temporary file is left in dir. */
static void check_save_refused(const char *path, const char *kind, mode_t mode_type,
                               const char *dir) {
    int64_t s1[1] = {2};
    const char *names[1] = {"w"};
    gad_scope_begin();
    gad_tensor *ts[1] = {gad_from_f32((const float[]){1, 2}, s1, 1)};
    CHECK_MSG(gad_save(path, names, ts, 1) == GAD_ERR_IO, "%s: saved", path);
    CHECK_ERR_MSG(GAD_ERR_IO, "save", path);
    CHECK(gad_save(path, names, ts, 1) == GAD_ERR_IO);
    CHECK_ERR_MSG(GAD_ERR_IO, "save", kind);
    gad_params *ps = gad_params_new();
    CHECK(gad_params_add(ps, "w", ts[0]) != NULL);
    CHECK(gad_params_save(ps, path) == GAD_ERR_IO);
    CHECK_ERR_MSG(GAD_ERR_IO, "save", kind);
    gad_params_free(ps);
    gad_scope_end();
    struct stat st;
    CHECK_MSG(lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == mode_type,
              "%s was replaced", path);
    CHECK(count_tmp_files(dir) == 0);
}

/* Save {"v": [v, v]} to path; 1 on success. */
static int save_value(const char *path, float v) {
    int64_t s1[1] = {2};
    const char *names[1] = {"v"};
    gad_scope_begin();
    gad_tensor *ts[1] = {gad_from_f32((const float[]){v, v}, s1, 1)};
    gad_status st = gad_save(path, names, ts, 1);
    CHECK_MSG(st == GAD_OK, "save %s: %s", path,
              gad_last_error() ? gad_last_error()->text : "");
    gad_scope_end();
    gad_clear_error();
    return st == GAD_OK;
}

/* Save {"v": [0, 0]} to path, leaving the error pending; 1 on success. */
static int save_value_quiet(const char *path) {
    int64_t s1[1] = {2};
    const char *names[1] = {"v"};
    gad_scope_begin();
    gad_tensor *ts[1] = {gad_from_f32((const float[]){0, 0}, s1, 1)};
    gad_status st = gad_save(path, names, ts, 1);
    gad_scope_end();
    return st == GAD_OK;
}

/* 1 if path loads as {"v": [v, v]}. */
static int holds_value(const char *path, float v) {
    gad_scope_begin();
    gad_checkpoint *cp = gad_load(path);
    gad_tensor *t = cp ? gad_checkpoint_get(cp, "v") : NULL;
    int ok = t && gad_numel(t) == 2 && ((const float *)gad_data(t))[0] == v;
    gad_checkpoint_free(cp);
    gad_scope_end();
    gad_clear_error();
    return ok;
}

static int is_link(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

TEST(save_never_replaces_what_is_not_a_regular_file) {
    mem_mark();
    char dir[100], sub[160], p[256], q[256], r[256];
    tpath(dir, sizeof dir, "special");
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    CHECK(mkdir(sub, 0755) == 0);

    /* A FIFO: refused without being opened (opening would wait). */
    snprintf(p, sizeof p, "%s/fifo.safetensors", dir);
    CHECK(mkfifo(p, 0600) == 0);
    check_save_refused(p, "FIFO", S_IFIFO, dir);

    /* A UNIX socket. */
    snprintf(p, sizeof p, "%s/sock", dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (s >= 0 && strlen(p) < sizeof a.sun_path) {
        memcpy(a.sun_path, p, strlen(p));
        CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
        check_save_refused(p, "socket", S_IFSOCK, dir);
    }
    if (s >= 0) close(s);

    /* A directory, and a link to one. */
    check_save_refused(sub, "directory", S_IFDIR, dir);
    snprintf(p, sizeof p, "%s/to_dir", dir);
    CHECK(symlink("sub", p) == 0);
    check_save_refused(p, "directory", S_IFLNK, dir);

    /* A character device made here (a copy of /dev/null's numbers); mknod
     * needs root (CAP_MKNOD). */
    snprintf(p, sizeof p, "%s/null_dev", dir);
    if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        check_save_refused(p, "character device", S_IFCHR, dir);
        /* and a link to it: the device behind the link stays too */
        snprintf(q, sizeof q, "%s/to_dev", dir);
        CHECK(symlink("null_dev", q) == 0);
        check_save_refused(q, "character device", S_IFLNK, dir);
        struct stat st;
        CHECK(lstat(p, &st) == 0 && S_ISCHR(st.st_mode));
    } else
        printf("     (mknod of a character device failed, %s: needs root; the "
               "device case is skipped)\n", strerror(errno));

    /* A loop of links: an io error, both links kept. */
    snprintf(p, sizeof p, "%s/loop_a", dir);
    snprintf(q, sizeof q, "%s/loop_b", dir);
    CHECK(symlink("loop_b", p) == 0 && symlink("loop_a", q) == 0);
    check_save_refused(p, strerror(ELOOP), S_IFLNK, dir);
    CHECK(is_link(q));
    /* a link to itself */
    snprintf(p, sizeof p, "%s/self", dir);
    CHECK(symlink("self", p) == 0);
    check_save_refused(p, strerror(ELOOP), S_IFLNK, dir);

    /* A link is written through: its target is replaced, in its own
     * folder, with its permissions; the link stays. The target is
     * relative to the link's folder, not to the working directory. */
    snprintf(r, sizeof r, "%s/real.safetensors", sub);
    CHECK(save_value(r, 1));
    CHECK(chmod(r, 0640) == 0);
    snprintf(p, sizeof p, "%s/link.safetensors", sub);
    CHECK(symlink("real.safetensors", p) == 0);
    CHECK(save_value(p, 2));
    CHECK(is_link(p));
    CHECK(holds_value(r, 2));
    struct stat st;
    CHECK(lstat(r, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0640);
    CHECK(count_tmp_files(sub) == 0 && count_tmp_files(dir) == 0);
    /* a chain of two links, one relative across folders, one absolute */
    snprintf(q, sizeof q, "%s/chain", dir);
    CHECK(symlink("sub/link.safetensors", q) == 0);
    CHECK(save_value(q, 3));
    CHECK(is_link(q) && is_link(p) && holds_value(r, 3));
    snprintf(q, sizeof q, "%s/abs", dir);
    CHECK(symlink(r, q) == 0);
    CHECK(save_value(q, 4));
    CHECK(is_link(q) && holds_value(r, 4));

    /* A dangling link: its target is created, the link stays. */
    snprintf(p, sizeof p, "%s/dangling", dir);
    CHECK(symlink("sub/new.safetensors", p) == 0);
    CHECK(save_value(p, 5));
    snprintf(r, sizeof r, "%s/new.safetensors", sub);
    CHECK(is_link(p) && holds_value(r, 5) && holds_value(p, 5));
    /* a dangling link into a folder that does not exist: an io error */
    snprintf(p, sizeof p, "%s/dangling_far", dir);
    CHECK(symlink("no_such_dir/x.safetensors", p) == 0);
    CHECK(!save_value_quiet(p));
    CHECK_ERR_MSG(GAD_ERR_IO, "save", strerror(ENOENT));
    CHECK(is_link(p));

    /* A link into a folder the user cannot write: an io error, the target
     * unchanged (root ignores permissions, so only as a user). */
    if (geteuid() != 0) {
        snprintf(r, sizeof r, "%s/real.safetensors", sub);
        snprintf(p, sizeof p, "%s/ro_link", dir);
        CHECK(symlink("sub/real.safetensors", p) == 0);
        CHECK(chmod(sub, 0555) == 0);
        CHECK(!save_value_quiet(p));
        CHECK_ERR_MSG(GAD_ERR_IO, "save", strerror(EACCES));
        CHECK(chmod(sub, 0755) == 0);
        CHECK(is_link(p) && holds_value(r, 4));
    } else
        printf("     (running as root, which ignores folder permissions: the "
               "unwritable target folder case is skipped)\n");
    CHECK(count_tmp_files(sub) == 0 && count_tmp_files(dir) == 0);
    test_remove_tree(dir, 1);
    CHECK_OK();
    CHECK_NO_LEAK();
}

/* -------------------------------------------------------- load I/O errors */

TEST(load_io_errors) {
    mem_mark();
    char path[256];
    CHECK(gad_load(tpath(path, sizeof path, "missing.safetensors")) == NULL);
    CHECK_ERR_MSG(GAD_ERR_IO, "load", strerror(ENOENT));
    CHECK(gad_load(tmpdir) == NULL);
    CHECK_ERR_MSG(GAD_ERR_IO, "load", NULL);
    CHECK(gad_load(NULL) == NULL);
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "load", NULL);
    CHECK_NO_LEAK();
}

/* ------------------------------------------ special files, memory bounds */

/* The sanitizers reserve terabytes of address space (an RLIMIT_AS would
 * break them) and inflate the resident set: the limits below are only
 * checked without them (TEST_SANITIZED, test.h). */

/* This process's address space and resident set, in bytes (0 if unknown). */
static uint64_t vm_bytes(int resident) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &rss) != 2) size = rss = 0;
        fclose(f);
    }
    return (resident ? rss : size) * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Run fn in a child process that has `secs` seconds (SIGALRM ends it) and,
 * when extra_mb > 0 and no sanitizer runs, an address-space limit of
 * extra_mb MiB above what it already maps. Its failed checks fail this
 * test. */
static void in_child(const char *what, void (*fn)(void), unsigned secs, uint64_t extra_mb) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0) return;
    if (pid == 0) {
        if (extra_mb && !TEST_SANITIZED) {
            uint64_t lim = vm_bytes(0) + (extra_mb << 20);
            struct rlimit rl = {(rlim_t)lim, (rlim_t)lim};
            if (setrlimit(RLIMIT_AS, &rl) != 0) perror("setrlimit");
        }
        alarm(secs);
        int before = test_failures_;
        fn();
        fflush(stdout);
        fflush(stderr);
        _exit(test_failures_ != before ? 1 : 0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s: the child %s %d%s", what,
              WIFSIGNALED(status) ? "died of signal" : "exited with",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
              WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
                  ? " (SIGALRM: it blocked or ran too long)" : "");
}

/* gad_load(path) fails fast with an io error whose message names the path
 * and contains `kind`. */
static void check_refused(const char *path, const char *kind) {
    CHECK(gad_load(path) == NULL);
    const gad_error *e = gad_last_error();
    CHECK_MSG(e && e->kind == GAD_ERR_IO && strcmp(e->op, "load") == 0 &&
                  strstr(e->message, path) && strstr(e->message, kind),
              "%s: expected an io error naming it and '%s', got %s", path, kind,
              e ? e->text : "no error");
    gad_clear_error();
}

static void load_fifo_body(void) {
    char path[256];
    tpath(path, sizeof path, "fifo.safetensors");
    unlink(path);
    CHECK(mkfifo(path, 0600) == 0);
    check_refused(path, "FIFO"); /* open(2) of a FIFO waits for a writer */
    unlink(path);
}

static void load_socket_body(void) {
    char path[256];
    tpath(path, sizeof path, "sock.safetensors");
    unlink(path);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    CHECK(strlen(path) < sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) < sizeof a.sun_path ? strlen(path) : 0);
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 1) == 0);
    check_refused(path, "socket");
    if (s >= 0) close(s);
    unlink(path);
}

static void load_dir_dev_proc_body(void) {
    check_refused(tmpdir, "directory");
    check_refused("/dev/null", "device");
    /* a /proc file: regular, its size 0, its content not a checkpoint */
    if (access("/proc/self/status", R_OK) == 0) {
        CHECK(gad_load("/proc/self/status") == NULL);
        const gad_error *e = gad_last_error();
        CHECK_MSG(e && (e->kind == GAD_ERR_FORMAT || e->kind == GAD_ERR_IO) &&
                      strcmp(e->op, "load") == 0,
                  "/proc/self/status: %s", e ? e->text : "loaded");
        gad_clear_error();
    }
}

TEST(load_refuses_special_files) {
    mem_mark();
    in_child("a FIFO", load_fifo_body, 10, 256);
    in_child("a UNIX socket", load_socket_body, 10, 256);
    in_child("a directory, /dev/null, /proc", load_dir_dev_proc_body, 10, 256);
    CHECK_NO_LEAK();
}

/* A sparse file whose valid header claims one F32 tensor of 2^k elements,
 * the file as long as the claim (nothing but the header is on disk). */
static int make_sparse(const char *path, int k) {
    char json[160];
    uint64_t n = UINT64_C(1) << k, bytes = n * 4;
    int len = snprintf(json, sizeof json,
                       "{\"big\":{\"dtype\":\"F32\",\"shape\":[%llu],"
                       "\"data_offsets\":[0,%llu]}}",
                       (unsigned long long)n, (unsigned long long)bytes);
    unsigned char len8[8];
    for (int b = 0; b < 8; b++) len8[b] = (unsigned char)((uint64_t)len >> (8 * b));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    int ok = write(fd, len8, 8) == 8 && write(fd, json, (size_t)len) == len &&
             ftruncate(fd, (off_t)(8 + (uint64_t)len + bytes)) == 0;
    return close(fd) == 0 && ok ? 0 : -1;
}

static void load_sparse_body(void) {
    char path[256];
    tpath(path, sizeof path, "sparse_big.safetensors");
    /* 2^31 elements, 8 GiB: far past the limit. The load reads the header
     * only; the tensor cannot be made, a memory error. */
    CHECK(make_sparse(path, 31) == 0);
    uint64_t rss0 = vm_bytes(1);
    gad_checkpoint *cp = gad_load(path);
    CHECK_MSG(cp != NULL, "%s", gad_last_error() ? gad_last_error()->text : "");
    CHECK(vm_bytes(1) < rss0 + (16u << 20));
    if (cp && !TEST_SANITIZED) {
        CHECK(gad_checkpoint_get(cp, "big") == NULL);
        CHECK_ERR_MSG(GAD_ERR_MEMORY, "checkpoint_get", "'big'");
    }
    gad_checkpoint_free(cp);
    gad_clear_error();
    /* 2^24 elements, 64 MiB: within the limit, all zeros */
    CHECK(make_sparse(path, 24) == 0);
    cp = gad_load(path);
    CHECK(cp != NULL);
    gad_scope_begin();
    gad_tensor *t = cp ? gad_checkpoint_get(cp, "big") : NULL;
    CHECK(t && gad_numel(t) == INT64_C(1) << 24);
    if (t) {
        const float *p = gad_data(t);
        int zero = p != NULL;
        for (int64_t i = 0; zero && i < gad_numel(t); i += 4093) zero = p[i] == 0;
        CHECK(zero);
    }
    gad_scope_end();
    gad_checkpoint_free(cp);
    gad_clear_error();
    unlink(path);
}

/* A file of one F32 tensor "w" of n elements, w[i] = i % 1000, written in
 * pieces (the writer holds 1 MiB). */
static int make_big(const char *path, uint64_t n) {
    char json[160];
    int len = snprintf(json, sizeof json,
                       "{\"w\":{\"dtype\":\"F32\",\"shape\":[%llu],"
                       "\"data_offsets\":[0,%llu]}}",
                       (unsigned long long)n, (unsigned long long)(n * 4));
    unsigned char len8[8];
    for (int b = 0; b < 8; b++) len8[b] = (unsigned char)((uint64_t)len >> (8 * b));
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(json, 1, (size_t)len, f) == (size_t)len;
    enum { PIECE = 1 << 18 };
    float *buf = malloc(PIECE * sizeof *buf);
    ok = ok && buf;
    for (uint64_t i = 0; ok && i < n; i += PIECE) {
        size_t k = n - i < PIECE ? (size_t)(n - i) : PIECE;
        for (size_t j = 0; j < k; j++) buf[j] = (float)((i + j) % 1000);
        ok = fwrite(buf, sizeof *buf, k, f) == k;
    }
    free(buf);
    return fclose(f) == 0 && ok ? 0 : -1;
}

#define BIG_N (UINT64_C(1) << 26) /* 256 MiB of f32 */

static void load_rss_body(void) {
    char path[256];
    tpath(path, sizeof path, "big.safetensors");
    uint64_t file = 8 + BIG_N * 4; /* and the header */
    uint64_t rss0 = vm_bytes(1);
    gad_checkpoint *cp = gad_load(path);
    CHECK_MSG(cp != NULL, "%s", gad_last_error() ? gad_last_error()->text : "");
    gad_tensor *t = cp ? gad_checkpoint_get(cp, "w") : NULL;
    CHECK(t && (uint64_t)gad_numel(t) == BIG_N);
    if (t) {
        const float *p = gad_data(t);
        CHECK(p && p[0] == 0 && p[999] == 999 && p[1000] == 0 &&
              p[BIG_N - 1] == (float)((BIG_N - 1) % 1000));
    }
    struct rusage ru;
    CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
    uint64_t peak = (uint64_t)ru.ru_maxrss * 1024;
    printf("     (a %.0f MiB checkpoint: the resident set grew by at most %.0f MiB)\n",
           (double)file / (1 << 20), (double)(peak - rss0) / (1 << 20));
    if (!TEST_SANITIZED)
        CHECK_MSG(peak - rss0 < file + file * 3 / 10,
                  "loading %llu bytes took %llu bytes of resident set",
                  (unsigned long long)file, (unsigned long long)(peak - rss0));
    gad_release(t);
    gad_checkpoint_free(cp);
}

TEST(load_memory_is_bounded) {
    mem_mark();
    in_child("a sparse file claiming 8 GiB", load_sparse_body, 60, 384);
    char path[256];
    tpath(path, sizeof path, "big.safetensors");
    CHECK(make_big(path, BIG_N) == 0);
    in_child("a 256 MiB checkpoint", load_rss_body, 120, 0);
    unlink(path);
    CHECK_NO_LEAK();
}

/* ------------------------------------------------------- malformed files */

/* Write 8-byte length + json (jlen bytes; the length field says hlen) +
 * data, load it, and return the status (GAD_OK if it loaded; the error is
 * left pending otherwise). */
static gad_status load_raw(uint64_t hlen, const char *json, size_t jlen,
                           const void *data, size_t dlen) {
    size_t n = 8 + jlen + dlen;
    unsigned char *buf = calloc(n, 1);
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(hlen >> (8 * k));
    memcpy(buf + 8, json, jlen);
    if (dlen) {
        if (data) memcpy(buf + 8 + jlen, data, dlen);
        else
            for (size_t k = 0; k < dlen; k++) buf[8 + jlen + k] = (unsigned char)k;
    }
    char path[256];
    tpath(path, sizeof path, "raw.safetensors");
    write_file(path, buf, n);
    free(buf);
    gad_checkpoint *cp = gad_load(path);
    if (cp) {
        gad_checkpoint_free(cp);
        return GAD_OK;
    }
    const gad_error *e = gad_last_error();
    return e ? e->kind : GAD_OK;
}

static gad_status load_json(const char *json, size_t jlen, size_t dlen) {
    return load_raw(jlen, json, jlen, NULL, dlen);
}

#define T2 "\"dtype\":\"F32\",\"shape\":[2]"
#define E(name, body) "\"" name "\":{" body "}"

typedef struct bad_case {
    const char *what;
    const char *json;
    size_t jlen; /* 0: strlen(json) */
    size_t dlen; /* data bytes after the header */
    gad_status kind;
    const char *needle; /* in the message (NULL: not checked) */
} bad_case;

static const bad_case bad_cases[] = {
    /* not JSON, or not an object */
    {"not JSON", "hello", 0, 0, GAD_ERR_FORMAT, "not a JSON object"},
    {"array", "[1,2]", 0, 0, GAD_ERR_FORMAT, "not a JSON object"},
    {"string", "\"a\"", 0, 0, GAD_ERR_FORMAT, "not a JSON object"},
    {"number", "12", 0, 0, GAD_ERR_FORMAT, "not a JSON object"},
    {"leading space", " {}", 0, 0, GAD_ERR_FORMAT, "not a JSON object"},
    {"unterminated object", "{", 0, 0, GAD_ERR_FORMAT, NULL},
    {"unterminated entry", "{\"a\":{\"dtype\":\"F32\"", 0, 0, GAD_ERR_FORMAT, NULL},
    {"unterminated string", "{\"a", 0, 0, GAD_ERR_FORMAT, "unterminated"},
    {"missing colon", "{\"a\" {}}", 0, 0, GAD_ERR_FORMAT, "':'"},
    {"unquoted key", "{a:{}}", 0, 0, GAD_ERR_FORMAT, NULL},
    {"single quotes", "{'a':{}}", 0, 0, GAD_ERR_FORMAT, NULL},
    {"trailing comma", "{" E("a", T2 ",\"data_offsets\":[0,8]") ",}", 0, 8,
     GAD_ERR_FORMAT, NULL},
    {"trailing comma in shape",
     "{" E("a", "\"dtype\":\"F32\",\"shape\":[2,],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, NULL},
    {"trailing garbage", "{} x", 0, 0, GAD_ERR_FORMAT, "after the header"},
    {"two objects", "{}{}", 0, 0, GAD_ERR_FORMAT, "after the header"},
    {"NUL padding", "{}\0\0\0\0\0\0", 8, 0, GAD_ERR_FORMAT, "after the header"},
    /* wrong types */
    {"entry is a number", "{\"a\":1}", 0, 0, GAD_ERR_FORMAT, "tensor 'a'"},
    {"entry is an array", "{\"a\":[]}", 0, 0, GAD_ERR_FORMAT, "tensor 'a'"},
    {"entry is a string", "{\"a\":\"F32\"}", 0, 0, GAD_ERR_FORMAT, "tensor 'a'"},
    {"entry is null", "{\"a\":null}", 0, 0, GAD_ERR_FORMAT, "tensor 'a'"},
    {"dtype is a number",
     "{" E("a", "\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]") "}", 0, 8,
     GAD_ERR_FORMAT, "dtype"},
    {"dtype is true",
     "{" E("a", "\"dtype\":true,\"shape\":[2],\"data_offsets\":[0,8]") "}", 0,
     8, GAD_ERR_FORMAT, "dtype"},
    {"shape is null", "{" E("a", "\"dtype\":\"F32\",\"shape\":null,\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "tensor 'a'"},
    {"shape is a number", "{" E("a", "\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "shape"},
    {"dim is a string", "{" E("a", "\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "integer"},
    {"dim is null", "{" E("a", "\"dtype\":\"F32\",\"shape\":[null],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "integer"},
    {"offsets is a string", "{" E("a", T2 ",\"data_offsets\":\"0,8\"") "}", 0,
     8, GAD_ERR_FORMAT, "data_offsets"},
    /* missing fields */
    {"empty entry", "{\"a\":{}}", 0, 0, GAD_ERR_FORMAT, "missing \"dtype\""},
    {"missing dtype", "{" E("a", "\"shape\":[2],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "missing \"dtype\""},
    {"missing shape", "{" E("a", "\"dtype\":\"F32\",\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "missing \"shape\""},
    {"missing data_offsets", "{" E("a", T2) "}", 0, 8, GAD_ERR_FORMAT,
     "missing \"data_offsets\""},
    {"duplicate field",
     "{" E("a", "\"dtype\":\"F32\"," T2 ",\"data_offsets\":[0,8]") "}", 0, 8,
     GAD_ERR_FORMAT, "duplicate field \"dtype\""},
    /* dtypes */
    {"unknown dtype", "{" E("a", "\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "unknown dtype \"F33\""},
    {"lower-case dtype", "{" E("a", "\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "unknown dtype"},
    /* issue 29: F16, BF16, I32, U8, I8, I16, U16, U32, U64 and FP8 load
     * (test_safetensors.c); these do not */
    {"F8_E8M0 (valid file, unsupported dtype)",
     "{" E("h", "\"dtype\":\"F8_E8M0\",\"shape\":[2],\"data_offsets\":[0,2]") "}",
     0, 2, GAD_ERR_UNSUPPORTED, "tensor 'h' has dtype F8_E8M0"},
    {"C64", "{" E("a", "\"dtype\":\"C64\",\"shape\":[2],\"data_offsets\":[0,16]") "}",
     0, 16, GAD_ERR_UNSUPPORTED, "C64"},
    {"F4", "{" E("a", "\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]") "}",
     0, 1, GAD_ERR_UNSUPPORTED, "F4"},
    {"F16 with a bad size is malformed first",
     "{" E("a", "\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "needs 4"},
    /* shapes */
    {"negative dim", "{" E("a", "\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "negative dim"},
    {"fractional dim", "{" E("a", "\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "not an integer"},
    {"integral float dim", "{" E("a", "\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "not an integer"},
    {"exponent dim", "{" E("a", "\"dtype\":\"F32\",\"shape\":[2e0],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "not an integer"},
    {"leading zero", "{" E("a", "\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "leading zero"},
    {"minus alone", "{" E("a", "\"dtype\":\"F32\",\"shape\":[-],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "integer"},
    {"plus sign", "{" E("a", "\"dtype\":\"F32\",\"shape\":[+2],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "integer"},
    {"dim of 2^64", "{" E("a", "\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "too large"},
    {"dim of 2^63", "{" E("a", "\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "too large"},
    {"dims overflow", "{" E("a", "\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "too many elements"},
    {"bytes overflow", "{" E("a", "\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "too many elements"},
    /* fuzz_load finding: an empty tensor whose other dims overflow (NumPy's
     * rule, as gad's constructors: the nonzero dims must fit). */
    {"empty but dims overflow", "{" E("a", "\"dtype\":\"F32\",\"shape\":[0,9223372036854775807,4],\"data_offsets\":[0,0]") "}",
     0, 0, GAD_ERR_FORMAT, "too many elements"},
    {"empty, nonzero dims at the limit", "{" E("a", "\"dtype\":\"F32\",\"shape\":[0,1152921504606846976],\"data_offsets\":[0,0]") "}",
     0, 0, GAD_ERR_FORMAT, "too many elements"},
    {"rank 9 (valid file, unsupported rank)",
     "{" E("a", "\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]") "}",
     0, 4, GAD_ERR_UNSUPPORTED, "rank 9"},
    /* offsets */
    {"one offset", "{" E("a", T2 ",\"data_offsets\":[0]") "}", 0, 8,
     GAD_ERR_FORMAT, "data_offsets"},
    {"three offsets", "{" E("a", T2 ",\"data_offsets\":[0,8,8]") "}", 0, 8,
     GAD_ERR_FORMAT, "data_offsets"},
    {"no offsets", "{" E("a", T2 ",\"data_offsets\":[]") "}", 0, 8,
     GAD_ERR_FORMAT, NULL},
    {"negative offset", "{" E("a", T2 ",\"data_offsets\":[-8,0]") "}", 0, 8,
     GAD_ERR_FORMAT, "negative offset"},
    {"fractional offset", "{" E("a", T2 ",\"data_offsets\":[0,8.5]") "}", 0, 8,
     GAD_ERR_FORMAT, "not an integer"},
    {"end before begin", "{" E("a", T2 ",\"data_offsets\":[8,0]") "}", 0, 8,
     GAD_ERR_FORMAT, "end before"},
    {"out of range", "{" E("a", "\"dtype\":\"F32\",\"shape\":[100],\"data_offsets\":[0,400]") "}",
     0, 8, GAD_ERR_FORMAT, "past the end"},
    {"huge offsets", "{" E("a", T2 ",\"data_offsets\":[18446744073709551607,18446744073709551615]") "}",
     0, 8, GAD_ERR_FORMAT, "past the end"},
    {"size larger than the shape", "{" E("a", T2 ",\"data_offsets\":[0,12]") "}",
     0, 12, GAD_ERR_FORMAT, "hold 12 bytes"},
    {"size smaller than the shape",
     "{" E("a", "\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]") "}",
     0, 8, GAD_ERR_FORMAT, "needs 12"},
    {"gap", "{" E("a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]") ","
     E("b", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]") "}",
     0, 12, GAD_ERR_FORMAT, "gap of 4 bytes before tensor 'b'"},
    {"gap at the start", "{" E("a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]") "}",
     0, 8, GAD_ERR_FORMAT, "gap of 4 bytes before tensor 'a'"},
    {"overlap", "{" E("a", T2 ",\"data_offsets\":[0,8]") ","
     E("b", T2 ",\"data_offsets\":[4,12]") "}", 0, 12, GAD_ERR_FORMAT,
     "overlaps"},
    {"the same bytes twice", "{" E("a", T2 ",\"data_offsets\":[0,8]") ","
     E("b", T2 ",\"data_offsets\":[0,8]") "}", 0, 8, GAD_ERR_FORMAT,
     "overlaps"},
    {"data not covered", "{" E("a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]") "}",
     0, 8, GAD_ERR_FORMAT, "cover 4 of the 8"},
    {"data and no tensors", "{}", 0, 8, GAD_ERR_FORMAT, "cover 0 of the 8"},
    {"duplicate names", "{" E("a", T2 ",\"data_offsets\":[0,8]") ","
     E("a", T2 ",\"data_offsets\":[8,16]") "}", 0, 16, GAD_ERR_FORMAT,
     "duplicate tensor name 'a'"},
    {"duplicate names through an escape",
     "{" E("a", T2 ",\"data_offsets\":[0,8]") "," E("\\u0061", T2 ",\"data_offsets\":[8,16]") "}",
     0, 16, GAD_ERR_FORMAT, "duplicate tensor name 'a'"},
    /* __metadata__ */
    {"metadata is a number", "{\"__metadata__\":1}", 0, 0, GAD_ERR_FORMAT,
     "__metadata__"},
    {"metadata value is a number", "{\"__metadata__\":{\"k\":1}}", 0, 0,
     GAD_ERR_FORMAT, "__metadata__"},
    {"metadata value is an object", "{\"__metadata__\":{\"k\":{}}}", 0, 0,
     GAD_ERR_FORMAT, "__metadata__"},
    {"metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, 0,
     GAD_ERR_FORMAT, "duplicate \"__metadata__\""},
    /* strings */
    {"invalid escape", "{\"a\\x\":{}}", 0, 0, GAD_ERR_FORMAT, "invalid escape"},
    {"short \\u", "{\"a\\u12\":{}}", 0, 0, GAD_ERR_FORMAT, "hex"},
    {"bad hex in \\u", "{\"a\\u12G4\":{}}", 0, 0, GAD_ERR_FORMAT, "hex"},
    {"\\u at the end", "{\"\\u", 0, 0, GAD_ERR_FORMAT, NULL},
    {"lone high surrogate", "{\"\\ud800\":{}}", 0, 0, GAD_ERR_FORMAT, "surrogate"},
    {"lone low surrogate", "{\"\\udc00\":{}}", 0, 0, GAD_ERR_FORMAT, "surrogate"},
    {"high surrogate and a letter", "{\"\\ud800\\u0041\":{}}", 0, 0,
     GAD_ERR_FORMAT, "surrogate"},
    {"escaped NUL", "{\"a\\u0000b\":{}}", 0, 0, GAD_ERR_FORMAT, "NUL"},
    {"raw NUL in a name", "{\"a\0b\":{}}", 11, 0, GAD_ERR_FORMAT,
     "control character 0x00"},
    {"raw newline in a name", "{\"a\nb\":{}}", 0, 0, GAD_ERR_FORMAT,
     "control character 0x0a"},
    {"invalid UTF-8", "{\"\xff\":{}}", 0, 0, GAD_ERR_FORMAT, "UTF-8"},
    {"overlong UTF-8", "{\"\xc0\xaf\":{}}", 0, 0, GAD_ERR_FORMAT, "UTF-8"},
    {"surrogate in UTF-8", "{\"\xed\xa0\x80\":{}}", 0, 0, GAD_ERR_FORMAT, "UTF-8"},
    {"beyond U+10FFFF", "{\"\xf4\x90\x80\x80\":{}}", 0, 0, GAD_ERR_FORMAT, "UTF-8"},
    {"truncated UTF-8", "{\"\xe2\x82\":{}}", 0, 0, GAD_ERR_FORMAT, "UTF-8"},
    {"UTF-8 cut by the header end", "{\"\xe2\x82", 0, 0, GAD_ERR_FORMAT, NULL},
    /* values the strict parser refuses */
    {"float in an unknown field", "{" E("a", T2 ",\"data_offsets\":[0,8],\"x\":1.5") "}",
     0, 8, GAD_ERR_FORMAT, "not an integer"},
    {"true in an unknown field", "{" E("a", T2 ",\"data_offsets\":[0,8],\"x\":true") "}",
     0, 8, GAD_ERR_FORMAT, "expected a value"},
    {"bad syntax in an unknown field", "{" E("a", T2 ",\"data_offsets\":[0,8],\"x\":[1 2]") "}",
     0, 8, GAD_ERR_FORMAT, NULL},
};

TEST(malformed_files_table) {
    mem_mark();
    for (size_t k = 0; k < sizeof bad_cases / sizeof bad_cases[0]; k++) {
        const bad_case *c = &bad_cases[k];
        size_t jlen = c->jlen ? c->jlen : strlen(c->json);
        gad_status st = load_json(c->json, jlen, c->dlen);
        const gad_error *e = gad_last_error();
        CHECK_MSG(st == c->kind && e && strcmp(e->op, "load") == 0 &&
                      (!c->needle || strstr(e->message, c->needle)),
                  "%s: expected %s error saying '%s', got %s", c->what,
                  gad_status_str(c->kind), c->needle ? c->needle : "",
                  e ? e->text : "success");
        gad_clear_error();
    }
    CHECK_NO_LEAK();
}

/* A BOOL tensor is bytes 0 and 1; another byte is a format error when the
 * tensor is read, naming the tensor and the file (the header is valid). */
TEST(bool_bytes_other_than_0_and_1_are_refused) {
    mem_mark();
    const char *json = "{" E("m", "\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]") "}";
    char hdr[128];
    size_t jlen = strlen(json);
    memcpy(hdr, json, jlen);
    while (jlen % 8) hdr[jlen++] = ' ';
    unsigned char buf[8 + 128 + 4];
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)((uint64_t)jlen >> (8 * k));
    memcpy(buf + 8, hdr, jlen);
    char path[256];
    tpath(path, sizeof path, "bool.safetensors");
    for (int bad = 0; bad < 2; bad++) {
        const unsigned char data[2][4] = {{0, 1, 1, 0}, {0, 1, 2, 0}};
        memcpy(buf + 8 + jlen, data[bad], 4);
        CHECK(write_file(path, buf, 8 + jlen + 4) == 0);
        gad_checkpoint *cp = gad_load(path);
        CHECK_MSG(cp != NULL, "load: %s", gad_last_error() ? gad_last_error()->text : "");
        gad_scope_begin();
        gad_tensor *t = cp ? gad_checkpoint_get(cp, "m") : NULL;
        if (!bad) {
            uint8_t v[4] = {9, 9, 9, 9};
            CHECK(t && gad_dtype(t) == GAD_BOOL && gad_read_bool(t, v, 4) == GAD_OK &&
                  v[0] == 0 && v[1] == 1 && v[2] == 1 && v[3] == 0);
        } else {
            const gad_error *e = gad_last_error();
            CHECK_MSG(!t && e && e->kind == GAD_ERR_FORMAT && strstr(e->message, "'m'") &&
                          strstr(e->message, "byte 2 at element 2") &&
                          strstr(e->message, "bool.safetensors"),
                      "%s", e ? e->text : "no error");
        }
        gad_clear_error();
        gad_scope_end();
        gad_checkpoint_free(cp);
    }
    CHECK_NO_LEAK();
}

TEST(malformed_header_lengths) {
    mem_mark();
    const char *json = "{}      ";
    /* larger than the file */
    CHECK(load_raw(1000, json, 8, NULL, 2) == GAD_ERR_FORMAT);
    CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", "header length 1000");
    CHECK(load_raw(9, json, 8, NULL, 0) == GAD_ERR_FORMAT);
    CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", "exceeds");
    /* huge: 2^63 and 2^64 - 1 (no overflow in 8 + N) */
    CHECK(load_raw(UINT64_C(1) << 63, json, 8, NULL, 0) == GAD_ERR_FORMAT);
    CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", "9223372036854775808");
    CHECK(load_raw(UINT64_MAX, json, 8, NULL, 0) == GAD_ERR_FORMAT);
    CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", NULL);
    /* zero: no JSON at all */
    CHECK(load_raw(0, "", 0, NULL, 0) == GAD_ERR_FORMAT);
    CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", "not a JSON object");
    /* shorter than 8 bytes */
    char path[256];
    tpath(path, sizeof path, "short.safetensors");
    write_file(path, "\x02\0\0\0", 4);
    CHECK(gad_load(path) == NULL);
    CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", "fewer than the 8");
    /* past the 100 MB limit, in a sparse file that does hold that many
     * bytes: refused before anything is read */
    tpath(path, sizeof path, "sparse.safetensors");
    uint64_t n = 100000001;
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)(n >> (8 * k));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, len8, 8) == 8);
        CHECK(ftruncate(fd, (off_t)(8 + n)) == 0);
        close(fd);
        CHECK(gad_load(path) == NULL);
        CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", "limit");
        unlink(path);
    }
    CHECK_NO_LEAK();
}

/* No byte of s is a control character (C0 or DEL). */
static int printable(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f) return 0;
    return 1;
}

/* Names that load accepts save writes back: control characters (escaped
 * \u00XX in the header), DEL, the empty name. */
TEST(names_with_control_characters_round_trip) {
    mem_mark();
    gad_scope_begin();
    const char *j =
        "{\"esc\\u001b[31mred\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"line\\nbreak\\t\\u0001\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
        "\"del\\u007f\u00e9\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
        "\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}";
    const float v[4] = {1, 2, 3, 4};
    CHECK(load_raw(strlen(j), j, strlen(j), v, 16) == GAD_OK);
    CHECK_OK();
    const char *want[4] = {"esc\x1b[31mred", "line\nbreak\t\x01", "del\x7f\xc3\xa9", ""};
    char path[256], path2[256];
    tpath(path, sizeof path, "raw.safetensors");
    tpath(path2, sizeof path2, "ctrl.safetensors");
    gad_checkpoint *cp = gad_load(path);
    CHECK(cp && gad_checkpoint_count(cp) == 4);
    const char *names[4];
    gad_tensor *ts[4];
    for (int i = 0; cp && i < 4; i++) {
        names[i] = gad_checkpoint_name(cp, i);
        CHECK(names[i] && strcmp(names[i], want[i]) == 0);
        ts[i] = gad_checkpoint_get(cp, want[i]);
        CHECK_VALUES(ts[i], 0, v[i]);
    }
    if (cp) {
        gad_checkpoint *cp2 = round_trip(path2, names, ts, 4);
        gad_checkpoint_free(cp2);
        /* the header escapes every control character as \u00XX */
        size_t len = 0;
        unsigned char *bytes = read_file(path2, &len);
        char *text = bytes ? calloc(len + 1, 1) : NULL;
        if (text) memcpy(text, bytes + 8, len - 8);
        CHECK(text && strstr(text, "\"esc\\u001b[31mred\":"));
        CHECK(text && strstr(text, "\"line\\u000abreak\\u0009\\u0001\":"));
        CHECK(text && strstr(text, "\"del\\u007f\xc3\xa9\":"));
        CHECK(text && strstr(text, "\"\":{"));
        CHECK(text && printable(text));
        free(text);
        free(bytes);
    }
    gad_checkpoint_free(cp);
    gad_scope_end();
    CHECK_NO_LEAK();
}

/* Error messages quote names with their unprintable bytes escaped (\xNN):
 * a crafted name cannot send terminal escapes through a program that
 * prints the message. */
TEST(messages_escape_names) {
    mem_mark();
    const char *esc = "\\u001b]0;pwned\\u0007\\u001b[2J";
    char j[512];
    const gad_error *e;
    /* validation: the entry's offsets run past the data */
    snprintf(j, sizeof j, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", esc);
    CHECK(load_json(j, strlen(j), 4) == GAD_ERR_FORMAT);
    e = gad_last_error();
    CHECK_MSG(e && printable(e->text) && strstr(e->message, "\\x1b]0;pwned\\x07\\x1b[2J"),
              "%s", e ? e->text : "no error");
    gad_clear_error();
    /* the parser: an unknown dtype in a crafted entry, itself crafted */
    snprintf(j, sizeof j, "{\"%s\":{\"dtype\":\"%s\",\"shape\":[2],\"data_offsets\":[0,8]}}",
             esc, esc);
    CHECK(load_json(j, strlen(j), 8) == GAD_ERR_FORMAT);
    e = gad_last_error();
    CHECK_MSG(e && printable(e->text) && strstr(e->message, "unknown dtype") &&
                  strstr(e->message, "\\x1b"),
              "%s", e ? e->text : "no error");
    gad_clear_error();
    /* a duplicate crafted field name */
    snprintf(j, sizeof j, "{\"a\":{\"dtype\":\"F32\",\"%s\":1,\"%s\":2}}", esc, esc);
    CHECK(load_json(j, strlen(j), 0) == GAD_ERR_FORMAT);
    e = gad_last_error();
    CHECK_MSG(e && printable(e->text), "%s", e ? e->text : "no error");
    gad_clear_error();
    /* two crafted names, duplicated */
    snprintf(j, sizeof j, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", esc, esc);
    CHECK(load_json(j, strlen(j), 8) == GAD_ERR_FORMAT);
    e = gad_last_error();
    CHECK_MSG(e && printable(e->text) && strstr(e->message, "duplicate"), "%s",
              e ? e->text : "no error");
    gad_clear_error();
    /* a name asked of a checkpoint, a name saved, a state name */
    snprintf(j, sizeof j, "{\"ok\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}");
    CHECK(load_json(j, strlen(j), 4) == GAD_OK);
    char path[256];
    gad_checkpoint *cp = gad_load(tpath(path, sizeof path, "raw.safetensors"));
    const char *raw = "\x1b[2J\x1b]0;x\x07\xc2\x9b" "31m";
    CHECK(cp && gad_checkpoint_get(cp, raw) == NULL);
    e = gad_last_error();
    CHECK_MSG(e && e->kind == GAD_ERR_INDEX && printable(e->text) &&
                  strstr(e->message, "\\x1b[2J\\x1b]0;x\\x07\\xc2\\x9b31m"),
              "%s", e ? e->text : "no error");
    gad_clear_error();
    /* a long name (ESC, then 299 filler bytes 'x') is cut, with "...",
     * after a whole character */
    char longname[301];
    memset(longname, 'x', 300);
    longname[0] = '\x1b';
    longname[300] = 0;
    CHECK(cp && gad_checkpoint_get(cp, longname) == NULL);
    e = gad_last_error();
    CHECK_MSG(e && printable(e->text) && strstr(e->message, "'\\x1bxxx") &&
                  strstr(e->message, "xxx...'") && strlen(e->message) < 160,
              "%s", e ? e->text : "no error");
    gad_clear_error();
    gad_checkpoint_free(cp);
    gad_tensor *t = gad_scalar_f32(1);
    CHECK(gad_save(path, (const char *[]){raw, raw}, (gad_tensor *[]){t, t}, 2) ==
          GAD_ERR_DOMAIN);
    e = gad_last_error();
    CHECK_MSG(e && printable(e->text) && strstr(e->message, "duplicate"), "%s",
              e ? e->text : "no error");
    gad_clear_error();
    CHECK(gad_save(path, (const char *[]){raw}, (gad_tensor *[]){NULL}, 1) == GAD_ERR_DOMAIN);
    e = gad_last_error();
    CHECK_MSG(e && printable(e->text), "%s", e ? e->text : "no error");
    gad_clear_error();
    gad_tensor *p = gad_requires_grad(gad_scalar_f32(0));
    gad_optim *opt = gad_sgd_new(&p, 1, NULL);
    CHECK(gad_optim_load_state(opt, (const char *[]){raw}, (gad_tensor *[]){t}, 1) ==
          GAD_ERR_FORMAT);
    e = gad_last_error();
    CHECK_MSG(e && printable(e->text) && strstr(e->message, "\\x1b[2J"), "%s",
              e ? e->text : "no error");
    gad_clear_error();
    gad_optim_free(opt);
    gad_release(p);
    gad_release(t);
    CHECK_NO_LEAK();
}

TEST(deep_nesting) {
    mem_mark();
    for (int depth = 10; depth <= 200; depth += 190) {
        size_t cap = 256 + 2 * (size_t)depth;
        char *j = malloc(cap);
        int k = snprintf(j, cap, "{\"a\":{" T2 ",\"data_offsets\":[0,8],\"x\":");
        for (int d = 0; d < depth; d++) j[k++] = '[';
        for (int d = 0; d < depth; d++) j[k++] = ']';
        j[k++] = '}';
        j[k++] = '}';
        gad_status st = load_json(j, (size_t)k, 8);
        if (depth == 10) {
            CHECK(st == GAD_OK);
            CHECK_OK();
        } else {
            CHECK(st == GAD_ERR_FORMAT);
            CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", "nesting");
        }
        free(j);
    }
    /* Deep nesting where a tensor entry belongs stops at the first '['. */
    char j[600];
    int k = snprintf(j, sizeof j, "{\"a\":");
    for (int d = 0; d < 250; d++) j[k++] = '[';
    CHECK(load_json(j, (size_t)k, 0) == GAD_ERR_FORMAT);
    CHECK_ERR_MSG(GAD_ERR_FORMAT, "load", "tensor 'a'");
    CHECK_NO_LEAK();
}

/* ---------------------------------------------------- valid variations */

TEST(valid_variations_are_accepted) {
    mem_mark();
    gad_scope_begin();
    /* whitespace everywhere, fields in another order, no padding (the
     * header length need not be a multiple of 8), an unknown field */
    const char *j1 = "{ \n\t\"a\" : { \"shape\" : [ 2 ] , \"extra\" : {\"x\" : "
                     "[1, -2, \"s\", {\"y\": []}]}, \"data_offsets\" : [ 0 , 8 "
                     "] ,\r\n \"dtype\" : \"F32\" } } \n ";
    float two[2] = {1.25f, -3};
    CHECK(load_raw(strlen(j1), j1, strlen(j1), two, 8) == GAD_OK);
    CHECK_OK();
    /* metadata anywhere, escapes in names; the header lists tensors out of
     * offset order (as old writers did); data offsets that leave an f64 and
     * an i64 misaligned in memory */
    const char *j2 =
        "{\"b\\/\\u00E9\\n\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[4,12]},"
        "\"__metadata__\":{\"format\":\"pt\",\"k\\\"\":\"v\\\\\"},"
        "\"c\":{\"dtype\":\"I64\",\"shape\":[1,1],\"data_offsets\":[12,20]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"z\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[20,20]}}";
    unsigned char data[20];
    float fa = 0.5f;
    double fb = -7.125;
    int64_t ic = -(INT64_C(1) << 60) + 3;
    memcpy(data, &fa, 4);
    memcpy(data + 4, &fb, 8);
    memcpy(data + 12, &ic, 8);
    /* 8 + header length odd, so that even the data buffer start is odd in
     * the file */
    char *padded = malloc(strlen(j2) + 2);
    snprintf(padded, strlen(j2) + 2, "%s ", j2);
    size_t plen = strlen(padded) % 2 ? strlen(padded) : strlen(j2);
    CHECK(load_raw(plen, padded, plen, data, 20) == GAD_OK);
    CHECK_OK();
    char path[256];
    tpath(path, sizeof path, "raw.safetensors");
    gad_checkpoint *cp = gad_load(path);
    CHECK(cp && gad_checkpoint_count(cp) == 4);
    if (cp && gad_checkpoint_count(cp) == 4) {
        /* names in header order */
        CHECK(strcmp(gad_checkpoint_name(cp, 0), "b/\xc3\xa9\n") == 0);
        CHECK(strcmp(gad_checkpoint_name(cp, 1), "c") == 0);
        CHECK(strcmp(gad_checkpoint_name(cp, 2), "a") == 0);
        CHECK(strcmp(gad_checkpoint_name(cp, 3), "z") == 0);
        gad_tensor *b = gad_checkpoint_get(cp, "b/\xc3\xa9\n");
        CHECK(b && gad_rank(b) == 0 && gad_dtype(b) == GAD_F64);
        CHECK_VALUES(b, 0, -7.125);
        gad_tensor *c = gad_checkpoint_get(cp, "c");
        CHECK_SHAPE(c, 1, 1);
        int64_t got = 0;
        CHECK(gad_read_i64(c, &got, 1) == GAD_OK && got == ic);
        CHECK_VALUES(gad_checkpoint_get(cp, "a"), 0, 0.5);
        gad_tensor *z = gad_checkpoint_get(cp, "z");
        CHECK_SHAPE(z, 0, 3);
        CHECK(gad_numel(z) == 0);
    }
    gad_checkpoint_free(cp);
    free(padded);
    /* an empty metadata object and nothing else */
    CHECK(load_json("{\"__metadata__\":{}}", 19, 0) == GAD_OK);
    /* an empty tensor at the very end of an empty buffer, and -0 */
    const char *j3 = "{\"e\":{\"dtype\":\"I64\",\"shape\":[-0],\"data_offsets\":[0,0]}}";
    CHECK(load_json(j3, strlen(j3), 0) == GAD_OK);
    CHECK_OK();
    gad_scope_end();
    CHECK_NO_LEAK();
}

/* --------------------------------------------- truncation and mutation */

/* A small valid file (two tensors, f32 and i64) as bytes. */
static unsigned char *small_valid_file(size_t *len) {
    int64_t s2[1] = {2}, s1[1] = {1};
    gad_scope_begin();
    const char *names[2] = {"w\"1", "idx"};
    gad_tensor *ts[2] = {gad_from_f32((const float[]){1, 2}, s2, 1),
                         gad_from_i64((const int64_t[]){-5}, s1, 1)};
    char path[256];
    tpath(path, sizeof path, "small.safetensors");
    CHECK(gad_save(path, names, ts, 2) == GAD_OK);
    gad_scope_end();
    return read_file(path, len);
}

TEST(every_truncation_is_rejected) {
    mem_mark();
    size_t len = 0;
    unsigned char *full = small_valid_file(&len);
    CHECK(full && len > 16);
    char path[256];
    tpath(path, sizeof path, "prefix.safetensors");
    int bad = 0;
    for (size_t n = 0; full && n < len; n++) {
        write_file(path, full, n);
        gad_checkpoint *cp = gad_load(path);
        const gad_error *e = gad_last_error();
        int ok = !cp && e && strcmp(e->op, "load") == 0 &&
                 (e->kind == GAD_ERR_FORMAT || e->kind == GAD_ERR_IO);
        if (!ok && bad++ < 5)
            CHECK_MSG(ok, "prefix of %zu bytes: %s", n,
                      cp ? "loaded" : e ? e->text : "no error");
        gad_checkpoint_free(cp);
        gad_clear_error();
    }
    CHECK(bad == 0);
    write_file(path, full, len);
    gad_checkpoint *cp = gad_load(path);
    CHECK(cp && gad_checkpoint_count(cp) == 2);
    gad_checkpoint_free(cp);
    free(full);
    CHECK_NO_LEAK();
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t next_rand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Load a mutated file: it must either load (and then every tensor must be
 * readable) or fail with an error of op "load". */
static int load_mutant(const char *path, const unsigned char *p, size_t n) {
    write_file(path, p, n);
    gad_checkpoint *cp = gad_load(path);
    int ok = 1;
    if (cp) {
        gad_scope_begin();
        for (int i = 0; i < gad_checkpoint_count(cp); i++)
            if (!gad_checkpoint_get(cp, gad_checkpoint_name(cp, i))) ok = 0;
        gad_scope_end();
        gad_checkpoint_free(cp);
        ok = ok && gad_last_error() == NULL;
    } else {
        const gad_error *e = gad_last_error();
        ok = e && strcmp(e->op, "load") == 0 &&
             (e->kind == GAD_ERR_FORMAT || e->kind == GAD_ERR_UNSUPPORTED);
    }
    gad_clear_error();
    return ok;
}

TEST(mutated_files_never_crash) {
    mem_mark();
    size_t len = 0;
    unsigned char *full = small_valid_file(&len);
    unsigned char *m = malloc(len + 16);
    char path[256];
    tpath(path, sizeof path, "mutant.safetensors");
    static const unsigned char vals[] = {0x00, 0xff, '"', '\\', '{', '}', '[',
                                         ']', ',', ':', '0', '9', '-', ' ',
                                         'e', 0x80, 0xc3, 0x01};
    int bad = 0;
    for (size_t i = 0; full && i < len; i++)
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(m, full, len);
            m[i] = vals[v];
            int ok = load_mutant(path, m, len);
            if (!ok && bad++ < 5)
                CHECK_MSG(ok, "byte %zu set to 0x%02x", i, vals[v]);
        }
    for (int r = 0; full && r < 3000; r++) {
        memcpy(m, full, len);
        int edits = 1 + (int)(next_rand() % 3);
        for (int k = 0; k < edits; k++)
            m[next_rand() % len] = (unsigned char)next_rand();
        size_t n = len - (size_t)(next_rand() % 4 == 0 ? next_rand() % 8 : 0);
        int ok = load_mutant(path, m, n);
        if (!ok && bad++ < 5) CHECK_MSG(ok, "random mutant %d", r);
    }
    CHECK(bad == 0);
    free(m);
    free(full);
    CHECK_NO_LEAK();
}

/* ------------------------------------------------------ Python interop */

/* The tensors of tests/reference/safetensors_interop.py (TENSORS). */
#define PY_W "weight.\xce\xb8\xf0\x9d\x9c\x83"
#define PY_IDS "ids \"quoted\" \\ back"

static void check_python_tensors(gad_checkpoint *cp, const char *what) {
    CHECK_MSG(cp != NULL, "%s: %s", what,
              gad_last_error() ? gad_last_error()->text : "");
    if (!cp) return;
    gad_scope_begin();
    CHECK(gad_checkpoint_count(cp) == 4);
    const char *order[4] = {PY_W, "scale", PY_IDS, "empty"};
    for (int i = 0; i < 4 && i < gad_checkpoint_count(cp); i++)
        CHECK_MSG(strcmp(gad_checkpoint_name(cp, i), order[i]) == 0,
                  "%s: name %d is '%s'", what, i, gad_checkpoint_name(cp, i));
    gad_tensor *w = gad_checkpoint_get(cp, PY_W);
    CHECK(gad_dtype(w) == GAD_F32);
    CHECK_SHAPE(w, 2, 3);
    CHECK_VALUES(w, 0, 0, 0.5, 1, 1.5, 2, 2.5);
    gad_tensor *s = gad_checkpoint_get(cp, "scale");
    CHECK(gad_dtype(s) == GAD_F64 && gad_rank(s) == 0);
    CHECK_VALUES(s, 0, 3.25);
    gad_tensor *ids = gad_checkpoint_get(cp, PY_IDS);
    CHECK(gad_dtype(ids) == GAD_I64);
    CHECK_SHAPE(ids, 4);
    int64_t iv[4] = {0};
    CHECK(gad_read_i64(ids, iv, 4) == GAD_OK);
    CHECK(iv[0] == -2 && iv[1] == 0 && iv[2] == 7 && iv[3] == INT64_C(1) << 40);
    gad_tensor *e = gad_checkpoint_get(cp, "empty");
    CHECK(gad_dtype(e) == GAD_F32);
    CHECK_SHAPE(e, 0, 2);
    gad_scope_end();
    CHECK_OK();
}

TEST(python_written_file_committed) {
    mem_mark();
    gad_checkpoint *cp = gad_load(PY_WRITTEN);
    check_python_tensors(cp, PY_WRITTEN);
    gad_checkpoint_free(cp);
    CHECK_NO_LEAK();
}

/* Save the interop tensors (the weight from a transposed view), with
 * scale's value replaced by `scale`. */
static gad_status save_python_tensors(const char *path, double scale) {
    gad_scope_begin();
    int64_t s32[2] = {3, 2}, s4[1] = {4}, s02[2] = {0, 2};
    /* wt[j][i] = w[i][j] = (3 i + j) / 2 */
    gad_tensor *wt = gad_from_f32((const float[]){0, 1.5f, 0.5f, 2, 1, 2.5f},
                                  s32, 2);
    gad_tensor *ts[4] = {
        gad_transpose(wt), gad_scalar_f64(scale),
        gad_from_i64((const int64_t[]){-2, 0, 7, INT64_C(1) << 40}, s4, 1),
        gad_zeros(s02, 2, GAD_F32)};
    const char *names[4] = {PY_W, "scale", PY_IDS, "empty"};
    gad_status st = gad_save(path, names, ts, 4);
    gad_scope_end();
    return st;
}

static int run_python(const char *mode, const char *file, int quiet) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s '%s'%s", PYTHON, INTEROP_PY, mode,
             file, quiet ? " 2>/dev/null" : "");
    fflush(stdout);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(python_live_interop) {
    mem_mark();
    if (access(PYTHON, X_OK) != 0) {
        printf("     python3 not found: live interop skipped (the committed "
               "python_written.safetensors was still checked)\n");
        return;
    }
    char path[256];
    /* gad writes, Python reads */
    tpath(path, sizeof path, "gad_written.safetensors");
    CHECK(save_python_tensors(path, 3.25) == GAD_OK);
    CHECK_MSG(run_python("check", path, 0) == 0, "python check of %s", path);
    /* the checker does check: a wrong value fails it */
    tpath(path, sizeof path, "gad_wrong.safetensors");
    CHECK(save_python_tensors(path, 3.5) == GAD_OK);
    CHECK_MSG(run_python("check", path, 1) == 1,
              "python check accepted a wrong value");
    /* Python writes, gad reads */
    tpath(path, sizeof path, "py_written.safetensors");
    CHECK(run_python("write", path, 0) == 0);
    gad_checkpoint *cp = gad_load(path);
    check_python_tensors(cp, path);
    gad_checkpoint_free(cp);
    /* the committed file is what the script writes today */
    size_t len = 0;
    unsigned char *bytes = read_file(path, &len);
    CHECK_MSG(bytes && same_file(PY_WRITTEN, bytes, len),
              "python_written.safetensors differs from what "
              "safetensors_interop.py writes now");
    free(bytes);
    CHECK_NO_LEAK();
}

int main(void) {
    if (test_make_tmpdir(tmpdir, sizeof tmpdir, "gad_ckpt", 0)) return 1;
    RUN(round_trip_every_dtype_and_rank);
    RUN(non_contiguous_inputs_save_their_logical_values);
    RUN(names_with_quotes_backslashes_and_unicode);
    RUN(names_with_control_characters_round_trip);
    RUN(messages_escape_names);
    RUN(empty_checkpoint);
    RUN(checkpoint_accessors);
    RUN(checkpoint_reads_the_file_it_opened);
    RUN(save_rejects_bad_arguments);
    RUN(overwrite_keeps_only_the_new_content);
    RUN(failed_saves_leave_the_old_file_and_no_temporary);
    RUN(save_never_replaces_what_is_not_a_regular_file);
    RUN(load_io_errors);
    RUN(load_refuses_special_files);
    RUN(load_memory_is_bounded);
    RUN(malformed_files_table);
    RUN(bool_bytes_other_than_0_and_1_are_refused);
    RUN(malformed_header_lengths);
    RUN(deep_nesting);
    RUN(valid_variations_are_accepted);
    RUN(every_truncation_is_rejected);
    RUN(mutated_files_never_crash);
    RUN(python_written_file_committed);
    RUN(python_live_interop);
    test_remove_tree(tmpdir, 2);
    return test_summary();
}
