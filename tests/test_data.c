/* test_data.c: the data layer (gad.h, "Data"): gad_read_bytes on plain and
 * gzip files, good and hostile (truncated, corrupt, trailing bytes, bombs
 * against the limit, special files); gad_read_csv on good files and on
 * each kind of bad one, with the line and column the error must name; the
 * minibatch sampler (each index once per epoch, the last batch, the
 * documented generator, determinism, seeking); and the integer gather
 * (gather, take, index_select of i64 data, and index_select's gradient).
 *
 * The gzip files are written two ways: by hand with stored deflate blocks
 * (RFC 1951 section 3.2.4; RFC 1952's header and CRC-32 trailer), which
 * needs no zlib, so that a build without zlib checks its error; and with
 * zlib's deflate where the build has zlib (real compression: the bombs). */
#include "test.h"
#include "test_tmpdir.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifdef GAD_HAVE_ZLIB
#include <zlib.h>
#endif

static char g_dir[256];

static const char *tpath(const char *name) {
    static char p[4][384];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

static int write_file(const char *name, const void *data, size_t n) {
    FILE *f = fopen(tpath(name), "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static int write_str(const char *name, const char *s) { return write_file(name, s, strlen(s)); }

/* The pending error is of this kind and op and its text holds every
 * needle (NULL-terminated); clears it. */
static int err_is(gad_status kind, const char *op, const char *const *needles) {
    const gad_error *e = gad_last_error();
    int ok = e && e->kind == kind && strcmp(e->op, op) == 0;
    for (int i = 0; ok && needles[i]; i++) ok = strstr(e->text, needles[i]) != NULL;
    if (!ok)
        fprintf(stderr, "  want %s error in %s with", gad_status_str(kind), op);
    for (int i = 0; !ok && needles[i]; i++) fprintf(stderr, " \"%s\"", needles[i]);
    if (!ok) fprintf(stderr, "; got: %s\n", e ? e->text : "no error");
    gad_clear_error();
    return ok;
}
#define CHECK_ERR_HAS(kind, op, ...) \
    CHECK(err_is((kind), (op), (const char *const[]){__VA_ARGS__, NULL}))

/* --------------------------------------------------- gzip written by hand */

/* CRC-32 of RFC 1952 (reflected polynomial 0xEDB88320), bit by bit. */
static uint32_t crc32_ref(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static void put_le32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* One gzip member of data[0..n) (n < 65536) in one stored block: a 10-byte
 * header, the block (1 byte BFINAL=1 BTYPE=00, LEN, NLEN), the data, then
 * CRC-32 and ISIZE. Returns its size in out. */
static size_t gzip_stored(const unsigned char *data, size_t n, unsigned char *out) {
    static const unsigned char hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
    memcpy(out, hdr, 10);
    size_t o = 10;
    out[o++] = 1;
    out[o++] = (unsigned char)(n & 0xff), out[o++] = (unsigned char)(n >> 8);
    out[o++] = (unsigned char)(~n & 0xff), out[o++] = (unsigned char)((~n >> 8) & 0xff);
    memcpy(out + o, data, n);
    o += n;
    put_le32(out + o, crc32_ref(data, n));
    put_le32(out + o + 4, (uint32_t)n);
    return o + 8;
}

#ifdef GAD_HAVE_ZLIB
/* data[0..n) gzip-compressed by zlib into a malloc'd buffer. */
static unsigned char *gzip_zlib(const unsigned char *data, size_t n, size_t *out_n) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&zs, (uLong)n) + 64;
    unsigned char *out = malloc(cap);
    zs.next_in = (unsigned char *)data;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    int r = out ? deflate(&zs, Z_FINISH) : Z_MEM_ERROR;
    *out_n = zs.total_out;
    deflateEnd(&zs);
    if (r != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}
#endif

#ifdef GAD_HAVE_ZLIB
/* Some text of n bytes, varied enough not to be trivial. */
static unsigned char *some_text(size_t n, uint64_t seed) {
    unsigned char *t = malloc(n + 1);
    gad_rng *r = gad_rng_new(seed);
    static const char words[][8] = {"and ", "the ", "LORD ", "said ", "unto ", "\n", "of "};
    for (size_t i = 0; i < n;) {
        const char *w = words[gad_rng_int(r, 0, 7)];
        for (size_t k = 0; w[k] && i < n; k++) t[i++] = (unsigned char)w[k];
    }
    gad_rng_free(r);
    return t;
}
#endif

/* ------------------------------------------------------------ read_bytes */

TEST(read_bytes_plain) {
    unsigned char all[256];
    for (int i = 0; i < 256; i++) all[i] = (unsigned char)(255 - i); /* NUL and 0xff too */
    CHECK(write_file("all.bin", all, 256));
    unsigned char *d = NULL;
    size_t n = 0;
    CHECK(gad_read_bytes(tpath("all.bin"), 0, &d, &n) == GAD_OK);
    CHECK(d && n == 256 && memcmp(d, all, 256) == 0 && d[256] == 0);
    gad_mem_free(d);
    /* the limit: exactly n is fine, n - 1 is not */
    CHECK(gad_read_bytes(tpath("all.bin"), 256, &d, &n) == GAD_OK && n == 256);
    gad_mem_free(d);
    CHECK(gad_read_bytes(tpath("all.bin"), 255, &d, &n) == GAD_ERR_FORMAT);
    CHECK(d == NULL && n == 0);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "all.bin", "limit of 255 bytes");
    /* empty and one-byte files (one byte of gzip's magic is just a byte) */
    CHECK(write_file("empty.bin", "", 0));
    CHECK(gad_read_bytes(tpath("empty.bin"), 0, &d, &n) == GAD_OK && d && n == 0 && d[0] == 0);
    gad_mem_free(d);
    CHECK(write_file("one.bin", "\x1f", 1));
    CHECK(gad_read_bytes(tpath("one.bin"), 0, &d, &n) == GAD_OK && n == 1 && d[0] == 0x1f);
    gad_mem_free(d);
    CHECK_OK();
}

TEST(read_bytes_special_files) {
    unsigned char *d = (unsigned char *)"x";
    size_t n = 7;
    CHECK(gad_read_bytes(tpath("missing.txt"), 0, &d, &n) == GAD_ERR_IO);
    CHECK(d == NULL && n == 0);
    CHECK_ERR_HAS(GAD_ERR_IO, "read_bytes", "missing.txt", strerror(ENOENT));
    CHECK(gad_read_bytes(g_dir, 0, &d, &n) == GAD_ERR_IO);
    CHECK_ERR_HAS(GAD_ERR_IO, "read_bytes", "a directory");
    CHECK(gad_read_bytes("/dev/zero", 0, &d, &n) == GAD_ERR_IO); /* endless if read */
    CHECK_ERR_HAS(GAD_ERR_IO, "read_bytes", "character device");
    /* a FIFO with no writer: refused at once, never waited on */
    unlink(tpath("fifo"));
    CHECK(mkfifo(tpath("fifo"), 0600) == 0);
    CHECK(gad_read_bytes(tpath("fifo"), 0, &d, &n) == GAD_ERR_IO);
    CHECK_ERR_HAS(GAD_ERR_IO, "read_bytes", "FIFO");
    CHECK(gad_read_csv(tpath("fifo"), NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_IO, "read_csv", "FIFO");
    unlink(tpath("fifo"));
    CHECK(gad_read_bytes(NULL, 0, &d, &n) == GAD_ERR_DOMAIN);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "read_bytes", "path");
    CHECK(gad_read_bytes(tpath("x"), 0, NULL, &n) == GAD_ERR_DOMAIN);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "read_bytes", "data");
}

/* A gzip file written by hand (stored blocks): decoded where zlib is, a
 * clear unsupported error where it is not. Two members decode to their
 * concatenation. */
TEST(read_bytes_gzip_by_hand) {
    const char *a = "In the beginning God created", *b = " the heaven and the earth.\n";
    unsigned char gz[256];
    size_t na = gzip_stored((const unsigned char *)a, strlen(a), gz);
    size_t nb = gzip_stored((const unsigned char *)b, strlen(b), gz + na);
    CHECK(write_file("two.gz", gz, na + nb));
    CHECK(write_file("one.dat", gz, na)); /* the name says nothing */
    unsigned char *d = NULL;
    size_t n = 0;
    if (gad_zlib_available()) {
        CHECK(gad_read_bytes(tpath("two.gz"), 0, &d, &n) == GAD_OK);
        CHECK(d && n == strlen(a) + strlen(b) && memcmp(d, a, strlen(a)) == 0 &&
              memcmp(d + strlen(a), b, strlen(b)) == 0 && d[n] == 0);
        gad_mem_free(d);
        CHECK(gad_read_bytes(tpath("one.dat"), 0, &d, &n) == GAD_OK);
        CHECK(d && n == strlen(a) && memcmp(d, a, n) == 0);
        gad_mem_free(d);
        /* the CRC is checked: one bit of it flipped */
        gz[na - 6] ^= 1;
        CHECK(write_file("badcrc.gz", gz, na));
        CHECK(gad_read_bytes(tpath("badcrc.gz"), 0, &d, &n) == GAD_ERR_FORMAT && !d);
        CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "badcrc.gz", "not a valid gzip file");
        gz[na - 6] ^= 1;
        /* a stored block whose NLEN is not ~LEN */
        gz[13] ^= 0x40;
        CHECK(write_file("badlen.gz", gz, na));
        CHECK(gad_read_bytes(tpath("badlen.gz"), 0, &d, &n) == GAD_ERR_FORMAT);
        CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "badlen.gz", "not a valid gzip");
        gz[13] ^= 0x40;
        /* a trailer that claims 4 GiB - 1 bytes: the claim is never
         * trusted for an allocation, and the length check fails */
        unsigned char isz[4];
        memcpy(isz, gz + na - 4, 4);
        put_le32(gz + na - 4, 0xffffffffu);
        CHECK(write_file("claim.gz", gz, na));
        CHECK(gad_read_bytes(tpath("claim.gz"), 0, &d, &n) == GAD_ERR_FORMAT);
        CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "claim.gz", "not a valid gzip");
        memcpy(gz + na - 4, isz, 4);
        /* a header whose extra field (FEXTRA) claims 65535 bytes that the
         * file does not have */
        unsigned char hx[16] = {0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 'a', 'b'};
        CHECK(write_file("extra.gz", hx, 14));
        CHECK(gad_read_bytes(tpath("extra.gz"), 0, &d, &n) == GAD_ERR_FORMAT);
        CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "extra.gz", "truncated");
        /* bytes after the last member that are not a member */
        memcpy(gz + na, "junk", 4);
        CHECK(write_file("junk.gz", gz, na + 4));
        CHECK(gad_read_bytes(tpath("junk.gz"), 0, &d, &n) == GAD_ERR_FORMAT);
        CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "4 bytes after the gzip stream",
                      "not another gzip member");
        /* one trailing byte only */
        CHECK(write_file("junk1.gz", gz, na + 1));
        CHECK(gad_read_bytes(tpath("junk1.gz"), 0, &d, &n) == GAD_ERR_FORMAT);
        CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "1 bytes after");
    } else {
        CHECK(gad_read_bytes(tpath("two.gz"), 0, &d, &n) == GAD_ERR_UNSUPPORTED && !d);
        CHECK_ERR_HAS(GAD_ERR_UNSUPPORTED, "read_bytes", "two.gz", "gzip", "without zlib");
        CHECK(gad_read_csv(tpath("one.dat"), NULL) == NULL);
        CHECK_ERR_HAS(GAD_ERR_UNSUPPORTED, "read_csv", "without zlib");
    }
}

