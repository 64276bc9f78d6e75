/* test_safetensors.c: safetensors files of every dtype the format defines,
 * written by an independent writer (tests/data/safetensors/make_files.py:
 * the Python standard library, no torch), read value by value; metadata;
 * selective loading of a file holding tensors gad cannot represent; round
 * trips of the half and integer dtypes gad writes; hostile files. The
 * format's syntax cases are in test_checkpoint.c. */
#include "gad.h"
#include "test.h"
#include "test_tmpdir.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DATA GAD_SOURCE_DIR "/tests/data/safetensors/"

static char tmpdir[256];

static const char *tpath(const char *name) {
    static char buf[2][512];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static int same_f64(double a, double b) { /* bit-for-bit but any NaN payload */
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) && !signbit(a) == !signbit(b);
    return a == b && !signbit(a) == !signbit(b);
}

/* One dtype file: x loads as the dtype its metadata names, with want's
 * values (and bits' raw patterns for the half dtypes). */
static void check_dtype_file(const char *file) {
    char path[512];
    snprintf(path, sizeof path, DATA "%s", file);
    gad_checkpoint *cp = gad_load(path);
    CHECK_MSG(cp != NULL, "%s: %s", file, gad_last_error() ? gad_last_error()->message : "?");
    if (!cp) return;
    gad_scope_begin();
    const char *gdt = gad_checkpoint_meta(cp, "gad_dtype");
    gad_tensor *x = gad_checkpoint_get(cp, "x"), *want = gad_checkpoint_get(cp, "want");
    CHECK(gdt && x && want);
    if (gdt && x && want) {
        CHECK_MSG(strcmp(gad_dtype_name(gad_dtype(x)), gdt) == 0, "%s: x is %s, want %s", file,
                  gad_dtype_name(gad_dtype(x)), gdt);
        CHECK(gad_numel(x) == gad_numel(want) && gad_rank(x) == gad_rank(want));
        size_t n = (size_t)gad_numel(x);
        if (gad_dtype(want) == GAD_F64) {
            double got[256], ref[256];
            CHECK(n <= 256 && gad_read_f64(x, got, 256) == GAD_OK &&
                  gad_read_f64(want, ref, 256) == GAD_OK);
            for (size_t i = 0; i < n && i < 256; i++)
                CHECK_MSG(same_f64(got[i], ref[i]), "%s: element %zu is %.17g, want %.17g",
                          file, i, got[i], ref[i]);
        } else {
            int64_t got[256], ref[256];
            CHECK(n <= 256 && gad_read_i64(x, got, 256) == GAD_OK &&
                  gad_read_i64(want, ref, 256) == GAD_OK);
            for (size_t i = 0; i < n && i < 256; i++)
                CHECK_MSG(got[i] == ref[i], "%s: element %zu is %lld, want %lld", file, i,
                          (long long)got[i], (long long)ref[i]);
        }
        gad_tensor *bits = gad_checkpoint_get(cp, "bits");
        if (gad_dtype(x) == GAD_F16 || gad_dtype(x) == GAD_BF16) {
            int64_t ref[64];
            const uint16_t *p = gad_data(x);
            CHECK(bits && n <= 64 && gad_read_i64(bits, ref, 64) == GAD_OK);
            for (size_t i = 0; bits && p && i < n && i < 64; i++)
                CHECK_MSG(p[i] == (uint16_t)ref[i], "%s: bits %zu are 0x%04x, want 0x%04x",
                          file, i, p[i], (unsigned)ref[i]);
        } else {
            gad_clear_error(); /* no bits in the file */
        }
    }
    gad_scope_end();
    gad_checkpoint_free(cp);
}

