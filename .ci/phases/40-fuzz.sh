# Every reader's libFuzzer harness (tests/fuzz/harness/) built with clang and
# ASan+UBSan and run briefly from the committed seeds: FUZZ_SECONDS each (17
# harnesses x 10 s = 2.8 minutes, plus the instrumented build: 3-4 minutes on
# 2 busy cores). One line per harness
# with its executions; any crash, leak, sanitizer report, hang or input-sized
# allocation fails the phase (its input is under build/fuzz/crash/).
# The long campaign is docs/fuzzing.md.
set -euo pipefail
make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
