/* main.c: helix_lm, a byte-level language model made of HELIX blocks,
 * trained on real English text (the King James Bible in data/kjv.txt.gz)
 * from C.
 *
 *   helix_lm train  [options]   train (or --resume) and write a checkpoint,
 *                               metrics.csv and loss.svg to --out
 *   helix_lm sample [options]   generate text from a checkpoint
 *   helix_lm eval   [options]   print a checkpoint's validation loss
 *   helix_lm --quick            a self-test of a few seconds (ctest runs it)
 *
 * The model (docs/helix.md): bytes -> embedding [256, D] -> L fused
 * HELIX blocks -> rms_norm * gain -> logits = h @ Wout [D, 256] -> mean
 * cross-entropy of the next byte. AdamW with linear warm-up and cosine
 * decay, gradient clipping by global norm. The last 5% of the text is held
 * out for validation.
 *
 * Reproducibility: the batch of step s is a function of (seed, s) only, and
 * a checkpoint holds every parameter, the AdamW state, the step and the
 * configuration, so a run stopped at step k and resumed gives the losses of
 * the uninterrupted run from step k on, bit for bit (with the same thread
 * count: gad's kernels are deterministic for a fixed count).
 *
 * The program reads as a tutorial, one file per part: config.c (the
 * configuration and its options), data.c, helix_model.c (the model) and
 * model.c (its loss, evaluation, sampling and checkpoints), metrics.c
 * (CSV), plot.c (SVG), progress.c (the progress display), train.c (the
 * training loop), selftest.c (--quick) and this file: the command line and
 * the commands. examples/gpt builds a transformer with every file here but
 * helix_model.c (model.h says what an architecture provides). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "data.h"
#include "dist.h"
#include "gad.h"
#include "model.h"
#include "selftest.h"
#include "signals.h"
#include "train.h"
#include "util.h"

/* ======================================================================== */
/* The command line                                                          */
/* ======================================================================== */

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s train  [options]   train a byte language model\n"
            "       %s sample [options]   generate text from a checkpoint\n"
            "       %s eval   [options]   print a checkpoint's validation loss\n"
            "       %s export [options]   write DIR/export.safetensors: the model as a\n"
            "                                   PyTorch state_dict (torch_helix.py)\n"
            "       %s --quick [--threads N] [--data PATH] [--device DEV] [--precision P]\n"
            "                                   a self-test of a few seconds\n"
            "       %s --help\n"
            "\n"
            "%s"
            "\n"
            "options (the commands that take each in brackets):\n",
            lm_name, lm_name, lm_name, lm_name, lm_name, lm_name, lm_model_help);
    for (int i = 0; i < N_OPTIONS; i++) {
        const option_spec *o = &options[i];
        char left[64], cmds[16] = "";
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        if ((o->cmds & CMD_ALL) != CMD_ALL)
            snprintf(cmds, sizeof cmds, "[%s%s%s%s] ", o->cmds & CMD_TRAIN ? "t" : "",
                     o->cmds & CMD_SAMPLE ? "s" : "", o->cmds & CMD_EVAL ? "e" : "",
                     o->cmds & CMD_QUICK ? "q" : "");
        fprintf(f, "  %-19s %s%s\n", left, cmds, o->help);
    }
    config d = default_config(); /* the architecture's (model.h) */
    fprintf(f, "  (defaults: --out %s, --lr %g, --min-lr %g)\n", d.out, d.lr, d.min_lr);
    fprintf(f,
            "\n"
            "Training writes DIR/checkpoint.safetensors (atomically, every --ckpt-every\n"
            "steps and at the end), DIR/metrics.csv (step, seconds, tokens, train_loss,\n"
            "val_loss, lr, grad_norm, session) and DIR/loss.svg (open it in a browser).\n"
            "Ctrl-C saves a checkpoint and stops; `train --out DIR --resume` continues. A\n"
            "resumed run replays the uninterrupted one bit for bit when it uses the same\n"
            "--threads (and a --steps schedule: a --time-budget run depends on the clock).\n"
            "Resumed with another --steps, --time-budget, --min-lr or --warmup, the\n"
            "learning rate goes on from the value it had reached and decays (cosine) to\n"
            "--min-lr at the new end; with another --lr, it decays from that --lr. A run\n"
            "that had finished goes on at --min-lr unless --lr is given.\n"
            "\n"
            "A number outside its option's range is an error that gives the range. The\n"
            "largest: --d %d, --layers %d, --batch %d, --seq %d, at most %d\n"
            "bytes a step (--batch x --seq), --val-windows %d, --bytes %d. A\n"
            "checkpoint must hold a configuration within the same ranges, and tensors of\n"
            "the shapes it gives. Ctrl-C or SIGTERM stops eval and sample too, after the\n"
            "current batch or byte.\n"
            "\n"
            "examples:\n"
            "  %s train --time-budget 180\n"
            "  %s sample --prompt \"And God said\" --bytes 300\n"
            "  %s eval\n",
            MAX_D, MAX_LAYERS, MAX_BATCH, MAX_SEQ, MAX_STEP_BYTES, MAX_VAL_WINDOWS, MAX_BYTES,
            lm_name, lm_name, lm_name);
}

