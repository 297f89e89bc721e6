#!/usr/bin/env bash
# The web UI's time range controls in headless Chromium (tests/ui/time_test.mjs)
# against a fresh `hearth server` loaded with tests/ui/fixture.mjs, in a time zone
# that is not UTC: presets, local and zoned dates, the picker, brushing that fills
# the boxes with dates, refused times outlined on their own box. Screenshots go to
# build/test-output/ui/time-*.png.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/server_lib.sh"
. "$(dirname "$0")/ui_lib.sh"

ui_run time_test.mjs time TZ=America/New_York
