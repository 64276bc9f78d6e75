/* train.c: the training loop: setup (from scratch, or --resume from the
 * checkpoint), one AdamW step after another with validation, checkpoints,
 * metrics and progress, until --steps or the time budget; SIGINT and
 * SIGTERM stop it after the current step, with a checkpoint. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "dist.h"
#include "gad.h"
#include "model.h"
#include "plot.h"
#include "progress.h"
#include "rundir.h"
#include "schedule.h"
#include "signals.h"
#include "util.h"

/* Everything a training run holds. */
typedef struct trainer {
    config *c;
    int quiet;
    char ckpt_path[4200], csv_path[4200], svg_path[4200];
    dataset ds;
    model m;
    gad_optim *opt;
    gad_tensor **grads;
    /* --precision bf16/f16: m holds the f32 masters (what the optimizer
     * updates, evaluation reads and checkpoints hold); wm is the same model
     * over half copies of them (gad_optim_set_copies), which the steps run;
     * hgrads their half gradients; sc f16's loss scaler */
    int prec;
    model wm;
    gad_tensor **hgrads;
    gad_grad_scaler *sc;
    /* the most host memory a step's forward pass held (gad_mem_stats'
     * live bytes at the loss less those at the step's start): the
     * activations the backward pass reads */
    int64_t act_bytes;
    gad_rng *batch_rng;
    int64_t *in, *tg; /* one batch: inputs and targets, B*T each (gad_host_alloc) */
    /* this rank's rows of the batch on the model's device, made at the
     * first step and refilled in place (gad_write_i64) at every other, and
     * the loss's mask of ones: no step allocates them again */
    gad_tensor *idx, *targets, *ones;
    metrics *mt;
    run_state rs;      /* the step and the clock */
    lr_schedule sched; /* the learning rate of every update (schedule.h) */
    double t_start;    /* now_seconds() - rs.seconds: the run's clock origin */
    double last_val;
    int64_t last_val_step; /* the step last_val is from (-1: none) */
    int64_t session;       /* 0 for a fresh run, +1 for each resume (metrics.csv) */
    int64_t saved_step;    /* the step of the last checkpoint written */
    progress pg;
} trainer;

/* Apply a checkpoint's configuration to c for --resume: every field the
 * command line did not give comes from the checkpoint; a different model
 * shape is an error, other differences a note. */
static int resume_config(config *c, const config *saved, const given_set *given, int quiet) {
    for (int i = 0; i < N_HP; i++) {
        void *dst = (char *)c + hp_fields[i].offset;
        const void *src = (const char *)saved + hp_fields[i].offset;
        size_t sz = hp_fields[i].is_real ? sizeof(double) : sizeof(int64_t);
        if (!was_given(given, hp_fields[i].name)) {
            memcpy(dst, src, sz);
        } else if (memcmp(dst, src, sz) != 0) {
            if (!strcmp(hp_fields[i].name, "d") || !strcmp(hp_fields[i].name, "layers"))
                return fail("--%s differs from the checkpoint's; a resumed run keeps the model's "
                            "shape",
                            hp_fields[i].name);
            if (!quiet)
                fprintf(stderr,
                        "%s: note: --%s differs from the checkpoint's: the run goes on with the "
                        "new value (and will not replay the original run)\n",
                        prog, hp_fields[i].name);
        }
    }
    /* a --steps run resumed with only --time-budget, or the reverse */
    if (was_given(given, "steps") && !was_given(given, "time-budget")) c->time_budget = 0;
    if (was_given(given, "time-budget") && !was_given(given, "steps")) c->steps = 0;
    return 0;
}

static void trainer_free(trainer *tr) {
    gad_host_free(tr->in);
    gad_host_free(tr->tg);
    gad_release(tr->idx);
    gad_release(tr->targets);
    gad_release(tr->ones);
    free(tr->grads);
    free(tr->hgrads);
    gad_grad_scaler_free(tr->sc);
    if (tr->wm.ps) model_free(&tr->wm);
    gad_rng_free(tr->batch_rng);
    gad_optim_free(tr->opt);
    model_free(&tr->m);
    free(tr->ds.bytes);
}

/* A --steps run at or below its warm-up would only warm up: the rate would
 * rise for the whole run and never decay. With the default warm-up it is
 * shortened to a tenth of the run (so that the rate still decays to
 * --min-lr), with an explicit --warmup it is kept; a warning says which. */
