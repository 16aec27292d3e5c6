package wire

// FromWorker reports whether a worker may report s in its end frame: every
// ending but StatusCrashed, which is the parent's verdict alone.
func (s Status) FromWorker() bool {
	switch s {
	case StatusReturned, StatusThrew, StatusStalled, StatusTimedOut, StatusOutOfMemory, StatusStopped:
		return true
	}
	return false
}
