#!/usr/bin/env bash
# Dependencies flow one way: tools -> plan -> train | interop -> checkpoint -> job | models | schedules -> parallel |
# data -> tokenizer -> core. Fails, naming the file and the include, when a source includes a folder above its own
# (or a test other than tools/'s own includes a header from tools/, the application).
# usage: layering.sh SOURCE_DIR
set -euo pipefail
cd "$1"
declare -A allowed=(
  [core]="core"
  [tokenizer]="tokenizer core"
  [data]="data tokenizer core"
  [parallel]="parallel core"
  [models]="models parallel data tokenizer core"
  [schedules]="schedules parallel data tokenizer core"
  [job]="job parallel core"
  [checkpoint]="checkpoint job models schedules parallel data tokenizer core"
  [interop]="interop checkpoint job models schedules parallel data tokenizer core"
  [train]="train checkpoint job models schedules parallel data tokenizer core"
  [plan]="plan train checkpoint job models schedules parallel data tokenizer core"
)
bad=0
# A new top-level folder of sources must be given its place above.
for dir in */; do
  dir=${dir%/}
  # tests/ and fuzz/ drive the libraries from above (they may include any of them).
  case "$dir" in tools | tests | fuzz | cmake | build* | docs | configs | runs) continue ;; esac
  if [ -z "${allowed[$dir]+x}" ] && [ -n "$(find "$dir" -name '*.h' -o -name '*.cpp' | head -1)" ]; then
    echo "folder $dir/ has sources but no place in tests/layering.sh's dependency order"
    bad=1
  fi
done
for folder in "${!allowed[@]}"; do
  while IFS=: read -r file _ include; do
    target=$(sed -E 's/.*#include "([^/"]+)\/.*/\1/' <<<"$include")
    if [[ " ${allowed[$folder]} " != *" $target "* ]]; then
      echo "upward include: $file includes $target/ (${folder}/ may include: ${allowed[$folder]})"
      bad=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cpp' '#include "[a-z_]*/' "$folder" || true)
done
while IFS=: read -r file _ _; do
  case "$file" in tests/tools/*) ;; *) echo "$file includes a header from tools/"; bad=1 ;; esac
done < <(grep -rn --include='*.h' --include='*.cpp' '#include "tools/' tests tools/bench || true)
[ "$bad" -eq 0 ] && echo "layering: no upward includes in ${!allowed[*]};" \
  "no benchmark and no test but tools/'s own includes a header from tools/"
exit "$bad"
