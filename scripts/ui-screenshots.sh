#!/usr/bin/env bash
# Refreshes the README's web UI screenshots (docs/img/ui-*.png) from a run of the
# UI tests (tests/integration/test_ui.sh writes build/test-output/ui/*.png),
# quantized to 256 colours with pngquant so each stays small.
#   scripts/ui-screenshots.sh [--no-run]   (--no-run: reuse the last test run's images)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/test-output/ui
VIEWS=(flame-table zoomed search sandwich diff timeline-brushed error live)
if [ "${1:-}" != --no-run ]; then
	make -s build/hearth
	HEARTH=$PWD/build/hearth bash tests/integration/test_ui.sh | grep -v '^PASS' || true
fi
command -v pngquant > /dev/null || { echo "ui-screenshots: pngquant is missing (scripts/install-deps.sh --test)" >&2; exit 1; }
mkdir -p docs/img
for v in "${VIEWS[@]}"; do
	[ -f "$OUT/$v.png" ] || { echo "ui-screenshots: no $OUT/$v.png (did the UI test fail?)" >&2; exit 1; }
	pngquant --force --quality 60-90 --speed 1 --strip --output "docs/img/ui-$v.png" "$OUT/$v.png"
done
ls -l docs/img/ui-*.png
