/* helix_model.h: the HELIX byte language model: its parameters and their
 * initialization, the forward pass and the loss, evaluation on the
 * validation windows, sampling, and checkpoints that hold the model, the
 * AdamW state and the configuration (helix_model.c). */
#ifndef HELIX_MODEL_H
#define HELIX_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "data.h"
#include "gad.h"

#define NORM_EPS 1e-5
#define NAME_CAP 48
#define CKPT_VERSION 1

typedef struct model {
    int64_t d, layers;
    int np;                  /* 3 + 9 * layers */
    gad_tensor **params;     /* owned leaves: emb, blocks..., gain, wout */
    char (*names)[NAME_CAP]; /* "emb", "b0.wa", ..., "gain", "wout" */
    gad_tensor *emb, *gain, *wout;
    gad_helix_weights *blocks;
} model;

void model_free(model *m);
int model_init(model *m, int64_t d, int64_t layers, uint64_t seed);
int64_t model_param_count(const model *m);
gad_tensor *model_logits(const model *m, gad_tensor *idx);
gad_tensor *model_loss(const model *m, const int64_t *in, const int64_t *tg, int64_t B,
                       int64_t T);
int evaluate(const model *m, const dataset *ds, int64_t nw, int64_t B, int64_t T, double *out);
int generate(const model *m, int64_t context, const char *prompt, int64_t nbytes,
             double temperature, int64_t top_k, uint64_t seed, FILE *out);

/* checkpoints: the configuration is stored as the hp.* fields below */
typedef struct hp_field {
    const char *name;
    size_t offset;
    int is_real;
} hp_field;

#define N_HP 17 /* the entries of hp_fields[] */
extern const hp_field hp_fields[N_HP];

typedef struct run_state {
    int64_t step;    /* optimizer updates done */
    double seconds;  /* training wall clock so far */
    int64_t threads; /* the thread count that trained it */
    int64_t world;   /* the ranks that trained it (dist.c; 1 if the checkpoint does not say) */
} run_state;

int save_checkpoint(const char *path, const model *m, gad_optim *opt, const config *c,
                    const run_state *rs);
int ckpt_load_params(const gad_checkpoint *cp, const char *path, model *m);
int ckpt_load_optim(const gad_checkpoint *cp, const char *path, gad_optim *opt);
gad_checkpoint *open_checkpoint(const char *path, config *c, run_state *rs);
int load_model(const config *c, config *saved, run_state *rs, model *m, char *path, size_t cap);

#endif
