#!/bin/sh
# Prints the include graph of stages/lib by folder: one line per library
# folder, the other library folders its .c and .h files include (quoted
# includes of the form "folder/file.h"). A newcomer can run it to see which
# layer leans on which; issue 37's closing note compares it before and after.
#   tools/include-graph.sh [LIBDIR]      (default stages/lib)
set -eu
lib=${1:-stages/lib}
for dir in "$lib"/*/; do
    from=$(basename "$dir")
    to=$(cat "$dir"*.[ch] 2>/dev/null |
         sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"/]*\)\/[^"]*".*/\1/p' |
         sort -u | grep -vx "$from" | while read -r d; do
             [ -d "$lib/$d" ] && printf '%s ' "$d"
         done)
    printf '%-10s -> %s\n' "$from" "${to% }"
done
