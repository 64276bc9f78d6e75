/* config.h: helix_lm's configuration (the options of every command in one
 * struct), its defaults, the table of options with the valid range of each
 * number, and which options a command line gave (config.c). */
#ifndef HELIX_CONFIG_H
#define HELIX_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define VOCAB 256
#define LN_VOCAB 5.545177444479562 /* ln 256: the loss of a uniform guess */
#define MAX_LAYERS 64

enum command { CMD_TRAIN = 1, CMD_SAMPLE = 2, CMD_EVAL = 4, CMD_ALL = 7 };

typedef struct config {
    /* the model */
    int64_t d, layers;
    /* the data and batches */
    const char *data;
    int64_t batch, seq, val_windows;
    /* optimization */
    int64_t steps, warmup;
    double time_budget, lr, min_lr, clip, wd, beta1, beta2;
    int64_t seed;
    /* the run */
    const char *out, *ckpt;
    int64_t eval_every, ckpt_every, log_every, stop_at, threads;
    int resume, plain;
    /* sampling */
    const char *prompt;
    double temperature;
    int64_t top_k, bytes;
} config;

config default_config(void);

typedef enum opt_kind { OPT_INT, OPT_REAL, OPT_STR, OPT_FLAG } opt_kind;

typedef struct option_spec {
    const char *name; /* without the leading "--" */
    opt_kind kind;
    size_t offset; /* of the field in config */
    unsigned cmds; /* the commands that take it */
    double lo, hi; /* the valid range of a number */
    const char *arg, *help;
} option_spec;

#define N_OPTIONS 29 /* the entries of options[] */
extern const option_spec options[N_OPTIONS];

/* Which options the command line gave (by index into options[]). */
typedef struct given_set {
    unsigned char on[N_OPTIONS];
} given_set;

int option_index(const char *name);
int was_given(const given_set *g, const char *name);

#endif