/* Every cut of a gzip file is an error (truncated, or invalid where the
 * cut leaves a header that cannot be one), never a success or a hang. */
TEST(read_bytes_gzip_truncated) {
    if (!gad_zlib_available()) {
        printf("  (no zlib: the truncated files are refused as gzip, checked above)\n");
        return;
    }
    const char *a = "truncated streams must fail";
    unsigned char gz[128];
    size_t n = gzip_stored((const unsigned char *)a, strlen(a), gz);
    int cuts = 0, bad = 0;
    for (size_t cut = 2; cut < n; cut++) {
        CHECK(write_file("cut.gz", gz, cut));
        unsigned char *d = NULL;
        size_t m = 0;
        gad_status st = gad_read_bytes(tpath("cut.gz"), 0, &d, &m);
        const gad_error *e = gad_last_error();
        int ok = st == GAD_ERR_FORMAT && !d && e && strstr(e->text, "cut.gz") &&
                 strstr(e->text, "truncated");
        if (!ok) {
            fprintf(stderr, "  cut at %zu of %zu: %s\n", cut, n, e ? e->text : "no error");
            bad++;
        }
        gad_clear_error();
        cuts++;
    }
    CHECK(bad == 0 && cuts > 40);
#ifdef GAD_HAVE_ZLIB
    /* and real compression cut in the middle */
    unsigned char *text = some_text(100000, 3);
    size_t zn = 0;
    unsigned char *z = gzip_zlib(text, 100000, &zn);
    CHECK(z && zn > 100 && write_file("half.gz", z, zn / 2));
    unsigned char *d = NULL;
    size_t m = 0;
    CHECK(gad_read_bytes(tpath("half.gz"), 0, &d, &m) == GAD_ERR_FORMAT);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "truncated");
    free(z);
    free(text);
