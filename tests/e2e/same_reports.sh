# same_reports.sh — sourced by the sharding tests: two runs' reports are the
# same when results.json, summary.md and junit.xml agree with their timings
# masked (results.json's median_ms and its timing object, summary.md's last
# column and its "Time by stage" section, junit.xml's time attributes: the
# only fields allowed to differ).
mask() {
    sed -E 's/"median_ms": [0-9.e+-]+/"median_ms": T/; s/time="[0-9.]+"/time="T"/g; /^ "timing": \{/,/^ \}/c\ "timing": T' "$1" |
    sed -E '/^### Time by stage/,$d; /^\|/s/\| [0-9.-]+ \|$/| T |/'
}
same_reports() {   # DIR_A DIR_B: 0 when equal; the differences as TAP comments
    local rc=0
    for f in results.json summary.md junit.xml; do
        cmp -s <(mask "$1/$f") <(mask "$2/$f") || { echo "# $f differs:"; diff <(mask "$1/$f") <(mask "$2/$f") | sed 's/^/# /' | head -20; rc=1; }
    done
    return $rc
}
