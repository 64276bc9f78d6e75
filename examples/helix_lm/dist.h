/* dist.h: helix_lm on several processes (dist.c): `mpirun -np N helix_lm
 * train ...` trains one model with the global batch --batch split over the
 * N ranks. Every rank runs the same loop on its own rows of each global
 * batch; the gradients and the loss are averaged over the ranks after the
 * backward pass, so every rank clips by the global norm and takes the same
 * AdamW step. Rank 0 alone prints and writes the checkpoint, metrics and
 * plot. Run as one process (or with gad built without MPI), every function
 * here is a no-op of a world of one. */
#ifndef HELIX_DIST_H
#define HELIX_DIST_H

#include <stdint.h>

#include "config.h"
#include "gad.h"
#include "helix_model.h"

/* Join the world (gad_dist_init); on ranks other than 0, stdout goes to
 * /dev/null, messages are prefixed "helix_lm[rank R]" and no text is
 * sampled at the end. 0, or -1 after a message. */
int dist_start(config *c);

/* Leave it: rc 0 or 130 (every rank stops at the same step) finalizes;
 * any other rc returns at once without waiting for the others (the
 * launcher then ends the job). Returns the exit status. */
int dist_end(int rc);

int dist_rank(void);
int dist_size(void);

/* After setup (rc: this rank's setup status, every rank calls it): every
 * rank learns whether all of them set up; then the checks that need the
 * world (--batch divisible by the size; a resumed checkpoint trained by as
 * many ranks: resumed_world > 0) and rank 0's parameters broadcast to all.
 * 0, or -1 after a message. */
int dist_setup(int rc, const config *c, model *m, int64_t resumed_world);

/* This rank's rows of a global batch of B: [*first, *first + *count). */
void dist_shard(int64_t B, int64_t *first, int64_t *count);

/* At the top of each step: every rank takes rank 0's clock (*seconds:
 * the time budget and the learning rate then agree) and stops if any rank
 * was interrupted (sets g_interrupted). 0, or -1 after a message. */
int dist_sync(double *seconds);

/* After the backward pass: the mean over ranks of the gradients (in
 * place) and of *loss. ok = 0 when this rank's backward pass failed: the
 * others then fail at once instead of waiting. 0, or -1 after a message. */
int dist_average(int ok, gad_tensor *const *params, gad_tensor **grads, int n, double *loss);

#endif
