#!/bin/sh
# The ONNX backend conformance suite (Debian's libonnx-testdata) through
# build-engine and infer. Skips need a reason in skip.txt; tolerances other
# than rtol 1e-3 / atol 1e-5 need one in tolerances.txt.
here=$(dirname "$0")
bin=${PARITY_BIN:-build/bin}
tests=${PARITY_TESTS:-$(dirname "$bin")/tests}
data=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
exec "$tests/conformance/runner" --bin "$bin" --data "$data" \
    --skip "$here/skip.txt" --tolerances "$here/tolerances.txt" ${CONFORMANCE_FILTER:+--filter "$CONFORMANCE_FILTER"}
