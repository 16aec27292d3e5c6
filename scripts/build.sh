#!/usr/bin/env bash
# Build bin/run-js-server with hardened cgo flags.
#
# Environment:
#   VERSION      version string embedded as main.version
#                (default: git describe --tags --always --dirty, else "dev")
#   CGO_CFLAGS   extra C flags, kept and followed by the hardening flags below
#   CGO_LDFLAGS  extra linker flags, kept and followed by the hardening flags below
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/check-pin.sh

if [[ -z "${VERSION:-}" ]]; then
	VERSION="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
fi

if [[ "${VERSION}" =~ [[:space:]] ]]; then
	echo "build: VERSION must not contain whitespace: '${VERSION}'" >&2
	exit 2
fi

# -O2 is kept for speed; -g0 drops C debug info; the rest is hardening.
hard_cflags="-O2 -g0 -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fstack-clash-protection"
hard_ldflags="-Wl,-z,relro,-z,now"

export CGO_ENABLED=1
export CGO_CFLAGS="${CGO_CFLAGS:+${CGO_CFLAGS} }${hard_cflags}"
export CGO_LDFLAGS="${CGO_LDFLAGS:+${CGO_LDFLAGS} }${hard_ldflags}"

mkdir -p bin
build() { # OUT PACKAGE
	go build \
		-trimpath \
		-buildvcs=false \
		-ldflags "-s -w -X main.version=${VERSION}" \
		-o "$1" \
		"$2"
	echo "built $1 ($(wc -c <"$1") bytes, version ${VERSION})"
}
# The gateway, and beside it the worker-only binary it starts for each run
# (it links only the isolate, so it starts faster and smaller).
build bin/run-js-server ./cmd/run-js-server
build bin/run-js-worker ./cmd/run-js-worker
