#!/usr/bin/env bash
# The diff as a new user meets it (issue 30, item 7) in headless Chromium
# (tests/ui/diffux_test.mjs) against a fresh `hearth server` holding the fixture of
# tests/ui/fixture.mjs and a pprof with an inlined function: the default diff on a
# store with nothing in the hour before, an empty side said in words, two ranges
# brushed on the timeline, the side-by-side and combined views, one name per
# function in every view. Screenshots go to build/test-output/ui/diffux-*.png.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/ui_lib.sh"

ui_run diffux_test.mjs diffux