static void check_warmup(config *c, const given_set *given, int quiet) {
    if (c->steps <= 0 || c->steps > c->warmup) return;
    if (was_given(given, "warmup")) {
        if (!quiet)
            fprintf(stderr,
                    "%s: warning: --steps %lld is at or below --warmup %lld: the learning rate "
                    "rises for the whole run (to %g) and never decays\n",
                    prog, (long long)c->steps, (long long)c->warmup,
                    c->lr * (double)c->steps / (double)(c->warmup > 0 ? c->warmup : 1));
        return;
    }
    int64_t w = c->steps / 10;
    if (!quiet)
        fprintf(stderr,
                "%s: warning: --steps %lld is at or below the default warm-up of %lld steps: "
                "the warm-up is shortened to %lld (a tenth of the run) so that the learning "
                "rate still decays to --min-lr; --warmup sets it\n",
                prog, (long long)c->steps, (long long)c->warmup, (long long)w);
    c->warmup = w;
}

/* The schedule of the run (schedule.h): a fresh run's warm-up and cosine,
 * or, resuming (saved: the checkpoint's configuration), the checkpoint's
 * schedule continued, re-anchored at the resume step when a setting of
 * the schedule changed. */
static void setup_schedule(trainer *tr, const config *saved, const given_set *given) {
    const config *c = tr->c;
    lr_schedule next = {c->lr, c->min_lr, c->warmup, 0, 0, c->time_budget > 0};
    if (!saved) {
        tr->sched = next;
        return;
    }
    lr_schedule old = {saved->lr, saved->min_lr, saved->warmup, tr->rs.lr_anchor,
                       tr->rs.lr_anchor_lr, saved->time_budget > 0};
    int64_t k = tr->rs.step, old_total = tr->rs.lr_total;
    if (old_total < 0) /* a checkpoint of version 1: the end its last update used */
        old_total = schedule_total(saved->steps, saved->time_budget, k > 0 ? k - 1 : 0,
                                   tr->rs.seconds);
    int changed = saved->steps != c->steps || saved->time_budget != c->time_budget ||
                  saved->lr != c->lr || saved->min_lr != c->min_lr ||
                  saved->warmup != c->warmup;
    int lr_given = was_given(given, "lr") && saved->lr != c->lr;
    tr->sched = schedule_resume(&old, old_total, next, k, changed, lr_given);
    if (changed && !tr->quiet) {
        if (tr->sched.anchor > 0)
            fprintf(stderr,
                    "%s: note: the schedule changed: from step %lld the learning rate decays "
                    "from %.3g (%s) to --min-lr %g at the new end\n",
                    prog, (long long)k, tr->sched.anchor_lr,
                    lr_given ? "--lr" : "its value at that step", c->min_lr);
        else
            fprintf(stderr,
                    "%s: note: the schedule changed during its warm-up: the warm-up goes on, "
                    "then the decay to --min-lr %g at the new end\n",
                    prog, c->min_lr);
    }
    tr->rs.lr_anchor = tr->sched.anchor;
    tr->rs.lr_anchor_lr = tr->sched.anchor_lr;
}

/* Resuming: the metrics up to the checkpoint's step, and metrics.csv
 * rewritten (atomically) with just those rows, so that rows a killed run
 * wrote past its last checkpoint are not kept twice when the steps after
 * it are trained again. The session of the new rows is one past the last. */
static int resume_metrics(trainer *tr) {
    metrics *mt = tr->mt;
    int rc = read_csv(tr->csv_path, tr->rs.step, mt);
    if (rc == 0 && !tr->quiet &&
        (metrics_contiguous(mt) != 0 || mt->n != (size_t)tr->rs.step + 1))
        fprintf(stderr,
                "%s: note: %s does not hold every step from 0 to the checkpoint's %lld once "
                "(%zu rows): the metrics of the missing steps are lost\n",
                prog, tr->csv_path, (long long)tr->rs.step, mt->n);
    if (rc == 0) rc = write_atomic(tr->csv_path, write_csv, mt);
    tr->session = mt->n > 0 ? mt->rows[mt->n - 1].session + 1 : 1;
    for (size_t i = 0; i < mt->n; i++)
        if (isfinite(mt->rows[i].val)) {
            tr->last_val = mt->rows[i].val;
            tr->last_val_step = mt->rows[i].step;
        }
    return rc;
}

