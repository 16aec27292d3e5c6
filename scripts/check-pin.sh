#!/usr/bin/env bash
# Verify that the QuickJS-ng engine bound through go.mod matches
# third_party/quickjs-ng/PIN. Exits non-zero on any difference.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! go test -count=1 ./third_party/quickjs-ng/; then
	echo "check-pin: the bound engine does not match third_party/quickjs-ng/PIN (see above and third_party/quickjs-ng/README.md)" >&2
	exit 1
fi
