# The project built with clang too (issue 15): every stage, the C unit tests
# and the fuzz replays into build/clang/, warnings as errors; then those
# tests run (the unit tests and the committed fuzz regression inputs and
# seeds). libFuzzer needs clang, and a second compiler catches what one lets
# through.
set -euo pipefail
command -v clang >/dev/null || { echo "30-clang: clang is not installed (tools/deps.sh installs it)" >&2; exit 1; }
tests=$(ls tests/unit/*.c | sed 's|^tests/\(.*\)\.c$|build/clang/tests/\1|')
replays=$(ls tests/fuzz/harness/*.c | sed 's|^tests/fuzz/harness/\(.*\)\.c$|build/clang/tests/fuzz/\1|')
# shellcheck disable=SC2086
make -j"$(nproc)" CC=clang CC_OUT=build/clang CFLAGS='-O2 -g -Werror' all $tests $replays
# shellcheck disable=SC2086
prove -j"$(nproc)" $tests $replays