TEST(every_dtype_reads_its_values) {
    static const char *const files[] = {
        "f32.safetensors", "f64.safetensors", "i64.safetensors", "bool.safetensors",
        "f16.safetensors", "bf16.safetensors", "i32.safetensors", "u8.safetensors",
        "i8.safetensors", "i16.safetensors", "u16.safetensors", "u32.safetensors",
        "u64.safetensors", "f8_e4m3.safetensors", "f8_e5m2.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) check_dtype_file(files[i]);
}

TEST(fp8_landmarks) { /* OCP OFP8 rev 1.0's own table: max, min normal, min subnormal */
    gad_checkpoint *cp = gad_load(DATA "f8_e4m3.safetensors");
    gad_checkpoint *cq = gad_load(DATA "f8_e5m2.safetensors");
    CHECK(cp && cq);
    if (cp && cq) {
        gad_scope_begin();
        float a[256], b[256];
        CHECK(gad_read_f32(gad_checkpoint_get(cp, "x"), a, 256) == GAD_OK);
        CHECK(gad_read_f32(gad_checkpoint_get(cq, "x"), b, 256) == GAD_OK);
        CHECK(a[0x7e] == 448.0f && a[0xfe] == -448.0f && isnan(a[0x7f]) && isnan(a[0xff]));
        CHECK(a[0x08] == ldexpf(1, -6) && a[0x01] == ldexpf(1, -9) && a[0x78] == 256.0f);
        CHECK(b[0x7b] == 57344.0f && isinf(b[0x7c]) && b[0xfc] == -INFINITY && isnan(b[0x7d]));
        CHECK(b[0x04] == ldexpf(1, -14) && b[0x01] == ldexpf(1, -16) && b[0x3c] == 1.0f);
        CHECK(signbit(a[0x80]) && a[0x80] == 0.0f);
        gad_scope_end();
    }
    gad_checkpoint_free(cp);
    gad_checkpoint_free(cq);
}

TEST(u64_past_int64_max_is_refused_when_read) {
    gad_checkpoint *cp = gad_load(DATA "u64_big.safetensors");
    CHECK(cp != NULL);
    if (!cp) return;
    CHECK(gad_checkpoint_get(cp, "x") == NULL);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "'x'") && strstr(gad_last_error()->message, "9223372036854775808"));
    CHECK_ERR(GAD_ERR_UNSUPPORTED, "checkpoint_get");
    gad_clear_error();
    gad_checkpoint_free(cp);
}