/* --precision bf16/f16: tr->wm, the model over working copies of the
 * masters in tr->prec (gad_cast of each, a leaf of its own), registered
 * with the optimizer, which rewrites them from the masters after every
 * step. model_init gives wm its architecture's layout; its own f32
 * parameters are dropped at once. */
static int make_working_model(trainer *tr) {
    const model *m = &tr->m;
    model *w = &tr->wm;
    if (model_init(w, m->d, m->layers, 0) != 0) return -1;
    w->ctx = m->ctx;
    gad_params_free(w->ps);
    w->ps = gad_params_new();
    tr->hgrads = calloc((size_t)m->np, sizeof *tr->hgrads);
    int rc = w->ps && tr->hgrads ? 0 : fail("out of memory");
    gad_scope_begin();
    for (int i = 0; i < m->np && rc == 0; i++) {
        gad_no_grad_begin();
        gad_tensor *t = gad_detach(gad_cast(m->params[i], tr->prec));
        gad_no_grad_end();
        if (!t || !gad_requires_grad(t) || !gad_params_add(w->ps, gad_params_name(m->ps, i), t))
            rc = fail_gad("cannot make the half working copy of the model");
    }
    gad_scope_end();
    if (rc != 0) return rc;
    model_bind(w);
    if (gad_optim_set_copies(tr->opt, w->params) != GAD_OK)
        return fail_gad("cannot give the optimizer the working copies");
    return 0;
}

/* Read the configuration (and, resuming, the checkpoint), the data; build
 * the model and the optimizer. */
