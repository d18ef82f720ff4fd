package cli

import (
	"errors"
	"fmt"
)

// Exit codes (DESIGN.md section 2).
const (
	ExitOK          = 0
	ExitFailed      = 1 // a check failed (or warned, with --fail-on=warn)
	ExitUsage       = 2 // bad usage or configuration: a named object is missing, a flag is invalid
	ExitUnevaluated = 3 // could not evaluate: API unreachable, all probes errored
)

// ExitError carries an exit code out of a command. Err, when set, is printed by main.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode maps an error returned by the root command to the process exit code. Errors that
// are not ExitErrors come from cobra's own parsing (unknown flag, bad argument): usage errors.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if e, ok := errors.AsType[*ExitError](err); ok {
		return e.Code
	}
	return ExitUsage
}

// Printable reports whether main should print err (a failing check already printed its report).
func Printable(err error) bool {
	if e, ok := errors.AsType[*ExitError](err); ok {
		return e.Err != nil
	}
	return err != nil
}

func usageErr(format string, a ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}
