#!/usr/bin/env bash
# The noise-aware views of the web UI in headless Chromium (tests/ui/changes_test.mjs)
# against a fresh `hearth server` loaded with tests/ui/changes_fixture.mjs: one
# function costs more after a known moment, nothing else changes. The diff colours
# only that function and says what "within noise" means, its normalisation reaches
# the request, a function's line over time is drawn on request, and "What changed"
# lists that function alone or explains an empty baseline. Screenshots go to
# build/test-output/ui/changes-*.png.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/ui_lib.sh"

ui_run changes_test.mjs changes
