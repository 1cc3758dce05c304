/* args.h — argument files: a command-line argument "@FILE" stands for the
 * arguments listed in FILE, a JSON array of strings. plan writes every value
 * that comes from a config into such files (build/NAME/.../NAME.args), so no
 * config value is ever written into make or shell syntax: the recipe names
 * the file, the stage reads the values verbatim. */
#ifndef PARITY_ARGS_H
#define PARITY_ARGS_H

/* Replaces each "@FILE" in argv[1..] by the strings of FILE (not recursively).
 * A missing file or one that is not an array of strings ends the program with
 * exit 2 and one line naming the file. */
void args_expand(const char *prog, int *argc, char ***argv);

#endif
