/* scan.h: the gated scan family of the seam (backend.h): h_t = a_t h_{t-1}
 * + b_t over axis 1 of [B, T, D] (docs/helix.md), forward and backward.
 * The CPU's: src/cpu/scan.c. */
#ifndef GAD_BE_SCAN_H
#define GAD_BE_SCAN_H

#include "backend/backend.h"

typedef struct gad_be_scan {
    /* -1: scratch memory (recorded) */
    int (*fwd)(const gad_tensor *a, const gad_tensor *b, gad_tensor *h);
    /* ga or gb NULL when not wanted */
    int (*bwd)(const gad_tensor *a, const gad_tensor *h, const gad_tensor *gh, gad_tensor *ga,
               gad_tensor *gb);
    int half; /* the entries take f16/bf16 too (backend.h) */
} gad_be_scan;

#endif
