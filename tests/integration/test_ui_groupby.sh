#!/usr/bin/env bash
# Processes apart and unnamed code in the UI (issue 30, items 1 and 8, and the
# diff's range boxes of item 7) in headless Chromium (tests/ui/groupby_test.mjs)
# against a fresh `hearth server` holding agent-shaped pprofs the test writes: the
# whole machine grouped by process by default, grouping off, by pid and tid,
# unnamed code per object and per address, the grouped diff, dates in the diff's
# boxes. Screenshots go to build/test-output/ui/groupby-*.png.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/ui_lib.sh"

ui_run groupby_test.mjs groupby
