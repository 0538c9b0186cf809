#!/bin/bash
# Wall time of `simsubjects collect ultimatum --pairs 1` in a fresh process (cold) and through a
# preload server (docs/scaling.md), three runs each, with the load average before and after.
# The weight cache must be warm (one earlier smollm2 run). Usage: scripts/time_preload.sh [OUT_DIR]
set -euo pipefail
out=${1:-$(mktemp -d)}
python -m simsubjects.cli preload stop >/dev/null || true
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in 1 2 3; do
  rm -rf "$out/run"
  /usr/bin/time -f "cold $i: %e s wall" python -m simsubjects collect ultimatum --pairs 1 --out "$out/run" -q >/dev/null
done
python -m simsubjects.cli preload start
for i in 1 2 3; do
  rm -rf "$out/run"
  /usr/bin/time -f "preload $i: %e s wall (client CPU %U s user)" python -m simsubjects collect ultimatum --pairs 1 --out "$out/run" -q >/dev/null
done
python -m simsubjects.cli preload stop >/dev/null
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
