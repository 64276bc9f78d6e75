/* safetensors.h: what the rest of gad takes from safetensors.c besides the
 * public checkpoint API: the rule for the names a file can hold, which the
 * parameter sets (src/nn/params.c) apply when a name is added, so that
 * saving a set never fails on one. */
#ifndef GAD_IO_SAFETENSORS_H
#define GAD_IO_SAFETENSORS_H

/* What is wrong with a tensor name, or NULL if it is fine: NULL,
 * "__metadata__" (the format's own key) and invalid UTF-8 are refused;
 * every name a load accepts is fine (the empty name and control characters
 * included, which the header escapes), so that a checkpoint can be saved
 * back. The text completes "the name ... ". */
const char *gad__tensor_name_problem(const char *s);

#endif
