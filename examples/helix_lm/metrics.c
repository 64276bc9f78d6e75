/* metrics.c: the metrics of a training run, one row per step: collected in
 * memory, written as metrics.csv and read back when a run resumes. */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "util.h"

int metrics_add(metrics *mt, metric_row r) {
    if (mt->n == mt->cap) {
        size_t cap = mt->cap ? 2 * mt->cap : 1024;
        metric_row *nr = realloc(mt->rows, cap * sizeof *nr);
        if (!nr) return fail("out of memory for metrics");
        mt->rows = nr;
        mt->cap = cap;
    }
    mt->rows[mt->n++] = r;
    return 0;
}

static void put_num(FILE *f, const char *fmt, double v) {
    fputc(',', f);
    if (!isnan(v)) fprintf(f, fmt, v);
}

int write_csv(FILE *f, const void *ctx) {
    const metrics *mt = ctx;
    fprintf(f, "step,seconds,tokens,train_loss,val_loss,lr,grad_norm,session\n");
    for (size_t i = 0; i < mt->n; i++) {
        const metric_row *r = &mt->rows[i];
        fprintf(f, "%lld", (long long)r->step);
        put_num(f, "%.3f", r->seconds);
        int64_t tokens; /* saturates rather than overflows */
        checked_mul(r->step, mt->tokens_per_step, &tokens);
        fprintf(f, ",%lld", (long long)tokens);
        put_num(f, "%.9g", r->train);
        put_num(f, "%.9g", r->val);
        put_num(f, "%.9g", r->lr);
        put_num(f, "%.6g", r->gnorm);
        fprintf(f, ",%lld\n", (long long)r->session);
    }
    return 0;
}

int read_csv(const char *path, int64_t max_step, metrics *mt) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512];
    int rc = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, "step,", 5) != 0) {
        fclose(f);
        return fail("'%s' is not a %s metrics file", path, lm_name);
    }
    while (rc == 0 && fgets(line, sizeof line, f)) {
        double v[8];
        char *p = line;
        for (int i = 0; i < 8; i++) {
            char *end;
            v[i] = strtod(p, &end);
            if (end == p) v[i] = NAN;
            p = end;
            if (*p == ',') p++;
        }
        if (!(v[0] >= 0 && v[0] <= MAX_STEPS)) continue; /* not a step: no cast */
        if ((int64_t)v[0] > max_step) break;
        int64_t session = v[7] >= 0 && v[7] <= MAX_STEPS ? (int64_t)v[7] : 0;
        rc = metrics_add(mt, (metric_row){(int64_t)v[0], v[1], v[3], v[4], v[5], v[6], session});
    }
    fclose(f);
    return rc;
}

int metrics_contiguous(const metrics *mt) {
    for (size_t i = 0; i < mt->n; i++)
        if (mt->rows[i].step != (int64_t)i) return -1;
    return 0;
}

