/* data.c: the text a model trains on, read from a .txt or .txt.gz file and
 * split into training bytes and the held-out 5%; the batch of a training
 * step and the validation windows. */
#include "data.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Read a .txt or .txt.gz file: gad_read_bytes tells gzip by its first
 * bytes and inflates it (up to its default limit, 1 GiB), and says where
 * a truncated or corrupt file goes wrong. The bytes are copied to memory
 * of malloc's, which the callers give back with free(). */
int load_text(const char *path, dataset *ds) {
    memset(ds, 0, sizeof *ds);
    unsigned char *data;
    size_t n;
    gad_status st = gad_read_bytes(path, 0, &data, &n);
    if (st != GAD_OK) {
        const gad_error *e = gad_last_error();
        fail("cannot %s the data file: %s", st == GAD_ERR_IO ? "open" : "read",
             e ? e->message : gad_status_str(st));
        gad_clear_error();
        return -1;
    }
    ds->bytes = malloc(n ? n : 1);
    if (!ds->bytes) {
        gad_mem_free(data);
        return fail("out of memory reading '%s'", path);
    }
    memcpy(ds->bytes, data, n);
    gad_mem_free(data);
    ds->n = (int64_t)n;
    ds->n_train = ds->n - ds->n / 20;
    return 0;
}

int check_data_fits(const dataset *ds, const char *path, int64_t seq) {
    int64_t n_val = ds->n - ds->n_train;
    if (ds->n_train < seq + 1 || n_val < seq + 1)
        return fail("the data file '%s' is too small: %lld bytes (%lld held out) for windows "
                    "of %lld bytes; it needs at least %lld",
                    path, (long long)ds->n, (long long)n_val, (long long)seq + 1,
                    (long long)(20 * (seq + 1) + 20));
    return 0;
}

/* The batch of step `step`: B windows of T+1 bytes from the training part,
 * at offsets drawn from an rng seeded by (seed, step), so that a resumed
 * run sees the same batches. in and tg get B*T bytes (inputs, and the next
 * byte of each). */
void sample_batch(const dataset *ds, gad_rng *rng, uint64_t seed, int64_t step,
                  int64_t B, int64_t T, int64_t *in, int64_t *tg) {
    gad_rng_seed(rng, mix64(mix64(seed ^ 0x6261746368ull) + (uint64_t)step));
    for (int64_t b = 0; b < B; b++) {
        int64_t s = gad_rng_int(rng, 0, ds->n_train - T);
        for (int64_t t = 0; t < T; t++) {
            in[b * T + t] = ds->bytes[s + t];
            tg[b * T + t] = ds->bytes[s + t + 1];
        }
    }
}

/* The start of validation window i of nw: evenly spaced over the held-out
 * part (a fixed set: every evaluation sees the same windows). */
int64_t val_window_start(const dataset *ds, int64_t i, int64_t nw, int64_t T) {
    int64_t span = ds->n - ds->n_train - (T + 1); /* the last valid start, relative */
    int64_t off = nw > 1 ? (int64_t)((double)i * (double)span / (double)(nw - 1)) : 0;
    return ds->n_train + off;
}
