/* model.h: a byte language model as the training program sees it: its
 * parameters, the forward pass and the loss, evaluation on the validation
 * windows, sampling, and checkpoints that hold the model, the AdamW state
 * and the configuration (model.c). The same program trains two
 * architectures: helix_lm's HELIX blocks (helix_model.c) and the gpt
 * example's transformer (examples/gpt/gpt_model.c); each provides the part
 * marked "the architecture" below, and is linked with the rest of this
 * folder. */
#ifndef LM_MODEL_H
#define LM_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "data.h"
#include "gad.h"

#define NORM_EPS 1e-5
#define NAME_CAP 48
#define CKPT_VERSION 2 /* 2 added bout and run.lr_*; version 1 still loads */

typedef struct model {
    int64_t d, layers;
    int64_t ctx;                /* the most bytes sampling lets one pass see (0: all) */
    int np;                     /* model_param_total's */
    gad_params *ps;             /* model_param_spec's names, in its order */
    gad_tensor *const *params;  /* ps's tensors, in that order */
    gad_tensor *emb, *gain, *wout, *bout; /* ps's too (wout NULL when tied to emb) */
    void *blocks;               /* the architecture's weights of each block (malloc'd) */
} model;

/* ------------------------------------------------------------------------ */
/* The architecture (helix_model.c, or examples/gpt/gpt_model.c)             */
/* ------------------------------------------------------------------------ */

/* Also the architecture's: lm_name, lm_default_out, lm_model_help
 * (util.h) and lm_config_defaults (config.h). */
/* The name and shape of parameter i of the model of width d with `layers`
 * blocks; returns its rank (1 or 2). */
int model_param_spec(int i, int64_t d, int64_t layers, char name[NAME_CAP], int64_t shape[2]);
/* The parameters of such a model in a checkpoint of version v. */
int model_param_total(int64_t layers, int v);
/* A new model, on the CPU (model_to_device moves it). */
int model_init(model *m, int64_t d, int64_t layers, uint64_t seed);
/* Write the model to path as the state_dict of the architecture's PyTorch
 * module (linear weights [out, in]), with n_meta (key, value) metadata
 * pairs (gad_save_meta): `helix_lm export`. 0, or -1 after a message. */
int model_export(const model *m, const char *const *meta, int n_meta, const char *path);
/* Point m's fields (emb, gain, wout, bout, blocks) at m->ps's tensors. */
void model_bind(model *m);
/* Logits [B, T, 256] for input bytes idx [B, T] (i64), in the current
 * scope. NULL on an error (gad's record says which). */
gad_tensor *model_logits(const model *m, gad_tensor *idx);

/* ------------------------------------------------------------------------ */
/* Every architecture's (model.c)                                            */
/* ------------------------------------------------------------------------ */

void model_free(model *m);
/* Move every parameter to dev (new leaves, the same names and values; the
 * old ones are released: no optimizer may hold them yet). 0, or -1 after a
 * message. */
int model_to_device(model *m, gad_device dev);
int model_init_output_bias(model *m, const unsigned char *bytes, int64_t n);
int64_t model_param_count(const model *m);
/* AdamW over the model's parameters with c's settings; --wd decays the
 * matrices and the embedding, not the gains and the output bias (groups 0
 * to 2: "b*.g*", "gain", "bout"; group 3 the rest). NULL and gad's error. */
gad_optim *model_optimizer(const model *m, const config *c);
/* The mean next-byte loss of the windows idx [B, T] (i64) against
 * targets [B*T] (i64), with ones [B*T] (f32 1s: masked_ce's weights), on
 * the model's device; model_loss makes those tensors from host arrays. */
gad_tensor *model_loss_on(const model *m, gad_tensor *idx, gad_tensor *targets,
                          gad_tensor *ones);
gad_tensor *model_loss(const model *m, const int64_t *in, const int64_t *tg, int64_t B,
                       int64_t T);
int evaluate(const model *m, const dataset *ds, int64_t nw, int64_t B, int64_t T, double *out);
int generate(const model *m, const char *prompt, int64_t nbytes, double temperature,
             int64_t top_k, uint64_t seed, FILE *out);

/* The state of a model that reads its input a piece at a time (the
 * architecture's): HELIX's, each block's scan state after the last byte so
 * far (NULL before the first: the zero state); the transformer's, the
 * bytes so far. */
typedef struct model_state {
    int64_t layers;
    gad_tensor **h;  /* [1, 1, D] each, owned */
    int64_t *bytes;  /* n of them, room for cap */
    int64_t n, cap;
} model_state;

/* The architecture's: */
int model_state_init(model_state *s, const model *m);
void model_state_free(model_state *s);
/* The logits [1, P, 256] (in the current scope) of the P bytes that follow
 * the ones s has seen; s moves on past them. Equal, up to rounding, to the
 * last P positions of model_logits over all the bytes so far. NULL on an
 * error (gad's record says which; s is unchanged). */
gad_tensor *model_logits_carry(const model *m, const int64_t *bytes, int64_t P,
                               model_state *s);

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
    /* the learning-rate schedule (schedule.h): the anchor of a re-anchored
     * decay (0: none) and its rate, and the end E that the last update
     * used (-1: unknown, in a checkpoint of version 1) */
    int64_t lr_anchor, lr_total;
    double lr_anchor_lr;
    int64_t world;   /* the ranks that trained it (dist.c; 1 if the checkpoint does not say) */
    /* --precision (a gad dtype: GAD_F32 if the checkpoint does not say),
     * and for f16 the loss scaler's state (gad_grad_scaler_state) */
    int64_t precision;
    double scale;
    int64_t scale_good;
    int64_t skipped; /* f16: steps the scaler skipped (the optimizer's count is step - skipped) */
} run_state;

int save_checkpoint(const char *path, const model *m, gad_optim *opt, const config *c,
                    const run_state *rs);
int ckpt_load_params(const gad_checkpoint *cp, const char *path, model *m);
int ckpt_load_optim(const gad_checkpoint *cp, const char *path, gad_optim *opt);
gad_checkpoint *open_checkpoint(const char *path, config *c, run_state *rs);
int load_model(const config *c, config *saved, run_state *rs, model *m, char *path, size_t cap);

#endif