#endif
}

#ifdef GAD_HAVE_ZLIB
/* An allocator that counts the bytes live and their peak. */
static size_t g_live, g_peak;

static void *count_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    g_live += size;
    if (g_live > g_peak) g_peak = g_live;
    return p;
}

static void count_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    g_live -= size;
    free(p);
}
#endif

/* Real gzip files: a text read back exactly; a bomb (64 MiB of zeros in
 * about 64 KiB) stopped at the limit with memory bounded by it; the limit
 * exact at the boundary. */
TEST(read_bytes_gzip_zlib) {
#ifndef GAD_HAVE_ZLIB
    printf("  (built without zlib: nothing to compress with)\n");
#else
    size_t tn = 300000;
    unsigned char *text = some_text(tn, 7), *d = NULL;
    size_t zn = 0, n = 0;
    unsigned char *z = gzip_zlib(text, tn, &zn);
    CHECK(z && zn < tn / 2 && write_file("text.txt.gz", z, zn));
    CHECK(gad_read_bytes(tpath("text.txt.gz"), 0, &d, &n) == GAD_OK);
    CHECK(d && n == tn && memcmp(d, text, tn) == 0 && d[tn] == 0);
    gad_mem_free(d);
    /* the limit at the boundary: tn is fine, tn - 1 is not */
    CHECK(gad_read_bytes(tpath("text.txt.gz"), tn, &d, &n) == GAD_OK && n == tn);
    gad_mem_free(d);
    CHECK(gad_read_bytes(tpath("text.txt.gz"), tn - 1, &d, &n) == GAD_ERR_FORMAT && !d);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "inflates to more than the limit");
    free(z);
    free(text);

    size_t bomb = (size_t)64 << 20, limit = (size_t)1 << 20;
    unsigned char *zeros = calloc(bomb, 1);
    z = zeros ? gzip_zlib(zeros, bomb, &zn) : NULL;
    free(zeros);
    CHECK(z && zn < bomb / 500 && write_file("bomb.gz", z, zn));
    free(z);
    gad_cache_trim();
    gad_set_allocator(&(gad_allocator){count_alloc, count_free, NULL});
    g_live = g_peak = 0;
    gad_status st = gad_read_bytes(tpath("bomb.gz"), limit, &d, &n);
    size_t peak = g_peak, live = g_live;
    gad_set_allocator(NULL);
    CHECK(st == GAD_ERR_FORMAT && d == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_bytes", "bomb.gz", "limit of 1048576 bytes");
    printf("  a 64 MiB gzip bomb under a 1 MiB limit: peak %zu bytes allocated\n", peak);
    /* the buffer as it grows (the old and the new one at once: 1.5 times
     * the limit) and zlib's state */
    CHECK_MSG(peak < limit + limit / 2 + 200000, "peak %zu", peak);
    CHECK(live == 0);
    /* the CSV reader stops it the same way */
    gad_csv_opts o = {.max_bytes = limit};
    CHECK(gad_read_csv(tpath("bomb.gz"), &o) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "limit of 1048576 bytes");
#endif
}

/* An allocator that fails the k-th allocation (from 0) and counts the
 * bytes live, for the allocation-failure sweep. */
static long g_fail_at, g_calls;
static size_t g_sweep_live;

static void *sweep_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx;
    if (g_calls++ == g_fail_at) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
        return NULL;
    g_sweep_live += size;
    return p;
}

static void sweep_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    g_sweep_live -= size;
    free(p);
}

/* Fail each allocation of a CSV read in turn (a plain file, and a gzip
 * one where zlib is): every failure is a memory error and frees all it
 * took; past the last allocation the read succeeds. */
TEST(read_alloc_failure_sweep) {
    const char *text = "a,b\n1,2\n3,4\n";
    unsigned char gz[128];
    size_t gn = gzip_stored((const unsigned char *)text, strlen(text), gz);
    CHECK(write_str("sweep.csv", text) && write_file("sweep.csv.gz", gz, gn));
    const char *files[2] = {"sweep.csv", "sweep.csv.gz"};
    for (int f = 0; f < (gad_zlib_available() ? 2 : 1); f++) {
        int failures = 0, done = 0;
        for (long k = 0; k < 200 && !done; k++) {
            gad_cache_trim();
            gad_mem_stats m0, m1;
            gad_mem_stats_get(&m0);
            g_fail_at = k, g_calls = 0, g_sweep_live = 0;
            gad_set_allocator(&(gad_allocator){sweep_alloc, sweep_free, NULL});
            gad_scope_begin();
            gad_tensor *t = gad_read_csv(tpath(files[f]), &(gad_csv_opts){.header = 1});
            int ok = t && gad_dim(t, 0) == 2 && gad_item(gad_sum_all(t)) == 10;
            gad_scope_end();
            gad_set_allocator(NULL); /* empties the caches, into sweep_free */
            size_t live = g_sweep_live;
            gad_mem_stats_get(&m1);
            /* a failed read gives back every byte it took (a successful
             * one may leave core's per-thread structures grown) */
            CHECK_MSG(m1.live_tensors == m0.live_tensors && (t || live == 0),
                      "%s, allocation %ld: %zu bytes left", files[f], k, live);
            if (t) {
                CHECK(ok);
                done = 1;
            } else {
                const gad_error *e = gad_last_error();
                CHECK_MSG(e && e->kind == GAD_ERR_MEMORY, "%s, allocation %ld: %s", files[f],
                          k, e ? e->text : "no error");
                failures++;
            }
            gad_clear_error();
        }
        CHECK(done && failures >= 2);
        printf("  %s: %d allocations failed in turn, each a memory error\n", files[f],
               failures);
    }
}

