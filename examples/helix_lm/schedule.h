/* schedule.h: the learning-rate schedule of a training run, and how a
 * resumed run continues it (schedule.c).
 *
 * A fresh run: a linear warm-up to --lr over W updates, then a cosine
 * decay to --min-lr at the end of the run, E updates (gad's
 * gad_lr_warmup_cosine). E is --steps, or, with a --time-budget, an
 * estimate from the pace so far (updates done x budget / seconds used),
 * whichever is smaller. W is --warmup; with a --time-budget it follows the
 * pace as E does: at most half of E, so that a slow or busy machine, which
 * does fewer updates in the budget, still ends its warm-up in time to
 * decay. (Half, not less: the README's 180 s run, 573 updates with the
 * default 300, warmed up for about half of it; a machine that makes 600
 * updates or more keeps the 300.)
 *
 * A resumed run at step k (k updates done) whose schedule settings are the
 * checkpoint's (--steps, --time-budget, --lr, --min-lr, --warmup) goes on
 * with the same function: it replays the uninterrupted run. When one of
 * them changed (a longer --steps, say), the schedule is re-anchored at k:
 *
 *   lr(s) = min_lr + (l_k - min_lr) (1 + cos(pi (s - k) / (E - k))) / 2
 *           for k <= s < E, and min_lr from s = E on,
 *
 * where l_k is the learning rate the old schedule gives update k (so the
 * rate is continuous at the resume step) or, when --lr is given and differs
 * from the checkpoint's, that --lr (a deliberate restart of the decay). A
 * run resumed during its warm-up (k < --warmup, not yet anchored) keeps the
 * warm-up instead and decays to the new end from --lr. The anchor (k and
 * l_k) is stored in the checkpoint, so a re-anchored run resumed again
 * replays too. A run that had finished (l_k = min_lr) therefore goes on at
 * min_lr; pass --lr to decay from a higher rate again. */
#ifndef HELIX_SCHEDULE_H
#define HELIX_SCHEDULE_H

#include <stdint.h>

typedef struct lr_schedule {
    double peak, min_lr; /* --lr, --min-lr */
    int64_t warmup;      /* --warmup */
    int64_t anchor;      /* 0: the warm-up and cosine of a fresh run; else k */
    double anchor_lr;    /* l_k (when anchor > 0) */
    int follow_pace;     /* a --time-budget run: the warm-up is at most E / 2 */
} lr_schedule;

/* The warm-up W of a run that ends after `total` updates. */
int64_t schedule_warmup(const lr_schedule *s, int64_t total);

/* The learning rate of update `step` (0-based) of a run that ends after
 * `total` updates. */
double schedule_lr(const lr_schedule *s, int64_t step, int64_t total);

/* The end E of a run for the update `step`: steps (0: none), or with a time
 * budget (0: none) the estimate from the pace (seconds of training so far),
 * whichever is smaller. A pure function of its arguments. */
int64_t schedule_total(int64_t steps, double time_budget, int64_t step, double seconds);

/* The schedule of a run resumed at step k: old is the checkpoint's (its
 * last update used old_total as its end), next holds the new settings
 * (peak, min_lr, warmup, follow_pace; anchor ignored); changed says whether a setting
 * of the schedule differs, lr_given whether --lr was given and differs.
 * Returns the schedule to go on with (see the top of this file). */
lr_schedule schedule_resume(const lr_schedule *old, int64_t old_total, lr_schedule next,
                            int64_t k, int changed, int lr_given);

#endif
