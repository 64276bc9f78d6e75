/* signals.h: SIGINT and SIGTERM as a request to stop, which the loops of
 * training, evaluation and sampling check (signals.c). */
#ifndef HELIX_SIGNALS_H
#define HELIX_SIGNALS_H

#include <signal.h>

extern volatile sig_atomic_t g_interrupted; /* set by SIGINT or SIGTERM while caught */

/* Between signals_catch and signals_restore, SIGINT and SIGTERM only set
 * g_interrupted: training stops at the end of the current step, or of the
 * current batch of an evaluation inside it (with a checkpoint); eval stops
 * at the end of its current batch, sampling after the current byte. A
 * second signal half a second or more after the first ends the program at
 * once, for a batch that takes long. They are unblocked too: a parent may
 * have blocked them (some shells do for background jobs). */
typedef struct signal_state {
    struct sigaction old_int, old_term;
    sigset_t old_mask;
} signal_state;

void signals_catch(signal_state *ss);
void signals_restore(const signal_state *ss);

#endif