/* Parse a number in [lo, hi]; whole string, no junk. */
static int parse_number(const char *opt, const char *s, opt_kind kind, double lo, double hi,
                        void *dst) {
    char *end = NULL;
    errno = 0;
    if (kind == OPT_INT) {
        long long v = strtoll(s, &end, 10);
        if (!*s || *end || errno || (double)v < lo || (double)v > hi)
            return fail("--%s wants an integer in [%.0f, %.0f], not '%s'", opt, lo, hi, s);
        *(int64_t *)dst = v;
    } else {
        double v = strtod(s, &end);
        if (!*s || *end || errno || !(v >= lo && v <= hi))
            return fail("--%s wants a number in [%g, %g], not '%s'", opt, lo, hi, s);
        *(double *)dst = v;
    }
    return 0;
}

/* Parse argv[first..argc) into c for the command cmd. Returns 0, or -1
 * after printing what was wrong. */
static int parse_options(int argc, char **argv, int first, unsigned cmd, const char *cmd_name,
                         config *c, given_set *given) {
    memset(given, 0, sizeof *given);
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            return fail("unexpected argument '%s' (try --help)", a);
        char name[64];
        const char *val = NULL, *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        if (len >= sizeof name) return fail("unknown option '%s' (try --help)", a);
        memcpy(name, a + 2, len);
        name[len] = '\0';
        if (eq) val = eq + 1;
        int k = option_index(name);
        if (k < 0) return fail("unknown option '--%s' (try --help)", name);
        const option_spec *o = &options[k];
        if (!(o->cmds & cmd)) return fail("'%s' does not take --%s (try --help)", cmd_name, name);
        void *dst = (char *)c + o->offset;
        if (o->kind == OPT_FLAG) {
            if (val) return fail("--%s takes no value", name);
            *(int *)dst = 1;
        } else {
            if (!val) {
                if (i + 1 >= argc) return fail("--%s needs a value", name);
                val = argv[++i];
            }
            if (o->kind == OPT_STR) {
                *(const char **)dst = val;
            } else if (parse_number(name, val, o->kind, o->lo, o->hi, dst) != 0) {
                return -1;
            }
        }
        given->on[k] = 1;
    }
    if (strlen(c->prompt) > MAX_PROMPT)
        return fail("--prompt has %zu bytes, above the maximum %d", strlen(c->prompt), MAX_PROMPT);
    return 0;
}

/* ======================================================================== */
/* The commands                                                              */
/* ======================================================================== */

static int cmd_sample(const config *c) {
    config saved;
    run_state rs;
    model m;
    char path[4200];
    if (load_model(c, &saved, &rs, &m, path, sizeof path) != 0) return 1;
    fprintf(stderr, "%s: %s, step %lld (D=%lld, L=%lld, trained on windows of %lld bytes)\n",
            prog, path, (long long)rs.step, (long long)saved.d, (long long)saved.layers,
            (long long)saved.seq);
    /* one SIGINT or SIGTERM stops it after the current byte */
    signal_state ss;
    signals_catch(&ss);
    int rc = generate(&m, c->prompt, c->bytes, c->temperature, c->top_k, (uint64_t)c->seed,
                      stdout);
    signals_restore(&ss);
    model_free(&m);
    if (rc > 0) {
        fail("interrupted: sampling stopped by a signal");
        return 130;
    }
    return rc == 0 ? 0 : 1;
}

