//go:build linux && !amd64

package worker

// No seccomp policy is written for this architecture yet (its system call
// numbers and ABI differ): the seccomp layer reports itself not enforced,
// and strict confinement refuses to run programs.

// seccompArch 0: no policy.
const seccompArch = 0

const auditArchX8664 = 0xc000003e

var seccompPolicy []sysRule

var deniedOnPurpose []sysRule
