//go:build !asan

package worker

const asanEnabled = false
