#!/usr/bin/env bash
# The README's C quick start must compile (strict C11) and run: extract its ```c block and build it.
# Usage: readme_quickstart.sh <README.md> <include-dir> <liboneflow_c.so> <scratch-dir>
set -euo pipefail
readme=$1 include=$2 lib=$3 scratch=$4
mkdir -p "$scratch"
awk '/^```c$/ {inside=1; next} /^```/ {if (inside) exit} inside {print}' "$readme" > "$scratch/quickstart.c"
[ -s "$scratch/quickstart.c" ] || { echo "no \`\`\`c block in $readme"; exit 1; }
cc -std=c11 -pedantic-errors -Wall -Wextra -Werror -I"$include" "$scratch/quickstart.c" "$lib" \
   -Wl,-rpath,"$(dirname "$lib")" -o "$scratch/quickstart"
"$scratch/quickstart"
