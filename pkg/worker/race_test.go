//go:build race

package worker

// raceEnabled: this test binary, and so its workers, run under the race
// detector, whose runtime and shadow memory add to every process's size.
const raceEnabled = true

// raceBaseKiB is what the race detector adds to an idle worker (measured:
// 25 MiB against 9 MiB).
const raceBaseKiB = 16 << 10
