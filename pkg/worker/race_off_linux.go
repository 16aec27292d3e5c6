//go:build linux && !race

package worker

// raceBuild: see race_on_linux.go.
const raceBuild = false

// raceSyscalls: nothing beyond the policy without the race detector.
var raceSyscalls []sysRule