static int trainer_setup(trainer *tr, config *c, const given_set *given, metrics *mt) {
    tr->c = c;
    tr->mt = mt;
    tr->last_val = NAN;
    tr->last_val_step = -1;
    join_path(tr->ckpt_path, sizeof tr->ckpt_path, c->out, "checkpoint.safetensors");
    join_path(tr->csv_path, sizeof tr->csv_path, c->out, "metrics.csv");
    join_path(tr->svg_path, sizeof tr->svg_path, c->out, "loss.svg");
    gad_checkpoint *cp = NULL;
    config saved = *c;
    if (c->resume) {
        cp = open_checkpoint(tr->ckpt_path, &saved, &tr->rs);
        if (!cp || resume_config(c, &saved, given, tr->quiet) != 0) {
            gad_checkpoint_free(cp);
            return -1;
        }
    } else {
        if (make_dirs(c->out) != 0) return -1;
        if (!tr->quiet && access(tr->ckpt_path, F_OK) == 0)
            fprintf(stderr,
                    "%s: note: %s holds a checkpoint: this run starts over and replaces it "
                    "(--resume continues it)\n",
                    prog, c->out);
    }
    if (cp && !was_given(given, "precision")) {
        c->precision = precision_name((int)tr->rs.precision);
    } else if (cp && precision_dtype(c->precision) != tr->rs.precision && !tr->quiet) {
        fprintf(stderr,
                "%s: note: --precision differs from the checkpoint's: the run goes on with the "
                "new value (and will not replay the original run)\n",
                prog);
    }
    tr->prec = precision_dtype(c->precision);
    if (tr->prec < 0) {
        gad_checkpoint_free(cp);
        return -1;
    }
    if (c->steps <= 0 && c->time_budget <= 0) c->time_budget = 180;
    remove_stale_tmp(c->out, tr->quiet);
    if (!cp) check_warmup(c, given, tr->quiet);
    setup_schedule(tr, cp ? &saved : NULL, given);
    int rc = 0;
    if (c->min_lr > c->lr) rc = fail("--min-lr %g is above --lr %g", c->min_lr, c->lr);
    if (rc == 0) rc = check_step_bytes(c->batch, c->seq, NULL);
    if (rc == 0) rc = load_text(c->data, &tr->ds);
    if (rc == 0) rc = check_data_fits(&tr->ds, c->data, c->seq);
    int64_t BT = 0;
    if (rc == 0 && checked_mul(c->batch, c->seq, &BT) != 0) rc = fail("out of memory");
    mt->tokens_per_step = BT;
    if (rc == 0) {
        /* pinned where there is a GPU: the copies to it need no staging */
        tr->in = gad_host_alloc((size_t)BT * sizeof *tr->in);
        tr->tg = gad_host_alloc((size_t)BT * sizeof *tr->tg);
        tr->batch_rng = gad_rng_new(0);
        if (!tr->in || !tr->tg || !tr->batch_rng) rc = fail("out of memory");
    }
    /* the model on the host (initialized or loaded), then on the device,
     * then its optimizer (whose state a resume loads onto that device) */
    if (rc == 0) rc = model_init(&tr->m, c->d, c->layers, (uint64_t)c->seed);
    if (rc == 0 && !cp) rc = model_init_output_bias(&tr->m, tr->ds.bytes, tr->ds.n_train);
    if (rc == 0 && cp) rc = ckpt_load_params(cp, tr->ckpt_path, &tr->m);
    if (rc == 0) rc = model_to_device(&tr->m, gad_default_device());
    if (rc == 0) {
        tr->grads = calloc((size_t)tr->m.np, sizeof *tr->grads);
        tr->opt = model_optimizer(&tr->m, c);
        if (!tr->grads) rc = fail("out of memory");
        else if (!tr->opt) rc = fail_gad("cannot create the optimizer");
    }
    if (rc == 0 && cp) {
        rc = ckpt_load_optim(cp, tr->ckpt_path, tr->opt);
        if (rc == 0 && gad_optim_steps(tr->opt) != tr->rs.step - tr->rs.skipped)
            rc = fail("'%s': the optimizer state is at step %lld but the run at step %lld "
                      "(%lld skipped)",
                      tr->ckpt_path, (long long)gad_optim_steps(tr->opt),
                      (long long)tr->rs.step, (long long)tr->rs.skipped);
        if (rc == 0) rc = resume_metrics(tr);
    }
    if (rc == 0 && tr->prec != GAD_F32) rc = make_working_model(tr);
    if (rc == 0 && tr->prec == GAD_F16) {
        tr->sc = gad_grad_scaler_new(NULL);
        if (!tr->sc) rc = fail_gad("cannot create the loss scaler");
        /* a resumed f16 run goes on with the scale it stopped at */
        if (rc == 0 && cp && tr->rs.precision == GAD_F16 &&
            gad_grad_scaler_load_state(tr->sc, tr->rs.scale, tr->rs.scale_good) != GAD_OK)
            rc = fail_gad("cannot restore the loss scaler");
    }
    if (cp && tr->rs.precision != GAD_F16) tr->rs.skipped = 0; /* counted from here on */
    tr->rs.precision = tr->prec;
    tr->saved_step = cp ? tr->rs.step : -1;
    gad_checkpoint_free(cp);
    return rc;
}

/* One optimizer step on the batch of tr->rs.step: forward, gradients,
 * clipping, AdamW. The loss, learning rate and gradient norm go to *row. */
