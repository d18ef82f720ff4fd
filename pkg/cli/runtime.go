package cli

import (
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// attemptRuntime is what one attempt talks to besides the API: network probes, exec and node shells.
// A new one per attempt: an address found dead in one --wait attempt is asked again in the
// next. Close deletes any helper pod still present; it runs also after Ctrl-C.
type attemptRuntime struct {
	probes *probe.Set
	exec   kube.Executor
	shells *kube.NodeShells
}

func newRuntime(c *clients, pcfg probe.Config, helpers kube.HelperConfig) (*attemptRuntime, error) {
	set, err := probe.NewSet(pcfg)
	if err != nil {
		return nil, &kube.UsageError{Message: fmt.Sprintf("--ca-file %s: %v", pcfg.CAFile, err), Fix: "give a PEM file of CA certificates"}
	}
	exec, err := kube.NewRemoteExecutor(c.config)
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("building the exec client: %w", err)
	}
	return &attemptRuntime{probes: set, exec: exec, shells: kube.NewNodeShells(c.typed, exec, helpers)}, nil
}

// Close deletes the helper pods still present and closes the probes' sockets.
func (r *attemptRuntime) Close() {
	_ = r.shells.Close()
	r.probes.Close()
}
