/* fuzz.h — the one shape of every reader harness (tests/fuzz/harness/NAME.c).
 *
 * A harness is a thin file: FUZZ_READER(NAME) followed by the body of
 *     int fuzz_read(const uint8_t *d, size_t n, perr_t *e)
 * which hands the bytes to one reader (through a file when the reader takes
 * a path: fuzz_file()), frees whatever it returned and returns its status.
 * driver/fuzz.c checks the contract shared by every reader: success, or a
 * bad-input error (code 2) with a message; anything else (an internal error,
 * no message) is a finding, like a crash, a leak or a sanitizer report.
 *
 * Built with clang -fsanitize=fuzzer (make fuzz, mk/fuzz.mk) the harness is a
 * libFuzzer target; built plainly it links driver/replay.c, a TAP program
 * that replays tests/fuzz/regress/NAME/ and the seed corpus
 * tests/fuzz/corpus/NAME/ in `make test` (docs/fuzzing.md). */
#ifndef PARITY_FUZZ_H
#define PARITY_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

extern const char fuzz_name[];
int fuzz_read(const uint8_t *d, size_t n, perr_t *e);

#define FUZZ_READER(NAME)                  \
    const char fuzz_name[] = #NAME;        \
    int fuzz_read(const uint8_t *d, size_t n, perr_t *e)

/* Writes the input to FILE in this process's scratch folder (created on
 * first use, removed at exit) and returns its path (valid until the next
 * call). For readers that take a path or look at the file's name. */
const char *fuzz_file(const char *file, const uint8_t *d, size_t n);
/* The scratch folder itself (for outputs a harness writes). */
const char *fuzz_dir(void);
/* Splits "LINE\nREST": the first line (NUL-terminated copy, at most max-1
 * bytes) and the rest; for harnesses whose reader also reads a name. */
void fuzz_split_line(const uint8_t *d, size_t n, char *line, size_t max, const uint8_t **rest, size_t *nrest);

/* The contract check: 0 when the reader behaved (success or a bad-input
 * error with a message), else 1 with the reason in why. */
int fuzz_check(const uint8_t *d, size_t n, char *why, size_t nwhy);

#endif
