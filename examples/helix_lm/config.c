/* config.c: helix_lm's configuration: the defaults (the README's main run),
 * every option with the commands that take it, its valid range and its help
 * line, and the lookup of options by name. */
#include "config.h"

#include <string.h>

#include "gad.h"
#include "util.h"

#ifndef GAD_DATA_DIR
#define GAD_DATA_DIR "data"
#endif

/* The defaults: the README's main run. The optimization settings were tuned
 * for a 180-second budget on 2 cores, where the run makes 500 to 1000 steps:
 * a sweep of this model (the same math, two seeds) over 550..3000 steps gave
 * lr 4.5e-3 as the best peak (3e-3 only from 2500 steps on), a warm-up of
 * 200-300 steps 0.01-0.03 nats better than 100 (30 was worse still), beta2
 * 0.99 slightly ahead of 0.999 and even with 0.95, and clipping at 1 and
 * weight decay 0.01 within noise (0.005) of every other setting tried (clip
 * 0.25..2 or none, decay 0..0.1). Validation loss against steps at these
 * settings: 1.40 at 550, 1.36 at 700, 1.335 at 850, 1.305 at 1000, 1.275 at
 * 1200, 1.23 at 2000: the 1.35 bar needs about 800 steps (1.6M bytes) in
 * the 180 seconds. Validation every 200 steps costs about 2% of them. */
config default_config(void) {
    config c = {0};
    c.d = 256;
    c.layers = 4;
    c.data = GAD_DATA_DIR "/kjv.txt.gz";
    c.batch = 16;
    c.seq = 128;
    c.val_windows = 256;
    c.steps = 0;
    c.warmup = 300;
    c.time_budget = 0;
    c.lr = 4.5e-3;
    c.min_lr = 2e-4;
    c.clip = 1.0;
    c.wd = 0.01;
    c.beta1 = 0.9;
    c.beta2 = 0.99;
    c.seed = 1;
    c.out = lm_default_out;
    c.ckpt = NULL;
    c.eval_every = 200;
    c.ckpt_every = 250;
    c.log_every = 50;
    c.stop_at = 0;
    c.threads = 0;
    c.device = "cpu";
    c.precision = "f32";
    c.prompt = "And God said";
    c.temperature = 0.8;
    c.top_k = 40;
    c.bytes = 300;
    lm_config_defaults(&c); /* the architecture's own (model.h) */
    return c;
}

