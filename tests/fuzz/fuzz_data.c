/* fuzz_data.c: the data-reader fuzzer (libFuzzer entry point).
 *
 * The input is one byte of options, then the content of a file: bit 0 of
 * the first byte asks for a header row, bit 1 for f64, bits 2-3 pick the
 * delimiter (',', ';', '\t', '|'). The file is written to a temporary file
 * (one per process, rewritten for every input) and read with
 * gad_read_bytes and gad_read_csv under a limit of 1 MiB. The invariants
 * (a violation calls abort()):
 *  - no crash, no sanitizer report, no leak (LeakSanitizer, and gad's live
 *    tensor and storage counts return to where they were);
 *  - a failure records an error of kind format, unsupported (gzip without
 *    zlib) or memory, with the function's op and a non-empty message; a
 *    CSV format error names the file;
 *  - gad_read_bytes of a file that does not start with gzip's magic gives
 *    its bytes back exactly, NUL-terminated; of a gzip file, at most the
 *    limit;
 *  - a CSV read gives a [rows, cols] tensor of the dtype asked for, with
 *    rows * cols at most half the bytes read (plus one), and its values
 *    printed back with the same delimiter (%.9g for f32, %.17g for f64:
 *    enough digits to round-trip) read back bit for bit (NaN as NaN). */
#include "gad.h"

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_data"
#include "fuzz_fail.h"

#define LIMIT ((size_t)1 << 20)

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
    snprintf(dir_path, sizeof dir_path, "%s/gad_fuzz_data.XXXXXX", tmp); /* mkdtemp's template */
    if (!mkdtemp(dir_path)) {
        perror("fuzz_data: mkdtemp");
        abort();
    }
    snprintf(in_path, sizeof in_path, "%s/in.csv", dir_path);
    snprintf(out_path, sizeof out_path, "%s/out.csv", dir_path);
    atexit(cleanup);
}

static void write_file(const char *path, const uint8_t *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror("fuzz_data: open");
        abort();
    }
    while (size > 0) {
        ssize_t w = write(fd, data, size);
        if (w <= 0) {
            perror("fuzz_data: write");
            abort();
        }
        data += w;
        size -= (size_t)w;
    }
    close(fd);
}

static void check_failure(const char *op) {
    const gad_error *e = check_error_recorded(op);
    if (e->kind != GAD_ERR_FORMAT && e->kind != GAD_ERR_UNSUPPORTED &&
        e->kind != GAD_ERR_MEMORY)
        fail("%s failed with a %s error: %s", op, gad_status_str(e->kind), e->text);
    if (strcmp(e->op, op) != 0) fail("%s failed with op '%s'", op, e->op);
    if (e->kind == GAD_ERR_FORMAT && !strstr(e->message, "in.csv"))
        fail("%s: a format error that does not name the file: %s", op, e->text);
    gad_clear_error();
}

/* Write t's values as CSV and read them back: the same bits. */
static void round_trip(gad_tensor *t, const gad_csv_opts *o) {
    int64_t rows = gad_dim(t, 0), cols = gad_dim(t, 1), n = rows * cols;
    double *v = malloc((size_t)n * sizeof *v), *w = malloc((size_t)n * sizeof *w);
    if (!v || !w || gad_read_f64(t, v, (size_t)n) != GAD_OK) abort();
    FILE *f = fopen(out_path, "wb");
    if (!f) abort();
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            fprintf(f, o->dtype == GAD_F32 ? "%.9g%c" : "%.17g%c", v[r * cols + c],
                    c + 1 < cols ? o->delimiter : '\n');
    fclose(f);
    gad_csv_opts o2 = *o;
    o2.header = 0;
    o2.max_bytes = 0; /* printed numbers may be longer than the input's */
    gad_tensor *u = gad_read_csv(out_path, &o2);
    if (!u) fail("the CSV written back does not read: %s", gad_last_error()->text);
    if (gad_dim(u, 0) != rows || gad_dim(u, 1) != cols || gad_dtype(u) != o->dtype)
        fail("the CSV written back reads as another shape");
    if (gad_read_f64(u, w, (size_t)n) != GAD_OK) abort();
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&v[i], &w[i], sizeof v[i]) != 0 && !(isnan(v[i]) && isnan(w[i])))
            fail("value %lld changed in a round trip: %.17g -> %.17g", (long long)i, v[i],
                 w[i]);
    free(v);
    free(w);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("OMP_WAIT_POLICY", "passive", 0);
    setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    setup();
    static const char delims[4] = {',', ';', '\t', '|'};
    gad_csv_opts o = {.header = data[0] & 1, .dtype = data[0] & 2 ? GAD_F64 : GAD_F32,
                      .delimiter = delims[(data[0] >> 2) & 3], .max_bytes = LIMIT};
    const uint8_t *file = data + 1;
    size_t n = size - 1;
    write_file(in_path, file, n);
    gad_clear_error();
    gad_mem_stats m0, m1;
    gad_mem_stats_get(&m0);
    gad_scope_begin();

    unsigned char *bytes = NULL;
    size_t nb = 0;
    int gz = n >= 2 && file[0] == 0x1f && file[1] == 0x8b;
    if (gad_read_bytes(in_path, LIMIT, &bytes, &nb) != GAD_OK) {
        if (bytes || nb) fail("read_bytes failed but gave a buffer");
        if (!gz) fail("read_bytes of a plain file of %zu bytes failed", n);
        check_failure("read_bytes");
    } else {
        if (gad_last_error()) fail("read_bytes succeeded with an error pending");
        if (!gz && (nb != n || memcmp(bytes, file, n) != 0))
            fail("read_bytes changed a plain file");
        if (nb > LIMIT || bytes[nb] != 0) fail("read_bytes: %zu bytes or no NUL", nb);
    }

    gad_tensor *t = gad_read_csv(in_path, &o);
    if (!t) {
        check_failure("read_csv");
    } else {
        if (gad_last_error()) fail("read_csv succeeded with an error pending");
        if (gad_rank(t) != 2 || gad_dtype(t) != o.dtype) fail("read_csv: rank or dtype");
        int64_t cells = gad_dim(t, 0) * gad_dim(t, 1);
        if (cells < 1 || !bytes || (size_t)cells > nb / 2 + 1)
            fail("read_csv: %lld values from %zu bytes", (long long)cells, nb);
        round_trip(t, &o);
    }
    gad_mem_free(bytes);
    gad_scope_end();
    gad_clear_error();
    gad_mem_stats_get(&m1);
    if (m1.live_tensors != m0.live_tensors || m1.live_storages != m0.live_storages)
        fail("leak: %lld tensors, %lld storages more",
             (long long)(m1.live_tensors - m0.live_tensors),
             (long long)(m1.live_storages - m0.live_storages));
    return 0;
}
