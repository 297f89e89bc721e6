#!/usr/bin/env bash
# The web UI's smaller gaps (issue 30, item 9) in headless Chromium
# (tests/ui/gaps_test.mjs) against a fresh `hearth server` holding the fixture of
# tests/ui/fixture.mjs and one 300-frame stack: the table's order and zoom in the
# URL, a deep graph in the flame orientation (page and SVG export), one colour per
# function, dark mode, refresh, maxNodes, the loading indicator, the toolbar on a
# bad regex, the graph above the fold at 1024x768. Screenshots go to
# build/test-output/ui/gaps-*.png (with the deep SVG, gaps-deep.svg).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/ui_lib.sh"

ui_run gaps_test.mjs gaps
