#!/usr/bin/env bash
# The API suite (api_suite.sh) on the embedded store: hearth server --data DIR.
# test-runner: light (it waits on its server: 15 CPU-s in 61 s, in a clean run)
exec bash "$(dirname "$0")/api_suite.sh" embedded
