#!/usr/bin/env bash
# Checks liboneflow_c.so's dynamic symbol table against the public header, in both directions:
# every exported symbol is an of_* function declared with OF_API, and every OF_API function is exported.
# Usage: check_exports.sh <liboneflow_c.so> <oneflow_c.h>
set -euo pipefail
lib=$1 header=$2

exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u)
declared=$(tr '\n' ' ' < "$header" | grep -oE 'OF_API [^;]*;' | grep -oE '\bof_[a-z0-9_]+ *\(' | tr -d ' (' | sort -u)

status=0
extra=$(comm -23 <(echo "$exported") <(echo "$declared"))
if [ -n "$extra" ]; then
  echo "exported but not declared with OF_API in $header:"; echo "$extra" | sed 's/^/  /'; status=1
fi
missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
if [ -n "$missing" ]; then
  echo "declared with OF_API but not exported by $lib:"; echo "$missing" | sed 's/^/  /'; status=1
fi
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
case "$soname" in
  liboneflow_c.so.*) ;;
  *) echo "unexpected SONAME '$soname'"; status=1 ;;
esac
[ $status -eq 0 ] && echo "exports: $(echo "$exported" | wc -l) of_* functions, all declared; SONAME $soname"
exit $status
