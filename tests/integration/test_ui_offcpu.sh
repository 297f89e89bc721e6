#!/usr/bin/env bash
# Off-CPU and wall-clock profiles in the web UI (issue 28) in headless Chromium
# (tests/ui/offcpu_test.mjs) against a fresh `hearth server` holding pprofs the
# test writes as hearth's producer does: the type picker's time types, values
# in ms/s, grouping by reason, the reason filter, wall's [on-cpu], the diff.
# Screenshots go to build/test-output/ui/offcpu-*.png.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/ui_lib.sh"

ui_run offcpu_test.mjs offcpu