static int trainer_step(trainer *tr, double seconds, metric_row *row) {
    const config *c = tr->c;
    int64_t step = tr->rs.step;
    int64_t total = schedule_total(c->steps, c->time_budget, step, seconds);
    double lr = schedule_lr(&tr->sched, step, total), loss = NAN, gnorm = NAN;
    sample_batch(&tr->ds, tr->batch_rng, (uint64_t)c->seed, step, c->batch, c->seq, tr->in,
                 tr->tg);
    int rc = 0;
    int64_t b0, nb; /* this rank's rows of the global batch (dist.c) */
    dist_shard(c->batch, &b0, &nb);
    if (!tr->idx) { /* no scope is open: the trainer owns them */
        int64_t n = nb * c->seq;
        tr->idx = gad_zeros((int64_t[]){nb, c->seq}, 2, GAD_I64);
        tr->targets = gad_zeros(&n, 1, GAD_I64);
        tr->ones = gad_ones(&n, 1, tr->prec); /* masked_ce's weights: the logits' dtype */
        if (!tr->idx || !tr->targets || !tr->ones) return fail_gad("cannot make the batch");
    }
    if (gad_write_i64(tr->idx, tr->in + b0 * c->seq, (size_t)(nb * c->seq)) != GAD_OK ||
        gad_write_i64(tr->targets, tr->tg + b0 * c->seq, (size_t)(nb * c->seq)) != GAD_OK)
        return fail_gad("cannot copy the batch to the device");
    gad_mem_stats m0, m1;
    gad_mem_stats_get(&m0);
    gad_scope_begin();
    int half = tr->prec != GAD_F32, finite = 1;
    gad_tensor *lt = model_loss_on(half ? &tr->wm : &tr->m, tr->idx, tr->targets, tr->ones);
    gad_mem_stats_get(&m1);
    if (m1.live_bytes - m0.live_bytes > tr->act_bytes) tr->act_bytes = m1.live_bytes - m0.live_bytes;
    int ok = lt != NULL;
    if (ok && !half) {
        ok = gad_grad(lt, tr->m.params, tr->m.np, tr->grads) == GAD_OK;
    } else if (ok) { /* half gradients of the copies, widened (f16: and unscaled) to f32 */
        gad_tensor *root = tr->sc ? gad_grad_scaler_scale(tr->sc, lt) : lt;
        ok = root && gad_grad(root, tr->wm.params, tr->m.np, tr->hgrads) == GAD_OK;
        if (ok && tr->sc) {
            finite = gad_grad_scaler_unscale(tr->sc, tr->hgrads, tr->grads, tr->m.np);
            ok = finite >= 0; /* the unscaled gradients are this scope's */
        }
        for (int i = 0; ok && !tr->sc && i < tr->m.np; i++)
            ok = (tr->grads[i] = gad_cast(tr->hgrads[i], GAD_F32)) != NULL;
    }
    if (!ok) {
        rc = fail_gad("the training step failed");
        dist_average(0, tr->m.params, tr->grads, tr->m.np, &loss);
    } else {
        loss = gad_item(lt);
        if (dist_average(1, tr->m.params, tr->grads, tr->m.np, &loss) != 0) rc = -1;
        if (rc == 0 && c->clip > 0) {
            gnorm = gad_clip_grad_norm(tr->grads, tr->m.np, c->clip);
            if (isnan(gnorm) && gad_last_error()) rc = fail_gad("gradient clipping failed");
        }
        /* f16: gradients that overflowed (on any rank: the average or its
         * norm is not finite) skip the step, and the scaler backs off */
        int skip = rc == 0 && tr->sc && isfinite(loss) &&
                   (!finite || (c->clip > 0 && !isfinite(gnorm)));
        if (skip) {
            tr->rs.skipped++;
            if (gad_grad_scaler_update(tr->sc, 0) != GAD_OK) rc = fail_gad("the loss scaler");
        } else if (rc == 0 && !(isfinite(loss) && (c->clip <= 0 || isfinite(gnorm))))
            rc = fail("the loss is %g (gradient norm %g) at step %lld: training diverged; try "
                      "a lower --lr",
                      loss, gnorm, (long long)step);
        if (rc == 0 && !skip) {
            gad_optim_set_lr(tr->opt, lr);
            if (gad_optim_step(tr->opt, tr->grads) != GAD_OK)
                rc = fail_gad("the AdamW step failed");
            else
                tr->rs.lr_total = total;
            if (rc == 0 && tr->sc && gad_grad_scaler_update(tr->sc, 1) != GAD_OK)
                rc = fail_gad("the loss scaler");
        }
    }
    gad_scope_end();
    *row = (metric_row){step + 1, NAN, loss, NAN, lr, gnorm, tr->session};
    return rc;
}

/* Write the CSV, the checkpoint and the plot, each atomically, in that
 * order: a kill between two of them leaves a CSV with rows up to this step
 * beside the previous checkpoint, and a resume from that checkpoint cuts
 * the CSV back to it (resume_metrics), so every step has one row (the other
 * order lost the rows since the last save for good). The test_kill_point
 * calls are the kill test's hook (rundir.h); they do nothing normally. */