/* -------------------------------------------------------------- read_csv */

TEST(csv_good) {
    CHECK(write_str("good.csv", "x,y,label\n"
                                "1,2.5,-3\r\n"
                                "\n"
                                "  4e1 ,\t0.1 ,inf\n"
                                "   \n"
                                "-0.0,1e-3,+7")); /* no final newline */
    gad_tensor *t = gad_read_csv(tpath("good.csv"), &(gad_csv_opts){.header = 1});
    CHECK(t && gad_dtype(t) == GAD_F32);
    CHECK_SHAPE(t, 3, 3);
    float v[9];
    CHECK(gad_read_f32(t, v, 9) == GAD_OK);
    const float want[9] = {1, 2.5f, -3, 40, 0.1f, INFINITY, -0.0f, 1e-3f, 7};
    CHECK(memcmp(v, want, sizeof v) == 0);
    gad_tensor *t64 = gad_read_csv(tpath("good.csv"), &(gad_csv_opts){.header = 1, .dtype = GAD_F64});
    double w[9];
    CHECK(t64 && gad_dtype(t64) == GAD_F64 && gad_read_f64(t64, w, 9) == GAD_OK);
    CHECK(w[4] == 0.1 && w[7] == 1e-3 && w[3] == 40 && isinf(w[5]) && signbit(w[6]));
    /* other delimiters; nan */
    CHECK(write_str("semi.csv", "1;2\nnan;-4\n"));
    gad_tensor *s = gad_read_csv(tpath("semi.csv"), &(gad_csv_opts){.delimiter = ';'});
    CHECK_SHAPE(s, 2, 2);
    float sv[4];
    CHECK(s && gad_read_f32(s, sv, 4) == GAD_OK && sv[0] == 1 && isnan(sv[2]) && sv[3] == -4);
    CHECK(write_str("tabs.tsv", "1\t2\t3\n4\t5\t6\n"));
    CHECK_VALUES(gad_read_csv(tpath("tabs.tsv"), &(gad_csv_opts){.delimiter = '\t'}), 0, 1, 2,
                 3, 4, 5, 6);
    /* one column, and a header without a final newline after data */
    CHECK(write_str("col.csv", "a\n5\n6\n"));
    gad_tensor *c = gad_read_csv(tpath("col.csv"), &(gad_csv_opts){.header = 1});
    CHECK_SHAPE(c, 2, 1);
    CHECK_VALUES(c, 0, 5, 6);
    CHECK_OK();
}

/* The numbers are read in the "C" locale even after setlocale picked one
 * whose decimal point is ',' (when such a locale is installed). */
TEST(csv_locale) {
    const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
    const char *got = NULL;
    for (int i = 0; i < 4 && !got; i++) got = setlocale(LC_NUMERIC, names[i]);
    if (!got) {
        printf("  (no locale with a decimal comma installed: not checked)\n");
        return;
    }
    CHECK(write_str("loc.csv", "2.5,3\n"));
    CHECK_VALUES(gad_read_csv(tpath("loc.csv"), NULL), 0, 2.5, 3);
    setlocale(LC_NUMERIC, "C");
}