TEST(metadata_from_an_independent_writer) {
    gad_checkpoint *cp = gad_load(DATA "meta.safetensors");
    CHECK(cp != NULL);
    if (!cp) return;
    CHECK(gad_checkpoint_meta_count(cp) == 6);
    const char *k0 = gad_checkpoint_meta_key(cp, 0);
    CHECK(k0 && strcmp(k0, "format") == 0);
    CHECK(gad_checkpoint_meta(cp, "format") && strcmp(gad_checkpoint_meta(cp, "format"), "pt") == 0);
    const char *t = gad_checkpoint_meta(cp, "text");
    CHECK(t && strcmp(t, "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80") == 0);
    const char *q = gad_checkpoint_meta(cp, "quoted");
    CHECK(q && strcmp(q, "a\"b\\c\nd\te\x01") == 0);
    CHECK(gad_checkpoint_meta(cp, "") && strcmp(gad_checkpoint_meta(cp, ""), "empty key") == 0);
    CHECK(gad_checkpoint_meta(cp, "empty") && gad_checkpoint_meta(cp, "empty")[0] == 0);
    CHECK(gad_checkpoint_meta(cp, "absent") == NULL && gad_last_error() == NULL);
    CHECK(gad_checkpoint_meta_key(cp, 6) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "checkpoint_meta_key");
    CHECK(gad_checkpoint_meta_key(cp, -1) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "checkpoint_meta_key");
    CHECK(gad_checkpoint_meta(cp, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "checkpoint_meta");
    CHECK(gad_checkpoint_meta(NULL, "a") == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "checkpoint_meta");
    CHECK(gad_checkpoint_meta_key(NULL, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "checkpoint_meta_key");
    CHECK(gad_checkpoint_meta_count(NULL) == 0);
    gad_clear_error();
    gad_checkpoint_free(cp);
    /* a file without metadata */
    cp = gad_load(DATA "u64_big.safetensors");
    CHECK(cp && gad_checkpoint_meta_count(cp) == 0 && gad_checkpoint_meta(cp, "format") == NULL);
    gad_checkpoint_free(cp);
    cp = gad_load(DATA "bad_wrong_size.safetensors"); /* not a checkpoint */
    CHECK(cp == NULL);
    gad_clear_error();
}

TEST(load_names_reads_the_usable_part_of_a_file) {
    /* the whole file: refused, naming the first unreadable tensor and its dtype */
    CHECK(gad_load(DATA "mixed.safetensors") == NULL);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "'scale'") && strstr(gad_last_error()->message, "F8_E8M0"));
    CHECK_ERR(GAD_ERR_UNSUPPORTED, "load");
    gad_clear_error();
    gad_checkpoint *cp = gad_load_names(DATA "mixed.safetensors", (const char *[]){"h", "a", "c"}, 3);
    CHECK_MSG(cp != NULL, "%s", gad_last_error() ? gad_last_error()->message : "");
    if (cp) {
        CHECK(gad_checkpoint_count(cp) == 3);
        CHECK(strcmp(gad_checkpoint_name(cp, 0), "a") == 0); /* header order */
        CHECK(strcmp(gad_checkpoint_name(cp, 2), "h") == 0);
        CHECK(gad_checkpoint_meta(cp, "format") && strcmp(gad_checkpoint_meta(cp, "format"), "pt") == 0);
        gad_scope_begin();
        gad_tensor *a = gad_checkpoint_get(cp, "a"), *c = gad_checkpoint_get(cp, "c"),
                   *h = gad_checkpoint_get(cp, "h");
        CHECK(a && c && h && gad_dtype(c) == GAD_I32 && gad_dtype(h) == GAD_BF16);
        int64_t cv[3];
        CHECK(c && gad_read_i64(c, cv, 3) == GAD_OK && cv[0] == -5 && cv[1] == 0 && cv[2] == 5);
        CHECK(h && gad_item(h) == 1.0);
        float av[2];
        CHECK(a && gad_read_f32(a, av, 2) == GAD_OK && av[0] == 1.0f && av[1] == 2.0f);
        CHECK(gad_checkpoint_get(cp, "scale") == NULL); /* not selected */
        CHECK_ERR(GAD_ERR_INDEX, "checkpoint_get");
        gad_scope_end();
    }
    gad_checkpoint_free(cp);
    /* asking for an unreadable tensor names it */
    CHECK(gad_load_names(DATA "mixed.safetensors", (const char *[]){"a", "z"}, 2) == NULL);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "'z'") && strstr(gad_last_error()->message, "C64"));
    CHECK_ERR(GAD_ERR_UNSUPPORTED, "load");
    CHECK(gad_load_names(DATA "mixed.safetensors", (const char *[]){"nope"}, 1) == NULL);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "'nope'"));
    CHECK_ERR(GAD_ERR_INDEX, "load");
    CHECK(gad_load_names(DATA "mixed.safetensors", (const char *[]){"a", "a"}, 2) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "load");
    CHECK(gad_load_names(DATA "mixed.safetensors", (const char *[]){NULL}, 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "load");
    CHECK(gad_load_names(DATA "mixed.safetensors", NULL, 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "load_names");
    CHECK(gad_load_names(DATA "mixed.safetensors", NULL, -1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "load_names");
    CHECK(gad_load_names(NULL, NULL, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "load_names");
    /* no names: the metadata alone */
    cp = gad_load_names(DATA "mixed.safetensors", NULL, 0);
    CHECK(cp && gad_checkpoint_count(cp) == 0 && gad_checkpoint_meta_count(cp) == 1);
    gad_checkpoint_free(cp);
    /* a malformed file is malformed whatever is selected */
    CHECK(gad_load_names(DATA "bad_wrong_size.safetensors", NULL, 0) == NULL);
    CHECK_ERR(GAD_ERR_FORMAT, "load");
    gad_clear_error();
}

static void check_bad(const char *file, gad_status kind, const char *needle) {
    char path[512];
    snprintf(path, sizeof path, DATA "%s", file);
    gad_clear_error();
    gad_checkpoint *cp = gad_load(path);
    CHECK_MSG(cp == NULL, "%s loaded", file);
    gad_checkpoint_free(cp);
    const gad_error *e = gad_last_error();
    CHECK_MSG(e && e->kind == kind, "%s: kind %d, want %d (%s)", file, e ? (int)e->kind : 0,
              (int)kind, e ? e->message : "");
    CHECK_MSG(e && strstr(e->message, needle), "%s: \"%s\" lacks \"%s\"", file, e ? e->message : "",
              needle);
    gad_clear_error();
}

TEST(hostile_files_are_clear_errors) {
    check_bad("bad_wrong_size.safetensors", GAD_ERR_FORMAT, "hold 16 bytes, but F16 with shape [4] needs 8");
    check_bad("bad_truncated_half.safetensors", GAD_ERR_FORMAT, "past the end of the data");
    check_bad("bad_offsets.safetensors", GAD_ERR_FORMAT, "tensor 'w': data_offsets [4, 8] run past the end of the data (4 bytes)");
    check_bad("bad_meta_number.safetensors", GAD_ERR_FORMAT, "__metadata__ key 'epochs': the value is not a string");
    check_bad("bad_meta_null.safetensors", GAD_ERR_FORMAT, "key 'note'");
    check_bad("bad_meta_object.safetensors", GAD_ERR_FORMAT, "key 'cfg'");
    check_bad("bad_meta_array.safetensors", GAD_ERR_FORMAT, "key 'dims'");
    check_bad("bad_meta_bool.safetensors", GAD_ERR_FORMAT, "key 'ok'");
    check_bad("bad_meta_not_object.safetensors", GAD_ERR_FORMAT, "__metadata__: expected an object");
    check_bad("bad_meta_duplicate.safetensors", GAD_ERR_FORMAT, "duplicate key 'format'");
}

/* A header past the format's 100 MB limit: refused before it is read (the
 * file is sparse), and a large metadata object that fits: read. */
TEST(huge_metadata) {
    const char *p = tpath("huge.st");
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (!f) return;
    uint64_t hlen = 100000008;
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)(hlen >> (8 * k));
    fwrite(len8, 1, 8, f);
    fputs("{\"__metadata__\":{\"k\":\"", f);
    CHECK(fseek(f, (long)(8 + hlen - 1), SEEK_SET) == 0 && fputc(' ', f) == ' ');
    fclose(f);
    CHECK(gad_load(p) == NULL);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "exceeds the limit"));
    CHECK_ERR(GAD_ERR_FORMAT, "load");
    gad_clear_error();
    remove(p);

    /* 20000 keys and a 1 MiB value through the writer and back */
    enum { NK = 20000 };
    static char keys[NK][16];
    static const char *meta[2 * NK + 2];
    static char big[1 << 20];
    memset(big, 'v', sizeof big - 1);
    for (int i = 0; i < NK; i++) {
        snprintf(keys[i], sizeof keys[i], "k%05d", NK - 1 - i);
        meta[2 * i] = keys[i];
        meta[2 * i + 1] = keys[i] + 1;
    }
    meta[2 * NK] = "big";
    meta[2 * NK + 1] = big;
    CHECK(gad_save_meta(tpath("many.st"), NULL, NULL, 0, meta, NK + 1) == GAD_OK);
    gad_checkpoint *cp = gad_load(tpath("many.st"));
    CHECK(cp && gad_checkpoint_meta_count(cp) == NK + 1);
    if (cp) {
        CHECK(strcmp(gad_checkpoint_meta(cp, "k00007"), "00007") == 0);
        CHECK(strcmp(gad_checkpoint_meta_key(cp, 0), "k19999") == 0);
        CHECK(strlen(gad_checkpoint_meta(cp, "big")) == sizeof big - 1);
    }
    gad_checkpoint_free(cp);
}

