#!/usr/bin/env bash
# Dependencies flow one way: tools -> train -> checkpoint -> models | schedules -> parallel | data
# -> core. Fails, naming the file and the include, when a source includes a folder above its own
# (or a test other than tools/'s own includes a header from tools/, the application).
# usage: layering.sh SOURCE_DIR
set -euo pipefail
cd "$1"
declare -A allowed=(
  [core]="core"
  [data]="data core"
  [parallel]="parallel core"
  [models]="models parallel data core"
  [schedules]="schedules parallel data core"
  [checkpoint]="checkpoint models schedules parallel data core"
  [train]="train checkpoint models schedules parallel data core"
)
bad=0
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