#define OFF(f) offsetof(config, f)
#define T_ CMD_TRAIN
#define S_ CMD_SAMPLE
#define E_ CMD_EVAL
const option_spec options[] = {
    {"data", OPT_STR, OFF(data), T_ | E_, 0, 0, "PATH",
     "text to train on, .txt or .txt.gz (default: " GAD_DATA_DIR "/kjv.txt.gz)"},
    {"out", OPT_STR, OFF(out), CMD_ALL, 0, 0, "DIR",
     "run directory: checkpoint.safetensors, metrics.csv, loss.svg (default: below)"},
    {"ckpt", OPT_STR, OFF(ckpt), S_ | E_, 0, 0, "PATH",
     "checkpoint to read (default DIR/checkpoint.safetensors)"},
    {"steps", OPT_INT, OFF(steps), T_, 1, MAX_STEPS, "N",
     "train N optimizer steps (the cosine schedule ends at N)"},
    {"time-budget", OPT_REAL, OFF(time_budget), T_, 0.001, 1e9, "S",
     "train for S seconds of wall clock (default 180 when --steps is not given)"},
    {"d", OPT_INT, OFF(d), T_, 1, MAX_D, "D", "model width (default 256)"},
    {"layers", OPT_INT, OFF(layers), T_, 1, MAX_LAYERS, "L", "blocks (default 4)"},
    {"batch", OPT_INT, OFF(batch), T_, 1, MAX_BATCH, "B", "windows per batch (default 16)"},
    {"seq", OPT_INT, OFF(seq), T_, 2, MAX_SEQ, "T", "bytes per window (default 128)"},
    {"lr", OPT_REAL, OFF(lr), T_, 1e-12, 10, "X", "peak learning rate (default: below)"},
    {"warmup", OPT_INT, OFF(warmup), T_, 0, MAX_STEPS, "N", "linear warm-up steps (default 300; with --time-budget at most half of the "
     "run's estimated steps)"},
    {"min-lr", OPT_REAL, OFF(min_lr), T_, 0, 10, "X",
     "learning rate at the end of the cosine decay (default: below)"},
    {"clip", OPT_REAL, OFF(clip), T_, 0, 1e9, "X",
     "clip the gradient's global norm to X (0: off; default 1)"},
    {"wd", OPT_REAL, OFF(wd), T_, 0, 10, "X", "AdamW weight decay (default 0.01)"},
    {"beta1", OPT_REAL, OFF(beta1), T_, 1e-6, 0.999999, "X", "AdamW beta1 (default 0.9)"},
    {"beta2", OPT_REAL, OFF(beta2), T_, 1e-6, 0.999999, "X", "AdamW beta2 (default 0.99)"},
    {"seed", OPT_INT, OFF(seed), CMD_ALL, 0, 9.2e18, "N",
     "seed of the initialization, the batches and sampling (default 1)"},
    {"eval-every", OPT_INT, OFF(eval_every), T_, 0, MAX_STEPS, "N",
     "validation loss every N steps and at the end (0: only at the end; default 200)"},
    {"ckpt-every", OPT_INT, OFF(ckpt_every), T_, 0, MAX_STEPS, "N",
     "checkpoint every N steps and at the end (0: only at the end; default 250)"},
    {"log-every", OPT_INT, OFF(log_every), T_, 1, MAX_STEPS, "N",
     "a plain progress line every N steps when not on a terminal (default 50)"},
    {"val-windows", OPT_INT, OFF(val_windows), T_ | E_, 1, MAX_VAL_WINDOWS, "N",
     "validation windows of T bytes, evenly spaced over the held-out 5% (default 256)"},
    {"stop-at", OPT_INT, OFF(stop_at), T_, 1, MAX_STEPS, "K",
     "stop after step K as if interrupted (checkpoint, no final evaluation)"},
    {"resume", OPT_FLAG, OFF(resume), T_, 0, 0, NULL,
     "continue from DIR/checkpoint.safetensors (its configuration, unless overridden)"},
    {"threads", OPT_INT, OFF(threads), CMD_ALL, 0, 1024, "N",
     "threads (0: all cores); resume with the same count to replay bit for bit"},
    {"device", OPT_STR, OFF(device), CMD_ALL, 0, 0, "DEV",
     "where the model runs: cpu, cuda or cuda:N (a GPU, in a CUDA build; default cpu)"},
    {"precision", OPT_STR, OFF(precision), T_ | CMD_QUICK, 0, 0, "P",
     "f32, bf16 or f16: the dtype the model computes in (f32 masters, half working copies; "
     "f16 with dynamic loss scaling; default f32)"},
    {"plain", OPT_FLAG, OFF(plain), T_, 0, 0, NULL, "plain progress lines even on a terminal"},
    {"prompt", OPT_STR, OFF(prompt), T_ | S_, 0, 0, "TEXT",
     "the text to continue (default \"And God said\")"},
    {"temperature", OPT_REAL, OFF(temperature), T_ | S_, 0, 100, "X",
     "sampling temperature (0: always the likeliest byte; default 0.8)"},
    {"top-k", OPT_INT, OFF(top_k), T_ | S_, 0, VOCAB, "K",
     "sample among the K likeliest bytes (0: all; default 40)"},
    {"bytes", OPT_INT, OFF(bytes), T_ | S_, 0, MAX_BYTES, "N",
     "bytes to generate (default 300; for train, the sample shown at the end, 0: none)"},
};
#undef T_
#undef S_
#undef E_
_Static_assert(sizeof options / sizeof options[0] == N_OPTIONS, "N_OPTIONS counts options[]");

int option_index(const char *name) {
    for (int i = 0; i < N_OPTIONS; i++)
        if (!strcmp(options[i].name, name)) return i;
    return -1;
}

int was_given(const given_set *g, const char *name) {
    int i = option_index(name);
    return i >= 0 && g->on[i];
}

int check_step_bytes(int64_t batch, int64_t seq, const char *ckpt) {
    int64_t n;
    if (checked_mul(batch, seq, &n) == 0 && n <= MAX_STEP_BYTES) return 0;
    if (ckpt)
        return fail("'%s' holds batch %lld x seq %lld = %lld bytes a step, above the maximum %d",
                    ckpt, (long long)batch, (long long)seq, (long long)n, MAX_STEP_BYTES);
    return fail("--batch %lld x --seq %lld = %lld bytes a step, above the maximum %d",
                (long long)batch, (long long)seq, (long long)n, MAX_STEP_BYTES);
}

int select_device(const config *c) {
    const char *name = c->device;
    gad_device dev = -1;
    if (!strcmp(name, "cuda")) name = "cuda:0";
    for (gad_device d = 0; d < 256 && dev < 0; d++) /* the CPU, the GPUs, any other */
        if (gad_device_type_of(d) >= 0 && !strcmp(gad_device_name(d), name)) dev = d;
    if (dev < 0) {
        int gpus = gad_device_count(GAD_DEVICE_CUDA);
        if (gpus == 0)
            return fail("--device %s: no such device (this gad has only the cpu: a build "
                        "without CUDA, or no GPU found)",
                        c->device);
        return fail("--device %s: no such device (this gad has the cpu and cuda:0 to cuda:%d)",
                    c->device, gpus - 1);
    }
    if (gad_set_default_device(dev) < 0) return fail_gad("cannot use the device");
    return 0;
}

int precision_dtype(const char *name) {
    if (!strcmp(name, "f32")) return GAD_F32;
    if (!strcmp(name, "bf16")) return GAD_BF16;
    if (!strcmp(name, "f16")) return GAD_F16;
    return fail("--precision %s: not one of f32, bf16, f16", name);
}

const char *precision_name(int dtype) {
    return dtype == GAD_F32 ? "f32" : dtype == GAD_BF16 ? "bf16" : dtype == GAD_F16 ? "f16" : NULL;
}