TEST(round_trip_half_integer_and_metadata) {
    gad_scope_begin();
    int64_t s[] = {2, 3};
    gad_tensor *f = gad_cast(gad_from_f32((float[]){1, -2.5f, 65504, 1e-7f, -0.0f, NAN}, s, 2), GAD_F16);
    gad_tensor *b = gad_cast(gad_from_f32((float[]){1, -2.5f, 3e38f, 1e-40f, INFINITY, NAN}, s, 2), GAD_BF16);
    gad_tensor *i = gad_cast(gad_from_i64((int64_t[]){0, -1, 2147483647, -2147483647 - 1, 5, 6}, s, 2), GAD_I32);
    gad_tensor *u = gad_cast(gad_from_i64((int64_t[]){0, 1, 127, 128, 254, 255}, s, 2), GAD_U8);
    gad_tensor *m = gad_from_bool((uint8_t[]){1, 0, 0, 1, 1, 0}, s, 2);
    gad_tensor *ft = gad_transpose(f); /* non-contiguous: its logical values */
    const char *names[] = {"f16", "bf16", "i32", "u8", "mask", "f16t"};
    gad_tensor *ts[] = {f, b, i, u, m, ft};
    const char *meta[] = {"format", "pt", "d_model", "64", "note", "tab\there \"q\" \xc3\xa9"};
    CHECK(gad_save_meta(tpath("rt.st"), names, ts, 6, meta, 3) == GAD_OK);
    gad_checkpoint *cp = gad_load(tpath("rt.st"));
    CHECK(cp != NULL);
    if (cp) {
        CHECK(gad_checkpoint_meta_count(cp) == 3);
        CHECK(strcmp(gad_checkpoint_meta_key(cp, 2), "note") == 0);
        CHECK(strcmp(gad_checkpoint_meta(cp, "note"), meta[5]) == 0);
        CHECK(strcmp(gad_checkpoint_meta(cp, "d_model"), "64") == 0);
        for (int k = 0; k < 6; k++) {
            gad_tensor *g = gad_checkpoint_get(cp, names[k]);
            gad_tensor *c = gad_contiguous(ts[k]);
            CHECK(g && gad_dtype(g) == gad_dtype(ts[k]) && gad_numel(g) == 6);
            CHECK(g && gad_rank(g) == 2 && gad_shape(g)[0] == gad_shape(ts[k])[0]);
            if (g && c)
                CHECK_MSG(memcmp(gad_data(g), gad_data(c), 6 * gad_dtype_size(gad_dtype(g))) == 0,
                          "%s differs", names[k]);
        }
    }
    gad_checkpoint_free(cp);
    /* gad_save writes no metadata */
    CHECK(gad_save(tpath("nometa.st"), names, ts, 1) == GAD_OK);
    cp = gad_load(tpath("nometa.st"));
    CHECK(cp && gad_checkpoint_meta_count(cp) == 0);
    gad_checkpoint_free(cp);
    /* metadata only, no tensors */
    CHECK(gad_save_meta(tpath("metaonly.st"), NULL, NULL, 0, meta, 1) == GAD_OK);
    cp = gad_load(tpath("metaonly.st"));
    CHECK(cp && gad_checkpoint_count(cp) == 0 && strcmp(gad_checkpoint_meta(cp, "format"), "pt") == 0);
    gad_checkpoint_free(cp);
    gad_scope_end();
}

