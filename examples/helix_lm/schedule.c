/* schedule.c: the learning-rate schedule: warm-up and cosine decay, the
 * end of a time-budget run (and its warm-up) estimated from its pace, and the re-anchored
 * decay of a run resumed with other settings (schedule.h says how). */
#include "schedule.h"

#include <math.h>

#include "gad.h"

/* schedule_total's "no estimate yet" and above: no end in sight */
#define NO_END (INT64_MAX / 4)

int64_t schedule_warmup(const lr_schedule *s, int64_t total) {
    int64_t w = s->warmup;
    if (s->follow_pace && total < NO_END && total / 2 < w) w = total / 2;
    return w;
}

double schedule_lr(const lr_schedule *s, int64_t step, int64_t total) {
    if (s->anchor <= 0)
        return gad_lr_warmup_cosine(step, schedule_warmup(s, total), total, s->peak, s->min_lr);
    if (step >= total || total <= s->anchor) return s->min_lr;
    if (step < s->anchor) return s->anchor_lr; /* before the resume: not used */
    const double pi = 3.14159265358979323846;
    double frac = (double)(step - s->anchor) / (double)(total - s->anchor);
    return s->min_lr + 0.5 * (s->anchor_lr - s->min_lr) * (1.0 + cos(pi * frac));
}

int64_t schedule_total(int64_t steps, double time_budget, int64_t step, double seconds) {
    int64_t total = steps;
    if (time_budget > 0) {
        /* the first 10 updates give no pace yet: no decay before them */
        int64_t est = NO_END;
        if (step >= 10 && seconds > 0) {
            double e = (double)step * time_budget / seconds;
            if (e < 1e15) est = (int64_t)e;
        }
        if (total <= 0 || est < total) total = est;
    }
    return total;
}

lr_schedule schedule_resume(const lr_schedule *old, int64_t old_total, lr_schedule next,
                            int64_t k, int changed, int lr_given) {
    if (!changed || k <= 0) {
        next.anchor = old->anchor;
        next.anchor_lr = old->anchor_lr;
        return next;
    }
    if (old->anchor <= 0 && k < schedule_warmup(old, old_total)) { /* still warming up */
        next.anchor = 0;
        next.anchor_lr = 0;
        return next;
    }
    next.anchor = k;
    next.anchor_lr = lr_given ? next.peak : schedule_lr(old, k, old_total);
    return next;
}