static int trainer_save(trainer *tr) {
    tr->rs.seconds = now_seconds() - tr->t_start;
    tr->rs.threads = gad_num_threads();
    tr->rs.world = dist_size();
    if (tr->sc && gad_grad_scaler_state(tr->sc, &tr->rs.scale, &tr->rs.scale_good) != GAD_OK)
        return fail_gad("cannot read the loss scaler's state");
    if (dist_rank() != 0) { /* rank 0 writes; the others hold the same state */
        tr->saved_step = tr->rs.step;
        return 0;
    }
    plot_ctx pc = {tr->mt, tr->c};
    test_kill_point("save-begin", tr->rs.step);
    int rc = write_atomic(tr->csv_path, write_csv, tr->mt);
    test_kill_point("csv", tr->rs.step);
    if (rc == 0) rc = save_checkpoint(tr->ckpt_path, &tr->m, tr->opt, tr->c, &tr->rs);
    test_kill_point("checkpoint", tr->rs.step);
    if (rc == 0) rc = write_atomic(tr->svg_path, write_svg, &pc);
    test_kill_point("plot", tr->rs.step);
    if (rc == 0) tr->saved_step = tr->rs.step;
    return rc;
}

/* The progress bar or line after a step (evaluated: row->val is set). */
static void trainer_progress(trainer *tr, const metric_row *row, int64_t first_step,
                             double session_start) {
    const config *c = tr->c;
    double el = now_seconds() - tr->t_start;
    double per_step = (el - session_start) / (double)(row->step - first_step);
    double tok_s = tr->pg.step_ema > 0 ? (double)(c->batch * c->seq) / tr->pg.step_ema : 0;
    progress_info pi = {row->step, 0, 0, row->train, tr->last_val, tr->last_val_step, row->lr,
                        tok_s, -1};
    if (c->time_budget > 0) {
        pi.frac = el / c->time_budget;
        pi.eta = c->time_budget - el;
    }
    if (c->steps > 0) { /* whichever ends first */
        double f = (double)row->step / (double)c->steps;
        double e = (double)(c->steps - row->step) * per_step;
        if (f >= pi.frac) pi.frac = f, pi.total = c->steps;
        if (pi.eta < 0 || e < pi.eta) pi.eta = e;
    }
    if (pi.frac > 1) pi.frac = 1;
    if (isfinite(row->val)) {
        progress_line(&tr->pg, "step %lld  loss %.4f  val %.4f  lr %.2e  %.0f tok/s  %.1f s",
                      (long long)row->step, row->train, row->val, row->lr, tok_s, el);
        if (tr->pg.tty) progress_update(&tr->pg, &pi, 1);
    } else if (tr->pg.tty || row->step % c->log_every == 0) {
        progress_update(&tr->pg, &pi, 0);
    }
}

static void trainer_banner(const trainer *tr) {
    const config *c = tr->c;
    int nt = gad_num_threads();
    gad_device dev = gad_device_of(tr->m.emb);
    printf("%s: %lld parameters (D=%lld, L=%lld), batch %lldx%lld bytes, %d thread%s%s%s\n",
           lm_name, (long long)model_param_count(&tr->m), (long long)c->d, (long long)c->layers,
           (long long)c->batch, (long long)c->seq, nt, nt == 1 ? "" : "s",
           dev == GAD_CPU ? "" : ", on ", dev == GAD_CPU ? "" : gad_device_name(dev));
    printf("data: %s, %lld bytes (%lld for training, %lld held out)\n", c->data,
           (long long)tr->ds.n, (long long)tr->ds.n_train, (long long)(tr->ds.n - tr->ds.n_train));
    if (c->steps > 0 && c->time_budget > 0)
        printf("training: %lld steps or %g s, whichever ends first", (long long)c->steps,
               c->time_budget);
    else if (c->steps > 0)
        printf("training: %lld steps", (long long)c->steps);
    else
        printf("training: a %g s budget", c->time_budget);
    printf("; AdamW lr %g (warm-up %lld, cosine to %g), wd %g (not on gains, bout), clip %g\n",
           c->lr, (long long)c->warmup, c->min_lr, c->wd, c->clip);
    if (tr->prec != GAD_F32)
        printf("precision: %s working copies of f32 masters%s%s\n", c->precision,
               tr->sc ? ", dynamic loss scaling" : "",
               tr->prec == GAD_BF16 && gad_matmul_medium_native()
                   ? ", every product in bf16 (GAD_MATMUL_MEDIUM)"
                   : "");
    if (tr->rs.step > 0)
        printf("resumed from %s at step %lld (%.1f s)\n", tr->ckpt_path, (long long)tr->rs.step,
               tr->rs.seconds);
    fflush(stdout);
    if (tr->rs.step > 0 && tr->rs.threads != nt)
        fprintf(stderr,
                "%s: note: the checkpoint was trained with %lld thread%s, this run uses %d: the "
                "losses will not replay the uninterrupted run bit for bit (use --threads %lld)\n",
                prog, (long long)tr->rs.threads, tr->rs.threads == 1 ? "" : "s", nt,
                (long long)tr->rs.threads);
}

