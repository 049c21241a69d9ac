#!/usr/bin/env bash
# Former name of bench/lab-memory.sh (peak RSS next to wall time of the lab's commands),
# kept while the manual still names it. Same arguments.
exec "$(dirname "${BASH_SOURCE[0]}")/lab-memory.sh" "$@"
