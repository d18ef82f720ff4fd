package cli

import (
	"fmt"
	"io"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// attemptRuntime is what one attempt talks to besides the API: network probes, exec and node shells.
// A new one per attempt: an address found dead in one --wait attempt is asked again in the
// next. Close deletes any helper pod still present; it runs also after Ctrl-C.
type attemptRuntime struct {
	probes *probe.Set
	exec   podexec.Executor
	shells *podexec.NodeShells
	// progress is cleared before a warning, warn receives it (stderr).
	progress *report.Progress
	warn     io.Writer
}

func newRuntime(c *clients, pcfg probe.Config, helpers podexec.HelperConfig, progress *report.Progress, warn io.Writer) (*attemptRuntime, error) {
	set, err := probe.NewSet(c.tape.probes(pcfg))
	if err != nil {
		return nil, &kube.UsageError{Message: fmt.Sprintf("--ca-file %s: %v", pcfg.CAFile, err), Fix: "give a PEM file of CA certificates"}
	}
	remote, err := podexec.NewRemoteExecutor(c.config)
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("building the exec client: %w", err)
	}
	exec := c.tape.executor(remote)
	return &attemptRuntime{probes: set, exec: exec, shells: podexec.NewNodeShells(c.typed, exec, helpers), progress: progress, warn: warn}, nil
}

// Close deletes the helper pods still present and closes the probes' sockets. A helper pod it
// cannot delete is a warning on stderr naming the pod and the cleanup command: never silent.
func (r *attemptRuntime) Close() {
	if err := r.shells.Close(); err != nil && r.warn != nil {
		if r.progress != nil {
			r.progress.Clear()
		}
		// Best effort: stderr is where the run says what it could not do.
		_, _ = fmt.Fprintf(r.warn, "warning: %s\n", report.EscapeLines(err.Error()))
	}
	r.probes.Close()
}
