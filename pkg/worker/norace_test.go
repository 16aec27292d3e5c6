//go:build !race

package worker

const raceEnabled = false

const raceBaseKiB = 0
