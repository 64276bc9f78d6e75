/* config.h: helix_lm's configuration (the options of every command in one
 * struct), its defaults, the table of options with the valid range of each
 * number, and which options a command line gave (config.c). */
#ifndef HELIX_CONFIG_H
#define HELIX_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define VOCAB 256
#define LN_VOCAB 5.545177444479562 /* ln 256: the loss of a uniform guess */

/* The largest values of the configuration, whether from the command line or
 * from a checkpoint (options[] gives every number its range; --help lists
 * these). The bytes of a step, batch x seq, are bounded too, at 32 times
 * the default: a step's activations (about 1 KB of logits a byte, and more
 * for every block) stay within a few GB, and a token count (steps x bytes
 * of a step) fits in an int64_t. */
#define MAX_D 8192
#define MAX_LAYERS 64
#define MAX_BATCH 65536
#define MAX_SEQ 65536
#define MAX_STEP_BYTES 65536 /* batch x seq */
#define MAX_STEPS 1e12       /* --steps, --warmup, the step of a checkpoint */
#define MAX_RUN_SECONDS 1e12 /* a run's clock: it saturates here, and a checkpoint holds no more */
#define MAX_VAL_WINDOWS 65536 /* 256 times the default */
#define MAX_BYTES 16777216 /* --bytes: the text sampled */
#define MAX_PROMPT 1048576 /* --prompt, in bytes */

/* CMD_QUICK: --quick takes eval's options and those marked with it */
enum command { CMD_TRAIN = 1, CMD_SAMPLE = 2, CMD_EVAL = 4, CMD_ALL = 7, CMD_QUICK = 8 };

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
    const char *device; /* "cpu", "cuda", "cuda:N" (select_device) */
    const char *precision; /* train's: "f32", "bf16" or "f16" (precision_dtype) */
    int resume, plain;
    /* sampling */
    const char *prompt;
    double temperature;
    int64_t top_k, bytes;
} config;

config default_config(void);
/* The architecture's changes to default_config's values (model.h). */
void lm_config_defaults(config *c);

typedef enum opt_kind { OPT_INT, OPT_REAL, OPT_STR, OPT_FLAG } opt_kind;

typedef struct option_spec {
    const char *name; /* without the leading "--" */
    opt_kind kind;
    size_t offset; /* of the field in config */
    unsigned cmds; /* the commands that take it */
    double lo, hi; /* the valid range of a number */
    const char *arg, *help;
} option_spec;

#define N_OPTIONS 31 /* the entries of options[] */
extern const option_spec options[N_OPTIONS];

/* Which options the command line gave (by index into options[]). */
typedef struct given_set {
    unsigned char on[N_OPTIONS];
} given_set;

int option_index(const char *name);
int was_given(const given_set *g, const char *name);

/* 0 when batch x seq is at most MAX_STEP_BYTES; else -1 after a message
 * naming the values, as options (ckpt NULL) or as the checkpoint ckpt's. */
int check_step_bytes(int64_t batch, int64_t seq, const char *ckpt);

/* Make c->device this thread's default device (gad_set_default_device), so
 * that the model, its batches and its optimizer state live there: "cpu",
 * "cuda" (GPU 0), "cuda:N", or any device's name as gad_device_name gives
 * it. 0, or -1 after a message saying which devices there are. */
int select_device(const config *c);

/* The dtype of the working model that --precision names (GAD_F32, GAD_BF16
 * or GAD_F16), or -1 after a message; precision_name is the reverse
 * (NULL for another dtype). */
int precision_dtype(const char *name);
const char *precision_name(int dtype);

#endif