static int cmd_eval(const config *c, const given_set *given) {
    config saved;
    run_state rs;
    model m;
    char path[4200];
    if (load_model(c, &saved, &rs, &m, path, sizeof path) != 0) return 1;
    if (was_given(given, "val-windows")) saved.val_windows = c->val_windows;
    dataset ds;
    int rc = load_text(c->data, &ds);
    if (rc == 0) rc = check_data_fits(&ds, c->data, saved.seq);
    double v = NAN;
    if (rc == 0) { /* one SIGINT or SIGTERM stops it after the current batch */
        signal_state ss;
        signals_catch(&ss);
        rc = evaluate(&m, &ds, saved.val_windows, saved.batch, saved.seq, &v);
        signals_restore(&ss);
    }
    if (rc > 0) {
        fail("interrupted: the evaluation stopped by a signal, before its end");
        free(ds.bytes);
        model_free(&m);
        return 130;
    }
    if (rc == 0)
        printf("validation loss %.9g nats/byte (%.4f bits/byte) at step %lld, over %lld "
               "windows of %lld bytes\n",
               v, v / log(2.0), (long long)rs.step, (long long)saved.val_windows,
               (long long)saved.seq);
    free(ds.bytes);
    model_free(&m);
    return rc == 0 ? 0 : 1;
}

/* The checkpoint's model as its PyTorch module's state_dict, with the
 * configuration in __metadata__ (issue 29): DIR/export.safetensors. */
static int cmd_export(const config *c) {
    config saved;
    run_state rs;
    model m;
    char path[4200], out[4200];
    if (load_model(c, &saved, &rs, &m, path, sizeof path) != 0) return 1;
    char v[10][32];
    snprintf(v[0], 32, "%lld", (long long)m.d);
    snprintf(v[1], 32, "%lld", (long long)m.layers);
    snprintf(v[2], 32, "%d", 256);
    snprintf(v[3], 32, "%.17g", NORM_EPS);
    snprintf(v[4], 32, "%lld", (long long)saved.seq);
    snprintf(v[5], 32, "%lld", (long long)saved.val_windows);
    snprintf(v[6], 32, "%lld", (long long)rs.step);
    const char *meta[] = {"format", "pt", "model", lm_name, "d_model", v[0], "n_layers", v[1],
                          "vocab", v[2], "norm_eps", v[3], "seq", v[4], "val_windows", v[5],
                          "step", v[6]};
    join_path(out, sizeof out, c->out, "export.safetensors");
    int rc = model_export(&m, meta, (int)(sizeof meta / sizeof meta[0]) / 2, out);
    if (rc == 0)
        printf("%s: exported %s (step %lld, D=%lld, L=%lld) to %s\n", lm_name, path,
               (long long)rs.step, (long long)m.d, (long long)m.layers, out);
    model_free(&m);
    return rc == 0 ? 0 : 1;
}

static int cmd_train(config *c, const given_set *given) {
    if (c->threads > 0) gad_set_num_threads((int)c->threads);
    if (select_device(c) != 0) return 1;
    if (dist_start(c) != 0) return 1; /* under mpirun: this rank's share (dist.c) */
    train_result res;
    int rc = train(c, given, 0, &res);
    free(res.mt.rows);
    return dist_end(rc != 0 ? 1 : res.interrupted && g_interrupted ? 130 : 0);
}

int main(int argc, char **argv) {
    config c = default_config();
    given_set given;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    int rc;
    if (!strcmp(cmd, "--quick")) {
        /* ctest runs `helix_lm --quick`; it takes --threads, --data, --device,
         * --precision (its training runs in that precision) */
        if (parse_options(argc, argv, 2, CMD_EVAL | CMD_QUICK, "--quick", &c, &given) != 0)
            return 2;
        rc = select_device(&c) != 0 ? 1 : cmd_quick(&c, &given);
    } else if (!strcmp(cmd, "train")) {
        if (parse_options(argc, argv, 2, CMD_TRAIN, cmd, &c, &given) != 0) return 2;
        rc = cmd_train(&c, &given);
    } else if (!strcmp(cmd, "sample")) {
        if (parse_options(argc, argv, 2, CMD_SAMPLE, cmd, &c, &given) != 0) return 2;
        if (c.threads > 0) gad_set_num_threads((int)c.threads);
        rc = select_device(&c) != 0 ? 1 : cmd_sample(&c);
    } else if (!strcmp(cmd, "eval")) {
        if (parse_options(argc, argv, 2, CMD_EVAL, cmd, &c, &given) != 0) return 2;
        if (c.threads > 0) gad_set_num_threads((int)c.threads);
        rc = select_device(&c) != 0 ? 1 : cmd_eval(&c, &given);
    } else if (!strcmp(cmd, "export")) {
        if (parse_options(argc, argv, 2, CMD_EVAL, "export", &c, &given) != 0) return 2;
        rc = cmd_export(&c);
    } else {
        fail("unknown command '%s' (train, sample, eval, export, --quick or --help)", cmd);
        return 2;
    }
    gad_cache_trim();
    return rc;
}
