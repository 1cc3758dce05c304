/* trtexec.h — the files trtexec writes (read from trtexec's
 * sampleReporting.cpp and sampleInference.cpp):
 *   --exportOutput=F.json   [{"name": N, "dimensions": "1x1000", "values": [v, ...]}, ...]
 *                           values printed with 6 significant digits (lossy),
 *                           non-finite ones as nan/inf (not valid JSON: read
 *                           with a tolerant parser);
 *   --dumpRawBindingsToFile <name>.<input|output>.<d0>.<d1>....<dtype>.raw in the
 *                           working folder: raw C-order bytes, the whole file
 *                           name with every character other than [A-Za-z0-9._,-]
 *                           replaced by '_' (so '/' in a name becomes '_').
 * Values from --exportOutput carry no type: they are read as float32. */
#ifndef PARITY_TRTEXEC_H
#define PARITY_TRTEXEC_H

#include "io/tensorset.h"

/* Whether a JSON text starts the way trtexec's output export does. */
int trtexec_sniff_json(const char *text, size_t n);
/* Reads an --exportOutput file into s (names in file order). */
int trtexec_read_json(const char *path, tensor_set_t *s, perr_t *e);

/* Parses a raw binding file name; returns 0 and fills the fields, or -1 when
 * the name is not of that form. *name is malloc'd (the sanitised name). */
int trtexec_raw_name(const char *file, char **name, int *is_input, int *ndim, int64_t *dims, dtype_t *dt);
int trtexec_read_raw(const char *path, tensor_t *t, char **name, perr_t *e);

/* The name trtexec would give a tensor in a file name (for matching). */
char *trtexec_safe_name(const char *name);

#endif
