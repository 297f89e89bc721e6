#!/usr/bin/env bash
# The memory ceiling's acceptance check is tests/integration/test_memory_limit.sh
# (in `make test`); this runs it by hand, HEARTH_LIMIT_MB=N for another limit than
# the floor of 40 (docs/memory.md). As root, from the repository root.
exec bash "$(dirname "$0")/../../tests/integration/test_memory_limit.sh" "$@"