TEST(csv_bad_fields) {
    static const struct {
        const char *text, *needle1, *needle2;
        gad_dtype_t dt;
    } c[] = {
        {"1,2\n3,x\n", "line 2, column 2", "'x' is not a number", GAD_F32},
        {"1,2\n3,4\n5,6abc\n", "line 3, column 2", "'6abc'", GAD_F32},
        {"1,,3\n", "line 1, column 2", "an empty field", GAD_F32},
        {"1,2,\n", "line 1, column 3", "an empty field", GAD_F32},
        {"1e39,0\n", "line 1, column 1", "out of the range of f32", GAD_F32},
        {"0,1e999\n", "line 1, column 2", "out of the range of f64", GAD_F64},
        {"1,\"2\"\n", "line 1, column 2", "'\"2\"' is not a number", GAD_F32},
        {"\n\n7,8\n9 9,1\n", "line 4, column 1", "'9 9'", GAD_F32},
        {"a,b\n1,2\n", "line 1, column 1", "'a' is not a number", GAD_F32}, /* no header */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        CHECK(write_str("bad.csv", c[i].text));
        gad_tensor *t = gad_read_csv(tpath("bad.csv"), &(gad_csv_opts){.dtype = c[i].dt});
        CHECK_MSG(t == NULL, "case %zu", i);
        CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "bad.csv", c[i].needle1, c[i].needle2);
    }
    /* a NUL byte inside a field */
    CHECK(write_file("nul.csv", "1,2\n3,4\0" "5\n", 9));
    CHECK(gad_read_csv(tpath("nul.csv"), NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "line 2, column 2", "'4\\x005'");
    /* 1e-50 underflows f32 to 0: not an error */
    CHECK(write_str("tiny.csv", "1e-50\n"));
    CHECK_VALUES(gad_read_csv(tpath("tiny.csv"), NULL), 0, 0);
    /* a field of 300 digits is refused by its length, not read past */
    char longf[320];
    memset(longf, '7', 300);
    strcpy(longf + 300, "\n");
    CHECK(write_str("long.csv", longf));
    CHECK(gad_read_csv(tpath("long.csv"), NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "a field of 300 characters");
}

TEST(csv_ragged_and_empty) {
    CHECK(write_str("r1.csv", "1,2,3\n4,5,6\n7,8\n"));
    CHECK(gad_read_csv(tpath("r1.csv"), NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "r1.csv", "line 3 has 2 fields, line 1 has 3");
    CHECK(write_str("r2.csv", "h\n\n1,2\n3,4,5\n"));
    CHECK(gad_read_csv(tpath("r2.csv"), &(gad_csv_opts){.header = 1}) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "line 4 has more fields than the 2 of line 3");
    CHECK(write_str("r3.csv", "1,2\n3\n"));
    CHECK(gad_read_csv(tpath("r3.csv"), NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "line 2 has 1 field, line 1 has 2");
    CHECK(write_str("e0.csv", ""));
    CHECK(gad_read_csv(tpath("e0.csv"), NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "e0.csv", "no rows of numbers", "empty");
    CHECK(write_str("e1.csv", "a,b,c\n"));
    CHECK(gad_read_csv(tpath("e1.csv"), &(gad_csv_opts){.header = 1}) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "only a header");
    CHECK(write_str("e2.csv", "\n  \n\r\n"));
    CHECK(gad_read_csv(tpath("e2.csv"), NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "only empty lines");
}

/* A file that claims to be huge (here: a very long line of fields, and a
 * file past the limit) costs memory in proportion to its real bytes and
 * the limit, never to a claimed count. */
TEST(csv_limits_and_options) {
    /* 200000 one-digit fields on one line: [1, 200000] */
    size_t nf = 200000;
    char *big = malloc(2 * nf + 1);
    for (size_t i = 0; i < nf; i++) big[2 * i] = (char)('0' + i % 10), big[2 * i + 1] = ',';
    big[2 * nf - 1] = '\n';
    CHECK(write_file("wide.csv", big, 2 * nf));
    free(big);
    gad_tensor *t = gad_read_csv(tpath("wide.csv"), NULL);
    CHECK_SHAPE(t, 1, (int64_t)nf);
    CHECK(t && gad_item(gad_sum_all(gad_cast(t, GAD_F64))) == 4.5 * (double)nf);
    CHECK(gad_read_csv(tpath("wide.csv"), &(gad_csv_opts){.max_bytes = 1000}) == NULL);
    CHECK_ERR_HAS(GAD_ERR_FORMAT, "read_csv", "holds more than the limit of 1000 bytes");
    /* bad options */
    CHECK(gad_read_csv(tpath("wide.csv"), &(gad_csv_opts){.dtype = GAD_I64}) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "read_csv", "f32 or f64", "i64");
    CHECK(gad_read_csv(tpath("wide.csv"), &(gad_csv_opts){.delimiter = '.'}) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "read_csv", "delimiter");
    CHECK(gad_read_csv(tpath("wide.csv"), &(gad_csv_opts){.delimiter = ' '}) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "read_csv", "delimiter");
    CHECK(gad_read_csv(NULL, NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "read_csv", "path");
    CHECK(gad_read_csv(tpath("nothing.csv"), NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_IO, "read_csv", "nothing.csv");
}

/* A gzipped CSV reads as the plain one. */
TEST(csv_gzip) {
    const char *text = "p,q\n0.5,1\n2,3\n";
    unsigned char gz[128];
    size_t n = gzip_stored((const unsigned char *)text, strlen(text), gz);
    CHECK(write_file("small.csv.gz", gz, n));
    gad_tensor *t = gad_read_csv(tpath("small.csv.gz"), &(gad_csv_opts){.header = 1});
    if (gad_zlib_available()) {
        CHECK_SHAPE(t, 2, 2);
        CHECK_VALUES(t, 0, 0.5, 1, 2, 3);
    } else {
        CHECK(t == NULL);
        CHECK_ERR_HAS(GAD_ERR_UNSUPPORTED, "read_csv", "without zlib");
    }
}

/* ------------------------------------------------------------- sampler */

/* The batches of one epoch into out (at most cap indices); their count in
 * *nb and each size in sizes. Returns the number of indices. */
static int64_t one_epoch(gad_sampler *s, int64_t *out, int64_t cap, int64_t *sizes,
                         int64_t *nb) {
    int64_t k = 0, b = 0;
    gad_tensor *idx;
    int r;
    while ((r = gad_sampler_next(s, &idx)) == 1) {
        int64_t m = gad_numel(idx);
        CHECK(gad_dtype(idx) == GAD_I64 && gad_rank(idx) == 1);
        if (k + m <= cap) CHECK(gad_read_i64(idx, out + k, (size_t)m) == GAD_OK);
        if (sizes) sizes[b] = m;
        k += m, b++;
    }
    CHECK(r == 0 && idx == NULL);
    *nb = b;
    return k;
}

/* Each index of 0..n-1 exactly once in v[0..k). */
static int is_permutation(const int64_t *v, int64_t k, int64_t n) {
    if (k != n) return 0;
    char *seen = calloc((size_t)n + 1, 1);
    int ok = 1;
    for (int64_t i = 0; i < k && ok; i++) {
        ok = v[i] >= 0 && v[i] < n && !seen[v[i]];
        if (ok) seen[v[i]] = 1;
    }
    free(seen);
    return ok;
}

TEST(sampler_epochs) {
    gad_scope_begin();
    int64_t n = 103, v[3][103], sizes[16], nb;
    gad_sampler *s = gad_sampler_new(n, 10, 42, NULL);
    CHECK(s && gad_sampler_num_batches(s) == 11);
    for (int e = 0; e < 3; e++) {
        CHECK(gad_sampler_epoch(s) == e && gad_sampler_batch_index(s) == 0);
        CHECK(one_epoch(s, v[e], n, sizes, &nb) == n && nb == 11);
        CHECK(is_permutation(v[e], n, n));
        for (int b = 0; b < 10; b++) CHECK(sizes[b] == 10);
        CHECK(sizes[10] == 3); /* the last batch is kept */
    }
    CHECK(gad_sampler_epoch(s) == 3);
    CHECK(memcmp(v[0], v[1], sizeof v[0]) != 0 && memcmp(v[1], v[2], sizeof v[0]) != 0);
    int64_t ident = 0;
    for (int64_t i = 0; i < n; i++) ident += v[0][i] == i;
    CHECK(ident < 10); /* shuffled: a random permutation fixes ~1 point */
    gad_sampler_free(s);

    /* drop_last: 10 full batches, 100 distinct indices */
    s = gad_sampler_new(n, 10, 42, &(gad_sampler_opts){.drop_last = 1});
    CHECK(s && gad_sampler_num_batches(s) == 10);
    int64_t w[103];
    CHECK(one_epoch(s, w, n, sizes, &nb) == 100 && nb == 10);
    for (int b = 0; b < 10; b++) CHECK(sizes[b] == 10);
    /* the same order as without drop_last, minus the tail */
    CHECK(memcmp(w, v[0], 100 * sizeof w[0]) == 0);
    char seen[103] = {0};
    int distinct = 1;
    for (int i = 0; i < 100; i++) distinct &= !seen[w[i]]++;
    CHECK(distinct);
    gad_sampler_free(s);

    /* n a multiple of batch: drop_last changes nothing */
    s = gad_sampler_new(40, 8, 1, &(gad_sampler_opts){.drop_last = 1});
    CHECK(s && gad_sampler_num_batches(s) == 5 && one_epoch(s, w, 103, sizes, &nb) == 40);
    CHECK(is_permutation(w, 40, 40) && nb == 5);
    gad_sampler_free(s);
    /* batch larger than n: one batch of n, or none with drop_last */
    s = gad_sampler_new(5, 8, 1, NULL);
    CHECK(s && gad_sampler_num_batches(s) == 1 && one_epoch(s, w, 103, sizes, &nb) == 5);
    CHECK(nb == 1 && sizes[0] == 5 && is_permutation(w, 5, 5));
    gad_sampler_free(s);
    s = gad_sampler_new(5, 8, 1, &(gad_sampler_opts){.drop_last = 1});
    CHECK(s && gad_sampler_num_batches(s) == 0 && one_epoch(s, w, 103, sizes, &nb) == 0);
    CHECK(nb == 0 && gad_sampler_epoch(s) == 1);
    gad_sampler_free(s);
    /* no examples */
    s = gad_sampler_new(0, 4, 1, NULL);
    CHECK(s && gad_sampler_num_batches(s) == 0 && one_epoch(s, w, 103, sizes, &nb) == 0);
    gad_sampler_free(s);
    /* sequential: 0..n-1 every epoch */
    s = gad_sampler_new(7, 3, 9, &(gad_sampler_opts){.sequential = 1});
    for (int e = 0; e < 2; e++) {
        CHECK(one_epoch(s, w, 103, sizes, &nb) == 7 && nb == 3 && sizes[2] == 1);
        for (int i = 0; i < 7; i++) CHECK(w[i] == i);
    }
    gad_sampler_free(s);
    gad_scope_end();
    CHECK_OK();
}

/* The permutations are the ones gad.h documents, written out here from
 * gad_rng and the seed formula: Fisher-Yates by gad_rng_int, seeded by
 * splitmix64's finalizer of seed + (epoch + 1) * golden. */
static uint64_t doc_epoch_seed(uint64_t seed, int64_t epoch) {
    uint64_t z = seed + (uint64_t)(epoch + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

TEST(sampler_generator_and_determinism) {
    gad_scope_begin();
    int64_t n = 50, got[50], want[50], nb, other[50];
    gad_sampler *s = gad_sampler_new(n, 7, 2024, NULL);
    gad_sampler *t = gad_sampler_new(n, 7, 2024, NULL);
    gad_sampler *u = gad_sampler_new(n, 7, 2025, NULL);
    gad_rng *r = gad_rng_new(0);
    int differ = 0;
    for (int64_t e = 0; e < 4; e++) {
        CHECK(gad_sampler_epoch_seed(2024, e) == doc_epoch_seed(2024, e));
        gad_rng_seed(r, doc_epoch_seed(2024, e));
        for (int64_t i = 0; i < n; i++) want[i] = i;
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = gad_rng_int(r, 0, i + 1), x = want[i];
            want[i] = want[j], want[j] = x;
        }
        CHECK(one_epoch(s, got, n, NULL, &nb) == n);
        CHECK_MSG(memcmp(got, want, sizeof got) == 0, "epoch %lld", (long long)e);
        CHECK(one_epoch(t, got, n, NULL, &nb) == n && memcmp(got, want, sizeof got) == 0);
        CHECK(one_epoch(u, other, n, NULL, &nb) == n && is_permutation(other, n, n));
        differ += memcmp(other, want, sizeof other) != 0;
    }
    CHECK(differ == 4); /* another seed, other permutations */
    CHECK(gad_sampler_epoch_seed(1, 0) != gad_sampler_epoch_seed(2, 0));
    CHECK(gad_sampler_epoch_seed(1, 0) != gad_sampler_epoch_seed(1, 1));

    /* seek: batch 3 of epoch 2 onwards, as if the run never stopped */
    gad_sampler *a = gad_sampler_new(n, 7, 5, NULL), *b = gad_sampler_new(n, 7, 5, NULL);
    gad_tensor *ia, *ib;
    CHECK(gad_sampler_num_batches(a) == 8);
    for (int k = 0; k < 2 * 9 + 3; k++) /* 2 epochs of 8 batches (and a 0), then 3 */
        CHECK(gad_sampler_next(a, &ia) >= 0);
    CHECK(gad_sampler_epoch(a) == 2 && gad_sampler_batch_index(a) == 3);
    CHECK(gad_sampler_seek(b, 2, 3) == GAD_OK);
    CHECK(gad_sampler_epoch(b) == 2 && gad_sampler_batch_index(b) == 3);
    for (int k = 0; k < 12; k++) {
        int ra = gad_sampler_next(a, &ia), rb = gad_sampler_next(b, &ib);
        CHECK(ra == rb);
        if (ra == 1 && rb == 1) {
            int64_t va[7], vb[7];
            CHECK(gad_numel(ia) == gad_numel(ib));
            CHECK(gad_read_i64(ia, va, 7) == GAD_OK && gad_read_i64(ib, vb, 7) == GAD_OK);
            CHECK(memcmp(va, vb, (size_t)gad_numel(ia) * sizeof va[0]) == 0);
        }
    }
    /* seeking back to the start of an epoch replays it */
    CHECK(gad_sampler_seek(a, 0, 0) == GAD_OK && one_epoch(a, got, n, NULL, &nb) == n);
    gad_rng_seed(r, doc_epoch_seed(5, 0));
    for (int64_t i = 0; i < n; i++) want[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = gad_rng_int(r, 0, i + 1), x = want[i];
        want[i] = want[j], want[j] = x;
    }
    CHECK(memcmp(got, want, sizeof got) == 0);
    gad_rng_free(r);
    gad_sampler_free(a);
    gad_sampler_free(b);
    gad_sampler_free(s);
    gad_sampler_free(t);
    gad_sampler_free(u);
    gad_scope_end();
    CHECK_OK();
}

TEST(sampler_errors) {
    CHECK(gad_sampler_new(-1, 4, 0, NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "sampler_new", "n = -1");
    CHECK(gad_sampler_new(10, 0, 0, NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "sampler_new", "batch = 0");
    CHECK(gad_sampler_new(INT64_MAX, 4, 0, NULL) == NULL);
    CHECK_ERR_HAS(GAD_ERR_MEMORY, "sampler_new", "cannot allocate");
    gad_tensor *t = (gad_tensor *)1;
    CHECK(gad_sampler_next(NULL, &t) == -1 && t == NULL);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "sampler_next", "sampler");
    gad_sampler *s = gad_sampler_new(10, 4, 0, NULL);
    CHECK(gad_sampler_seek(s, 0, 4) == GAD_ERR_DOMAIN);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "sampler_seek", "batch 4", "[0, 3]");
    CHECK(gad_sampler_seek(s, -1, 0) == GAD_ERR_DOMAIN);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "sampler_seek", "epoch -1");
    CHECK(gad_sampler_seek(s, 1, 3) == GAD_OK); /* the end of epoch 1 */
    CHECK(gad_sampler_next(s, &t) == 0 && gad_sampler_epoch(s) == 2);
    gad_sampler_free(s);
    gad_sampler_free(NULL);
    CHECK(gad_sampler_num_batches(NULL) == 0);
}

/* --------------------------------------------------------- integer gather */

TEST(gather_i64_data) {
    gad_scope_begin();
    /* values no f32 or f64 holds exactly: a round trip would change them */
    const int64_t big = INT64_MAX - 6;
    int64_t xv[12];
    for (int i = 0; i < 12; i++) xv[i] = big + (i % 7) - 3 * (i / 7);
    gad_tensor *x = gad_from_i64(xv, (int64_t[]){3, 4}, 2);
    /* gather along axis 0 with an index [2,4] (negatives wrap) */
    int64_t iv[8] = {2, 0, 1, -1, 0, 0, -3, 2};
    gad_tensor *g = gad_gather(x, 0, gad_from_i64(iv, (int64_t[]){2, 4}, 2));
    CHECK(g && gad_dtype(g) == GAD_I64 && !gad_is_tracked(g));
    CHECK_SHAPE(g, 2, 4);
    int64_t gv[8];
    CHECK(g && gad_read_i64(g, gv, 8) == GAD_OK);
    for (int p = 0; p < 8; p++) {
        int64_t r = iv[p] < 0 ? iv[p] + 3 : iv[p];
        CHECK_MSG(gv[p] == xv[r * 4 + p % 4], "position %d", p);
    }
    /* take along axis 1: one per row */
    gad_tensor *tk = gad_take(x, 1, gad_from_i64((int64_t[]){3, 0, -2}, (int64_t[]){3}, 1));
    int64_t tv[3];
    CHECK(tk && gad_dtype(tk) == GAD_I64 && gad_read_i64(tk, tv, 3) == GAD_OK);
    CHECK(tv[0] == xv[3] && tv[1] == xv[4] && tv[2] == xv[10]);
    /* on a transposed (strided) view */
    gad_tensor *gt = gad_gather(gad_transpose(x), 1, gad_from_i64((int64_t[]){2, 1, 0, 0},
                                                                   (int64_t[]){4, 1}, 2));
    int64_t gtv[4];
    CHECK(gt && gad_read_i64(gt, gtv, 4) == GAD_OK);
    CHECK(gtv[0] == xv[8] && gtv[1] == xv[5] && gtv[2] == xv[2] && gtv[3] == xv[3]);
    /* out of range: the index error names the op */
    CHECK(gad_gather(x, 0, gad_from_i64((int64_t[]){3, 0, 0, 0}, (int64_t[]){1, 4}, 2)) == NULL);
    CHECK_ERR_HAS(GAD_ERR_INDEX, "gather", "index 3 out of bounds for size 3");
    /* scatter_add stays float only */
    CHECK(gad_scatter_add(x, 0, gad_zeros((int64_t[]){3, 4}, 2, GAD_I64), x) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DTYPE, "scatter_add", "i64");
    gad_scope_end();
}

/* Rows by index, as a training loop batches examples and labels. */
TEST(index_select_rows) {
    gad_scope_begin();
    const int64_t N = 6, D = 3;
    int64_t lab[6] = {5, -9, (int64_t)1 << 60, 3, 0, INT64_MIN};
    gad_tensor *labels = gad_from_i64(lab, &N, 1);
    int64_t bv[4] = {5, 2, 2, -6};
    gad_tensor *b = gad_from_i64(bv, (int64_t[]){4}, 1);
    gad_tensor *y = gad_index_select(labels, 0, b);
    int64_t yv[4];
    CHECK(y && gad_dtype(y) == GAD_I64 && !gad_is_tracked(y));
    CHECK_SHAPE(y, 4);
    CHECK(y && gad_read_i64(y, yv, 4) == GAD_OK);
    CHECK(yv[0] == INT64_MIN && yv[1] == lab[2] && yv[2] == lab[2] && yv[3] == lab[0]);
    /* rows of a float matrix */
    float xv[18];
    for (int i = 0; i < 18; i++) xv[i] = 0.25f * (float)i - 1;
    gad_tensor *x = gad_from_f32(xv, (int64_t[]){N, D}, 2);
    gad_tensor *rows = gad_index_select(x, 0, b);
    CHECK_SHAPE(rows, 4, 3);
    float rv[12];
    CHECK(rows && gad_read_f32(rows, rv, 12) == GAD_OK);
    for (int i = 0; i < 4; i++)
        for (int d = 0; d < D; d++) {
            int64_t r = bv[i] < 0 ? bv[i] + N : bv[i];
            CHECK(rv[i * D + d] == xv[r * D + d]);
        }
    /* a middle axis and an index of rank 2: [2,5,3] by [2,2] on axis 1 ->
     * [2,2,2,3], against a naive loop */
    int64_t x3[30];
    for (int i = 0; i < 30; i++) x3[i] = 1000 + i * 7;
    int64_t i2[4] = {4, 0, -1, 2};
    gad_tensor *z = gad_index_select(gad_from_i64(x3, (int64_t[]){2, 5, 3}, 3), 1,
                                     gad_from_i64(i2, (int64_t[]){2, 2}, 2));
    CHECK_SHAPE(z, 2, 2, 2, 3);
    int64_t zv[24];
    CHECK(z && gad_read_i64(z, zv, 24) == GAD_OK);
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 4; k++)
            for (int c = 0; c < 3; c++) {
                int64_t r = i2[k] < 0 ? i2[k] + 5 : i2[k];
                CHECK(zv[(a * 4 + k) * 3 + c] == x3[(a * 5 + r) * 3 + c]);
            }
    /* a strided (transposed) index: [[4, 2], [0, -1]] read as its view */
    gad_tensor *it = gad_transpose(gad_from_i64((int64_t[]){4, 0, 2, -1}, (int64_t[]){2, 2}, 2));
    gad_tensor *zt = gad_index_select(labels, 0, it);
    int64_t ztv[4];
    CHECK_SHAPE(zt, 2, 2);
    CHECK(zt && gad_read_i64(zt, ztv, 4) == GAD_OK);
    CHECK(ztv[0] == lab[4] && ztv[1] == lab[2] && ztv[2] == lab[0] && ztv[3] == lab[5]);
    /* an empty index, a scalar index (drops the axis) */
    gad_tensor *e = gad_index_select(x, 0, gad_zeros((int64_t[]){0}, 1, GAD_I64));
    CHECK_SHAPE(e, 0, 3);
    gad_tensor *sc = gad_index_select(x, 0, gad_scalar(4, GAD_I64));
    CHECK_SHAPE(sc, 3);
    CHECK_VALUES(sc, 0, xv[12], xv[13], xv[14]);
    /* errors name index_select */
    CHECK(gad_index_select(x, 0, gad_from_i64((int64_t[]){6}, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR_HAS(GAD_ERR_INDEX, "index_select", "index 6 out of bounds for size 6");
    CHECK(gad_index_select(x, 2, b) == NULL);
    CHECK_ERR_HAS(GAD_ERR_SHAPE, "index_select", "axis 2");
    CHECK(gad_index_select(x, 0, gad_cast(b, GAD_F32)) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DTYPE, "index_select", "i64");
    int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 2};
    CHECK(gad_index_select(gad_zeros(s8, 8, GAD_F32), 7, gad_zeros((int64_t[]){1, 1}, 2,
                                                                    GAD_I64)) == NULL);
    CHECK_ERR_HAS(GAD_ERR_SHAPE, "index_select", "rank 9");
    CHECK(gad_index_select(NULL, 0, b) == NULL);
    CHECK_ERR_HAS(GAD_ERR_DOMAIN, "index_select", "NULL");
    gad_scope_end();
}

/* The gradient of float rows picked by index: rows picked twice add. */
static gad_tensor *sel_fn(void *ctx, gad_tensor *const *in, int n) {
    (void)n;
    return gad_index_select(in[0], *(int *)ctx, in[1]);
}

TEST(index_select_gradient) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new(11);
    gad_tensor *x = gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){5, 3}, 2, GAD_F64,
                                                            0, 1));
    gad_tensor *idx = gad_from_i64((int64_t[]){1, 4, 1, 1, -5}, (int64_t[]){5}, 1);
    gad_tensor *w = gad_rng_normal_tensor(r, (int64_t[]){5, 3}, 2, GAD_F64, 0, 1);
    gad_tensor *y = gad_index_select(x, 0, idx);
    CHECK(y && gad_is_tracked(y));
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_mul(y, w)), &x, 1, &g) == GAD_OK);
    double wv[15], gv[15], want[15] = {0};
    CHECK(gad_read_f64(w, wv, 15) == GAD_OK && gad_read_f64(g, gv, 15) == GAD_OK);
    const int64_t iv[5] = {1, 4, 1, 1, 0};
    for (int i = 0; i < 5; i++)
        for (int d = 0; d < 3; d++) want[iv[i] * 3 + d] += wv[i * 3 + d];
    for (int k = 0; k < 15; k++) CHECK_NEAR(gv[k], want[k], 1e-12);
    /* and finite differences, on axis 1 with a 2-D index */
    int axis = 1;
    gad_tensor *in[2] = {x, gad_from_i64((int64_t[]){2, 0, 2, 1}, (int64_t[]){2, 2}, 2)};
    gad_gradcheck_result res;
    CHECK(gad_gradcheck(sel_fn, &axis, in, 2, NULL, &res) == GAD_OK && res.passed);
    gad_rng_free(r);
    gad_scope_end();
    CHECK_OK();
}

/* Each test in a scope of its own: what it makes without one is freed. */
#define RUN_SCOPED(name) \
    do {                 \
        gad_scope_begin(); \
        RUN(name);       \
        gad_scope_end(); \
    } while (0)

int main(void) {
    if (test_make_tmpdir(g_dir, sizeof g_dir, "gad_data", 0)) return 1;
    printf("zlib: %s\n", gad_zlib_available() ? "yes" : "no");
    RUN_SCOPED(read_bytes_plain);
    RUN_SCOPED(read_bytes_special_files);
    RUN_SCOPED(read_bytes_gzip_by_hand);
    RUN_SCOPED(read_bytes_gzip_truncated);
    RUN_SCOPED(read_bytes_gzip_zlib);
    RUN_SCOPED(read_alloc_failure_sweep);
    RUN_SCOPED(csv_good);
    RUN_SCOPED(csv_locale);
    RUN_SCOPED(csv_bad_fields);
    RUN_SCOPED(csv_ragged_and_empty);
    RUN_SCOPED(csv_limits_and_options);
    RUN_SCOPED(csv_gzip);
    RUN_SCOPED(sampler_epochs);
    RUN_SCOPED(sampler_generator_and_determinism);
    RUN_SCOPED(sampler_errors);
    RUN_SCOPED(gather_i64_data);
    RUN_SCOPED(index_select_rows);
    RUN_SCOPED(index_select_gradient);
    test_remove_tree(g_dir, 0);
    return test_summary();
}
