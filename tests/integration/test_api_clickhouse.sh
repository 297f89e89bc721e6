#!/usr/bin/env bash
# The API suite (api_suite.sh) on the ClickHouse backend: hearth server --store
# clickhouse://... on a private clickhouse-server, cross-checked with an
# embedded-store server holding the same profiles.
# test-runner: light (it waits on its servers and ClickHouse: ~29 CPU-s, ClickHouse included, in 65 s in a clean run)
exec bash "$(dirname "$0")/api_suite.sh" clickhouse
