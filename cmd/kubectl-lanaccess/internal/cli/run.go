package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// attempt is one run of a catalogue, prepared by a command's Options: the checks, the report
// header, and what to undo afterwards (helper pods, sockets).
type attempt struct {
	Checks  []engine.Check
	Header  report.Report
	Cleanup func()
}

// preparer is a check command's Options: Prepare reads the cluster (or the flags) and returns
// one attempt. A *kube.UsageError means exit 2; any other error means exit 3.
type preparer interface {
	Prepare(ctx context.Context, progress *report.Progress) (attempt, error)
}

// runChecks runs a catalogue once, or again and again with --wait until it passes or the
// deadline comes, then writes the reports and returns the exit code as an error.
//
// With --log-file, what the run writes on stderr, the final error included, goes to that file
// instead, and stdout holds the report alone. In a pod the file is /dev/termination-log: the
// kubelet mounts a file of its own there, writable (mode 0666) whatever the root filesystem,
// and puts its last 4096 bytes in the container's status as the termination message
// (k8s.io/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go, makeMounts and
// getTerminationMessage; pkg/kubelet/container/runtime.go, MaxContainerTerminationMessageLength):
// the last attempts and the error, while `kubectl logs` is the report.
func runChecks(ctx context.Context, streams genericiooptions.IOStreams, f *CheckFlags, command string, prepare preparer) error {
	if f.LogFile == "" {
		return runChecksTo(ctx, streams, f, command, prepare)
	}
	log, err := os.Create(f.LogFile)
	if err != nil {
		return notStarted(streams, f, command, report.Report{}, usageErr("--log-file: %w", err))
	}
	streams.ErrOut = log
	err = runChecksTo(ctx, streams, f, command, prepare)
	if Printable(err) {
		report.Error(log, err)
		err = &ExitError{Code: exitCodeOfError(err)}
	}
	if cerr := log.Close(); cerr != nil && err == nil {
		return &ExitError{Code: ExitUnevaluated, Err: fmt.Errorf("--log-file: %w", cerr)}
	}
	return err
}

func runChecksTo(ctx context.Context, streams genericiooptions.IOStreams, f *CheckFlags, command string, prepare preparer) error {
	err := runAttempts(ctx, streams, f, command, prepare)
	if serr := f.tape.save(streams.ErrOut); serr != nil {
		// The reports were written; the bundle asked for was not: the run is not complete.
		return &ExitError{Code: ExitUnevaluated, Err: errors.Join(serr, errorText(err))}
	}
	return err
}

// errorText keeps an error's message but not its exit code (nil for nil and for a bare code).
func errorText(err error) error {
	var e *ExitError
	if errors.As(err, &e) && e.Err == nil {
		return nil
	}
	return err
}

func runAttempts(ctx context.Context, streams genericiooptions.IOStreams, f *CheckFlags, command string, prepare preparer) error {
	deadline := time.Now().Add(f.Wait)
	textOut := f.Output == "text"
	progress := report.NewProgress(streams.ErrOut, textOut && isTerminal(streams.ErrOut)).WithColumns(terminalColumns(streams.ErrOut))
	for attempt := 1; ; attempt++ {
		rep, code, err := runOnce(ctx, f, command, prepare, progress)
		progress.Clear()
		retry := f.Wait > 0 && ctx.Err() == nil && time.Now().Add(f.Interval).Before(deadline) && (err != nil || code != ExitOK)
		if retry {
			if err != nil {
				report.AttemptError(streams.ErrOut, attempt, err, f.Interval.String())
			} else {
				report.Attempt(streams.ErrOut, attempt, rep.Results, f.Interval.String())
			}
			select {
			case <-time.After(f.Interval):
				continue
			case <-ctx.Done():
			}
			if err == nil {
				// Interrupted while waiting: report the last attempt.
				return finish(streams, f, rep, code)
			}
		}
		if err != nil {
			return notStarted(streams, f, command, rep, err)
		}
		return finish(streams, f, rep, code)
	}
}

