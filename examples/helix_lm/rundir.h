/* rundir.h: keeping a run directory consistent across kills: the removal
 * of the temporary files that killed runs left behind, and a test hook that
 * kills the program at a named point of a save (rundir.c). */
#ifndef HELIX_RUNDIR_H
#define HELIX_RUNDIR_H

#include <stdint.h>

/* Remove, in directory dir, the temporary files of helix_lm's own atomic
 * writes that a killed process left behind: "<name>.tmp.<pid>" and
 * "<name>.tmp.<pid>.<n>" for name checkpoint.safetensors, metrics.csv and
 * loss.svg, where no process <pid> is alive (a live one may be writing it)
 * or <pid> is this process's. Nothing else is touched. Returns the number
 * removed (a note names each unless quiet), or -1 when dir cannot be read. */
int remove_stale_tmp(const char *dir, int quiet);

/* The kill test's hook: when the environment variable HELIX_LM_TEST_KILL
 * is "POINT@STEP" (POINT one of the names trainer_save passes: save-begin,
 * csv, checkpoint, plot), kill this process with SIGKILL on reaching that
 * point of the save of step STEP, as a power cut there would. Unset (the
 * normal case) it does nothing. */
void test_kill_point(const char *point, int64_t step);

#endif