TEST(save_meta_rejects_bad_metadata) {
    gad_scope_begin();
    gad_tensor *x = gad_zeros((int64_t[]){2}, 1, GAD_F32);
    const char *n[] = {"x"};
    const char *p = tpath("badmeta.st");
    remove(p);
    CHECK(gad_save_meta(p, n, &x, 1, (const char *[]){"a", "1", "a", "2"}, 2) == GAD_ERR_DOMAIN);
    CHECK(strstr(gad_last_error()->message, "duplicate metadata key 'a'"));
    gad_clear_error();
    CHECK(gad_save_meta(p, n, &x, 1, (const char *[]){"a", NULL}, 1) == GAD_ERR_DOMAIN);
    CHECK(strstr(gad_last_error()->message, "value 0 is NULL"));
    gad_clear_error();
    CHECK(gad_save_meta(p, n, &x, 1, (const char *[]){"\xff", "x"}, 1) == GAD_ERR_DOMAIN);
    CHECK(strstr(gad_last_error()->message, "key 0 is not valid UTF-8"));
    CHECK(gad_save_meta(p, n, &x, 1, NULL, 1) == GAD_ERR_DOMAIN);
    CHECK(gad_save_meta(p, n, &x, 1, NULL, -1) == GAD_ERR_DOMAIN);
    CHECK(fopen(p, "rb") == NULL); /* nothing written */
    gad_clear_error();
    gad_scope_end();
}