// notStarted ends a run that could not start (the API unreachable, a bad kubeconfig or
// context, a named object missing). The machine-readable reports are written all the same,
// with the catalogue's not-started result (LA000, VPN000, WS000) as an ERROR naming the
// cause, so that a CI job always has a report to show why; the text report is only the error,
// on stderr. The exit code is 2 for usage and
// configuration, 3 for what could not be evaluated, the same for every command.
func notStarted(streams genericiooptions.IOStreams, f *CheckFlags, command string, rep report.Report, cause error) error {
	code := exitCodeOfError(cause)
	rep.Command = command
	rep.FailOnWarn = f.FailOn == "warn"
	e := catalogue.NotStarted(command)
	rep.Results = []engine.Result{{
		ID: e.ID, Title: e.Title, Section: string(e.Section), Status: engine.StatusError, Reason: cause.Error(), Findings: []engine.Finding{},
	}}
	var werr error
	switch f.Output {
	case "json":
		werr = report.WriteJSON(streams.Out, rep)
	case "yaml":
		werr = report.WriteYAML(streams.Out, rep)
	case "junit":
		werr = report.WriteJUnit(streams.Out, rep)
	}
	werr = errors.Join(werr,
		writeFile(f.JUnitFile, func(w io.Writer) error { return report.WriteJUnit(w, rep) }),
		writeFile(f.JSONFile, func(w io.Writer) error { return report.WriteJSON(w, rep) }))
	if werr != nil {
		cause = errors.Join(cause, fmt.Errorf("writing the report: %w", werr))
	}
	return &ExitError{Code: code, Err: cause}
}

// exitCodeOfError: an ExitError keeps its code; a usage error (a missing named object, a bad
// kubeconfig or context) is 2; anything else (unreachable, timeout) is 3.
func exitCodeOfError(err error) int {
	var e *ExitError
	switch {
	case errors.As(err, &e):
		return e.Code
	case kube.IsUsage(err):
		return ExitUsage
	}
	return ExitUnevaluated
}

// deadlineReached is the cause of a run's end at --deadline: every check that had not finished
// is ERROR with it as the reason.
type deadlineReached struct{ d time.Duration }

func (e *deadlineReached) Error() string {
	return fmt.Sprintf("the run's deadline (--deadline %s) was reached before it finished", e.d)
}

func runOnce(ctx context.Context, f *CheckFlags, command string, prepare preparer, progress *report.Progress) (report.Report, int, error) {
	reached := &deadlineReached{d: f.Deadline}
	ctx, cancel := context.WithTimeoutCause(ctx, f.Deadline, reached)
	defer cancel()
	progress.Message("reading the cluster…")
	a, err := prepare.Prepare(ctx, progress)
	if a.Cleanup != nil {
		defer a.Cleanup()
	}
	rep := a.Header
	if err != nil {
		if errors.Is(context.Cause(ctx), reached) {
			err = &ExitError{Code: ExitUnevaluated, Err: fmt.Errorf("%w: %w", reached, err)}
		}
		return rep, 0, err
	}
	runner := &engine.Runner{Checks: a.Checks, Only: f.Only, Skip: f.Skip, Observe: progress.Observe, Parallel: 4}
	if err := runner.Validate(); err != nil {
		return rep, 0, &kube.UsageError{Message: err.Error(), Fix: "use --only with check IDs and --skip with check IDs or finding codes"}
	}
	rep.Command = command
	rep.FailOnWarn = f.FailOn == "warn"
	rep.Results = runner.Run(ctx)
	code := exitCodeFor(rep.Results, rep.FailOnWarn)
	if errors.Is(context.Cause(ctx), reached) && engine.Summarize(rep.Results).Error > 0 {
		code = ExitUnevaluated // the run is incomplete: a CI job must not read it as a verdict
	}
	return rep, code, nil
}

// exitCodeFor: 1 when something failed (or warned with --fail-on=warn); 3 when nothing failed
// but something could not be evaluated; else 0.
func exitCodeFor(results []engine.Result, failOnWarn bool) int {
	s := engine.Summarize(results)
	switch {
	case s.Fail > 0, failOnWarn && s.Warn > 0:
		return ExitFailed
	case s.Error > 0:
		return ExitUnevaluated
	}
	return ExitOK
}

func finish(streams genericiooptions.IOStreams, f *CheckFlags, rep report.Report, code int) error {
	var err error
	switch f.Output {
	case "json":
		err = report.WriteJSON(streams.Out, rep)
	case "yaml":
		err = report.WriteYAML(streams.Out, rep)
	case "junit":
		err = report.WriteJUnit(streams.Out, rep)
	default:
		err = report.WriteText(streams.Out, rep, report.TextOptions{Color: f.useColor(streams.Out), Verbose: f.Verbose, Width: f.textWidth(streams.Out)})
	}
	err = errors.Join(err,
		writeFile(f.JUnitFile, func(w io.Writer) error { return report.WriteJUnit(w, rep) }),
		writeFile(f.JSONFile, func(w io.Writer) error { return report.WriteJSON(w, rep) }))
	if err != nil {
		return &ExitError{Code: ExitUnevaluated, Err: fmt.Errorf("writing the report: %w", err)}
	}
	if code != ExitOK {
		return &ExitError{Code: code}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(file); err != nil {
		_ = file.Close() // the write error is the one to report
		return fmt.Errorf("%s: %w", path, err)
	}
	return file.Close()
}
