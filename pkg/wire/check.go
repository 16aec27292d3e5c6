package wire

import (
	"errors"
	"fmt"
)

// CheckArgs checks one call's arguments as they cross from the worker: a JSON
// object of at most MaxArgBytes bytes, MaxArgValues values and MaxJSONDepth
// levels. The worker checks before sending and the parent checks again on
// receipt; both use this function, so they never disagree.
func (l Limits) CheckArgs(b []byte) error {
	if len(b) > l.MaxArgBytes {
		return fmt.Errorf("%w: arguments are %d bytes of JSON, above the cap of %d", ErrTooLarge, len(b), l.MaxArgBytes)
	}
	if _, err := ScanJSON(b, l.MaxArgValues, l.MaxJSONDepth); err != nil {
		if errors.Is(err, ErrTooManyValues) || errors.Is(err, ErrTooDeep) {
			return fmt.Errorf("%w: arguments: %v (caps: %d values, %d levels)", ErrTooLarge, err, l.MaxArgValues, l.MaxJSONDepth)
		}
		return fmt.Errorf("arguments: %w", err)
	}
	if !isObject(b) {
		return fmt.Errorf("arguments: %w", ErrNotObject)
	}
	return nil
}

// CheckResult checks a tool's result before it goes into a program: a JSON
// object of at most MaxResultBytes bytes and MaxJSONDepth levels.
func (l Limits) CheckResult(b []byte) error {
	if int64(len(b)) > l.MaxResultBytes {
		return fmt.Errorf("%w: the result is %d bytes of JSON, above this run's cap of %d (at most its memory / %d)", ErrTooLarge, len(b), l.MaxResultBytes, ResultMemoryShare)
	}
	if _, err := ScanJSON(b, 0, l.MaxJSONDepth); err != nil {
		if errors.Is(err, ErrTooDeep) {
			return fmt.Errorf("%w: the result: %v (cap %d levels)", ErrTooLarge, err, l.MaxJSONDepth)
		}
		return fmt.Errorf("the result: %w", err)
	}
	if !isObject(b) {
		return fmt.Errorf("the result: %w", ErrNotObject)
	}
	return nil
}

// CheckInput checks the JSON given to a program as `input`.
func (l Limits) CheckInput(b []byte) error {
	if len(b) > MaxInputBytes {
		return fmt.Errorf("%w: input is %d bytes of JSON, above the cap of %d", ErrTooLarge, len(b), MaxInputBytes)
	}
	if _, err := ScanJSON(b, 0, l.MaxJSONDepth); err != nil {
		if errors.Is(err, ErrTooDeep) {
			return fmt.Errorf("%w: input: %v (cap %d levels)", ErrTooLarge, err, l.MaxJSONDepth)
		}
		return fmt.Errorf("input: %w", err)
	}
	return nil
}

// isObject reports whether a valid JSON text is an object.
func isObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
