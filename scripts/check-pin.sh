#!/usr/bin/env bash
# Verify that the engine the build compiles is exactly the pristine module
# named in third_party/quickjs-ng/PIN plus the patches in
# third_party/quickjs-ng/patches, in order, and that go.mod binds it.
# Exits non-zero on any difference, listing every one.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! go test -count=1 ./third_party/quickjs-ng/; then
	echo "check-pin: the vendored engine does not match third_party/quickjs-ng/PIN and its patches (see above, and BUILD.md \"The engine\")" >&2
	exit 1
fi
