/* timed — runs one stage of a validation and logs what it took.
 *
 *   timed --log FILE --stage NAME [--cell CELL] -- COMMAND [ARG...]
 *
 * Runs COMMAND (looked up in PATH as the shell would), waits for it, appends one
 * record (its wall time from fork to exit, the user and system CPU seconds
 * of it and its children, its exit status) to FILE (util/timing.h), and
 * exits with COMMAND's status, so a recipe behaves as if COMMAND ran alone.
 * plan.mk puts it in front of every stage the matrix runs; `report --timing`
 * sums the log. The arguments reach COMMAND as they are: no shell between.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "util/timing.h"
#include "version.h"

static const char usage[] =
    "usage: timed --log FILE --stage NAME [--cell CELL] -- COMMAND [ARG...]\n"
    "  --log FILE     the timing log: one JSON record appended per run\n"
    "  --stage NAME   what ran (infer, compare, ...), the summary's row\n"
    "  --cell CELL    the matrix cell it ran for\n"
    "  -h, --help | -V, --version\n"
    "Exit: COMMAND's status (128 + N when killed by signal N); 2 bad usage or a log\n"
    "that cannot be written; 127 COMMAND could not be started.\n";

static double now(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double tv_seconds(struct timeval tv) { return tv.tv_sec + tv.tv_usec * 1e-6; }

/* Runs argv, fills the record's times and status. */
static void run_child(char **argv, timing_rec_t *r)
{
    r->start = now(CLOCK_REALTIME);
    double t0 = now(CLOCK_MONOTONIC);
    pid_t pid = fork();
    if (pid < 0) { perror("timed: fork"); exit(EXIT_INTERNAL); }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "timed: %s: cannot run: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) { perror("timed: wait4"); exit(EXIT_INTERNAL); }
    r->wall = now(CLOCK_MONOTONIC) - t0;
    r->user = tv_seconds(ru.ru_utime);
    r->sys = tv_seconds(ru.ru_stime);
    r->rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"log", required_argument, 0, 'l'}, {"stage", required_argument, 0, 's'}, {"cell", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0},
    };
    const char *log = NULL;
    timing_rec_t r = {0};
    int c;
    /* '+': options end at the first non-option, COMMAND's own are never read here */
    while ((c = getopt_long(argc, argv, "+hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': log = optarg; break;
        case 's': r.stage = optarg; break;
        case 'c': r.cell = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': puts("timed (parity) " PARITY_VERSION); return 0;
        default: die_usage("timed", "unknown option");
        }
    }
    if (!log || !r.stage || !*r.stage) die_usage("timed", "expected --log FILE --stage NAME");
    if (optind >= argc) die_usage("timed", "expected -- COMMAND");
    run_child(argv + optind, &r);
    perr_t e = {0};
    /* the command's outcome stands; a log that cannot be written is said, and fails
     * the recipe only when the command itself succeeded */
    if (timing_append(log, &r, &e)) {
        fprintf(stderr, "timed: %s\n", e.msg);
        return r.rc ? r.rc : EXIT_BADINPUT;
    }
    return r.rc;
}