/* Train (or resume) with configuration c: the checkpoint, CSV and SVG go
 * to c->out. quiet: no output but errors (the self-test). */
int train(config *c, const given_set *given, int quiet, train_result *res) {
    memset(res, 0, sizeof *res);
    res->val = NAN;
    trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.quiet = quiet;
    int rc = trainer_setup(&tr, c, given, &res->mt);
    rc = dist_setup(rc, c, &tr.m, c->resume ? tr.rs.world : 0); /* mpirun: dist.c */
    tr.pg.tty = !quiet && !c->plain && isatty(STDOUT_FILENO);
    if (rc == 0 && !quiet) trainer_banner(&tr);

    /* the validation loss at initialization */
    if (rc == 0 && tr.rs.step == 0 && tr.mt->n == 0) {
        double v;
        rc = evaluate(&tr.m, &tr.ds, c->val_windows, c->batch, c->seq, &v);
        if (rc == 0) rc = metrics_add(tr.mt, (metric_row){0, 0, NAN, v, NAN, NAN, 0});
        tr.last_val = v;
        tr.last_val_step = 0;
        if (rc == 0 && !quiet)
            progress_line(&tr.pg, "step 0  val %.4f (a uniform guess: %.4f)", v, LN_VOCAB);
    }

    /* the loop: stop at --steps or the time budget (done: evaluate and
     * save), or at --stop-at or a signal (interrupted: save) */
    const double session_start = tr.rs.seconds;
    const int64_t first_step = tr.rs.step;
    tr.t_start = now_seconds() - tr.rs.seconds;
    int done = 0, stopped = 0, catching = rc == 0 && !quiet;
    signal_state ss;
    if (catching) signals_catch(&ss);
    while (rc == 0) {
        double t0 = now_seconds(), seconds = t0 - tr.t_start;
        if ((rc = dist_sync(&seconds)) != 0) break; /* rank 0's clock, anyone's signal */
        if (g_interrupted) { /* even at the end: its evaluation may have been cut short */
            stopped = 1;
            break;
        }
        if ((c->steps > 0 && tr.rs.step >= c->steps) ||
            (c->time_budget > 0 && seconds >= c->time_budget) ||
            tr.rs.step >= (int64_t)MAX_STEPS) { /* a checkpoint holds no later step */
            done = 1;
            break;
        }
        if (c->stop_at > 0 && tr.rs.step >= c->stop_at) {
            stopped = 1;
            break;
        }
        metric_row row;
        /* bf16: the training step's f32 products (inside the fused blocks)
         * in bf16 too, where the CPU's bf16 units are the faster ones, as
         * PyTorch's autocast runs every product of a bf16 model; validation,
         * checkpoints and sampling stay on the f32 masters in f32 */
        gad_matmul_precision mp = gad_matmul_precision_get();
        if (tr.prec == GAD_BF16) gad_set_matmul_precision(GAD_MATMUL_MEDIUM);
        rc = trainer_step(&tr, seconds, &row);
        gad_set_matmul_precision(mp);
        if (rc != 0) break;
        tr.rs.step = row.step;
        double t1 = now_seconds();
        row.seconds = t1 - tr.t_start;
        tr.pg.step_ema = tr.pg.step_ema > 0 ? 0.9 * tr.pg.step_ema + 0.1 * (t1 - t0) : t1 - t0;
        int last = (c->steps > 0 && row.step >= c->steps) ||
                   (c->time_budget > 0 && row.seconds >= c->time_budget);
        if ((c->eval_every > 0 && row.step % c->eval_every == 0) || last) {
            rc = evaluate(&tr.m, &tr.ds, c->val_windows, c->batch, c->seq, &row.val);
            if (rc > 0) { /* a signal stopped it: this step has no validation loss */
                rc = 0;
            } else {
                tr.last_val = row.val;
                tr.last_val_step = row.step;
            }
        }
        if (rc == 0) rc = metrics_add(tr.mt, row);
        int stopping = (c->stop_at > 0 && row.step >= c->stop_at) || g_interrupted;
        if (rc == 0 && ((c->ckpt_every > 0 && row.step % c->ckpt_every == 0) || last || stopping))
            rc = trainer_save(&tr);
        if (rc == 0 && !quiet) trainer_progress(&tr, &row, first_step, session_start);
    }
    progress_clear(&tr.pg);
    if (catching) signals_restore(&ss);
    /* the budget ran out during an evaluation or a checkpoint: the last
     * step still gets its final evaluation */
    metric_row *tail = tr.mt->n > 0 ? &tr.mt->rows[tr.mt->n - 1] : NULL;
    if (rc == 0 && done && tail && tail->step == tr.rs.step && isnan(tail->val)) {
        rc = evaluate(&tr.m, &tr.ds, c->val_windows, c->batch, c->seq, &tail->val);
        if (rc > 0) { /* a signal as the run ended: it stops without this evaluation */
            rc = 0;
            done = 0;
            stopped = 1;
        } else {
            tr.last_val = tail->val;
            tr.last_val_step = tail->step;
            tr.saved_step = -1;
            if (rc == 0 && !quiet)
                progress_line(&tr.pg, "step %lld  loss %.4f  val %.4f  (final)",
                              (long long)tail->step, tail->train, tail->val);
        }
    }
    /* a signal between two checks, or a checkpoint that was already done */
    if (rc == 0 && tr.saved_step != tr.rs.step) rc = trainer_save(&tr);
    res->steps = tr.rs.step;
    res->val = tr.last_val;
    res->interrupted = stopped;
    /* (the warm-up follows the pace, so this takes a pace that changed
     * sharply; at the end the run's length is the steps done) */
    int64_t warm = schedule_warmup(&tr.sched, tr.rs.step);
    if (rc == 0 && !quiet && done && c->time_budget > 0 && tr.sched.anchor <= 0 &&
        tr.rs.step <= warm)
        fprintf(stderr,
                "%s: warning: the time budget ran out after %lld steps, within the warm-up of "
                "%lld: the learning rate never decayed (a smaller --warmup, or a larger "
                "budget)\n",
                prog, (long long)tr.rs.step, (long long)warm);

    if (rc == 0 && !quiet) {
        double el = now_seconds() - tr.t_start;
        int64_t tokens, trained_tokens; /* counts: they saturate rather than overflow */
        checked_mul(tr.rs.step, tr.mt->tokens_per_step, &tokens);
        checked_mul(tr.rs.step - first_step, tr.mt->tokens_per_step, &trained_tokens);
        if (stopped)
            printf("stopped at step %lld; continue with: %s train --out %s --resume\n",
                   (long long)tr.rs.step, lm_name, c->out);
        else
            printf("done: %lld steps, %lld tokens in %.1f s (%.0f tokens/s); validation loss "
                   "%.4f nats/byte (%.3f bits/byte)\n",
                   (long long)tr.rs.step, (long long)tokens, el,
                   trained_tokens > 0 ? (double)trained_tokens / (el - session_start) : 0.0,
                   tr.last_val, tr.last_val / log(2.0));
        if (tr.act_bytes > 0)
            printf("activations: %.2f MB at most after a step's forward pass (%s)\n",
                   (double)tr.act_bytes / 1e6, c->precision);
        if (tr.sc)
            printf("f16: %lld step%s skipped for overflow, loss scale %g\n",
                   (long long)tr.rs.skipped, tr.rs.skipped == 1 ? "" : "s",
                   gad_grad_scaler_scale_value(tr.sc));
        printf("checkpoint: %s\nmetrics:    %s\nplot:       %s (open it in a browser)\n",
               tr.ckpt_path, tr.csv_path, tr.svg_path);
        fflush(stdout);
        if (done && c->bytes > 0) {
            printf("\nsample (prompt \"%s\", temperature %g, top-k %lld):\n", c->prompt,
                   c->temperature, (long long)c->top_k);
            fflush(stdout);
            rc = generate(&tr.m, c->prompt, c->bytes, c->temperature, c->top_k,
                          (uint64_t)c->seed, stdout);
        }
    }
    trainer_free(&tr);
    return rc;
}
