#!/usr/bin/env bash
# The API suite (api_suite.sh) on the embedded store: hearth server --data DIR.
exec bash "$(dirname "$0")/api_suite.sh" embedded
