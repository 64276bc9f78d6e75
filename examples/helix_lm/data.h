/* data.h: the text (.txt or .txt.gz), split into training bytes and the
 * held-out 5%, and the windows cut from it: the batch of a training step
 * and the fixed validation windows (data.c). */
#ifndef HELIX_DATA_H
#define HELIX_DATA_H

#include <stdint.h>

#include "gad.h"

typedef struct dataset {
    unsigned char *bytes;
    int64_t n;       /* all bytes */
    int64_t n_train; /* bytes [0, n_train) train; [n_train, n) validate */
} dataset;

int load_text(const char *path, dataset *ds);
int check_data_fits(const dataset *ds, const char *path, int64_t seq);
void sample_batch(const dataset *ds, gad_rng *rng, uint64_t seed, int64_t step, int64_t B,
                  int64_t T, int64_t *in, int64_t *tg);
int64_t val_window_start(const dataset *ds, int64_t i, int64_t nw, int64_t T);

#endif
