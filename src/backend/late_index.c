/* late_index.c: the words of an index error that a back end found on its
 * device and reports at a later synchronising call (backend.h,
 * gad_late_index): one text for every back end that defers its checks. */
#include "backend/backend.h"

#include <stdio.h>

void gad__late_index_text(char *buf, size_t cap, const gad_late_index *f) {
    long long v = (long long)f->value, p = (long long)f->pos;
    long long lo = (long long)f->lo, hi = (long long)f->hi;
    if (f->target)
        snprintf(buf, cap, "target %lld of row %lld out of bounds for %lld classes", v, p, hi);
    else if (lo == -hi) /* an op's own check: negatives wrap once */
        snprintf(buf, cap, "index %lld out of bounds for size %lld at position %lld", v, hi, p);
    else
        snprintf(buf, cap, "index %lld out of bounds [%lld, %lld) at position %lld", v, lo, hi, p);
}

void gad__err_late_index(int dev, const gad_late_index *f) {
    char what[200];
    gad__late_index_text(what, sizeof what, f);
    gad__err(GAD_ERR_INDEX, f->op, "%s (found on %s, reported at this synchronising call)", what,
             gad__device_name(dev));
}