TEST(params_hold_half_and_integer_tensors) {
    gad_params *ps = gad_params_new();
    gad_scope_begin();
    int64_t s[] = {2, 2};
    gad_tensor *w = gad_params_add(ps, "lin.weight", gad_cast(gad_full(s, 2, GAD_F32, 0.5), GAD_BF16));
    gad_tensor *h = gad_params_add(ps, "lin.bias", gad_full(s, 1, GAD_F16, -1.5));
    gad_tensor *nb = gad_params_add_buffer(ps, "bn.num_batches_tracked", gad_zeros(NULL, 0, GAD_I64));
    gad_tensor *mk = gad_params_add_buffer(ps, "mask", gad_full(s, 2, GAD_BOOL, 1));
    gad_tensor *ids = gad_params_add_buffer(ps, "ids", gad_full(s, 1, GAD_I32, 7));
    gad_tensor *px = gad_params_add_buffer(ps, "px", gad_full(s, 1, GAD_U8, 200));
    CHECK(w && h && nb && mk && ids && px);
    CHECK(gad_params_add(ps, "i", gad_zeros(s, 1, GAD_I32)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "params_add");
    gad_scope_end();
    const char *meta[] = {"format", "pt"};
    CHECK(gad_params_save_meta(ps, tpath("ps.st"), meta, 1) == GAD_OK);
    CHECK(gad_params_save_meta(NULL, tpath("ps.st"), meta, 1) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "params_save");
    /* the optimizers refuse a half parameter, naming it */
    gad_optim *o = gad_adamw_new_params(ps, NULL, 0, NULL);
    CHECK(o == NULL);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "\"lin.weight\" is bf16"));
    CHECK_ERR(GAD_ERR_UNSUPPORTED, "adamw_new_params");
    gad_clear_error();

    gad_params *q = gad_params_new();
    gad_scope_begin();
    gad_params_add(q, "lin.weight", gad_zeros(s, 2, GAD_BF16));
    gad_params_add(q, "lin.bias", gad_zeros(s, 1, GAD_F16));
    gad_params_add_buffer(q, "bn.num_batches_tracked", gad_full(NULL, 0, GAD_I64, 3));
    gad_params_add_buffer(q, "mask", gad_zeros(s, 2, GAD_BOOL));
    gad_params_add_buffer(q, "ids", gad_zeros(s, 1, GAD_I32));
    gad_params_add_buffer(q, "px", gad_zeros(s, 1, GAD_U8));
    gad_scope_end();
    gad_params_load_info info;
    CHECK(gad_params_load(q, tpath("ps.st"), 1, &info) == GAD_OK && info.loaded == 6);
    float wv[4], bv[2];
    int64_t iv[2], pv[2], nv[1];
    uint8_t mv[4];
    CHECK(gad_read_f32(gad_params_get(q, "lin.weight"), wv, 4) == GAD_OK && wv[3] == 0.5f);
    CHECK(gad_read_f32(gad_params_get(q, "lin.bias"), bv, 2) == GAD_OK && bv[1] == -1.5f);
    CHECK(gad_read_i64(gad_params_get(q, "ids"), iv, 2) == GAD_OK && iv[1] == 7);
    CHECK(gad_read_i64(gad_params_get(q, "px"), pv, 2) == GAD_OK && pv[0] == 200);
    CHECK(gad_read_i64(gad_params_get(q, "bn.num_batches_tracked"), nv, 1) == GAD_OK && nv[0] == 0);
    CHECK(gad_read_bool(gad_params_get(q, "mask"), mv, 4) == GAD_OK && mv[2] == 1);
    gad_params_free(q);

    /* a dtype mismatch names both */
    q = gad_params_new();
    gad_scope_begin();
    gad_params_add(q, "lin.weight", gad_zeros(s, 2, GAD_F32));
    gad_scope_end();
    CHECK(gad_params_load(q, tpath("ps.st"), 0, NULL) == GAD_ERR_DTYPE);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "\"lin.weight\" is bf16 [2,2] in the file, f32 [2,2] in the set"));
    gad_clear_error();
    gad_params_free(q);
    gad_params_free(ps);
}

int main(void) {
    if (test_make_tmpdir(tmpdir, sizeof tmpdir, "gad_st", 0)) return 1;
    RUN(every_dtype_reads_its_values);
    RUN(fp8_landmarks);
    RUN(u64_past_int64_max_is_refused_when_read);
    RUN(metadata_from_an_independent_writer);
    RUN(load_names_reads_the_usable_part_of_a_file);
    RUN(hostile_files_are_clear_errors);
    RUN(huge_metadata);
    RUN(round_trip_half_integer_and_metadata);
    RUN(save_meta_rejects_bad_metadata);
    RUN(params_hold_half_and_integer_tensors);
    test_remove_tree(tmpdir, 0);
    return test_summary();
}
