#!/usr/bin/env bash
# Regenerates the key table of docs/config.md from the code (build/triax config --describe
# --markdown), keeping the prose around the <!-- keys:begin/end --> markers.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - "$(build/triax config --describe --markdown)" <<'PY'
import sys
path = "docs/config.md"
text = open(path).read()
begin, end = "<!-- keys:begin -->\n", "<!-- keys:end -->"
head, rest = text.split(begin, 1)
tail = rest.split(end, 1)[1]
open(path, "w").write(head + begin + sys.argv[1] + "\n" + end + tail)
PY
echo "docs/config.md updated"
