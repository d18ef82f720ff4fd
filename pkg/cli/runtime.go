package cli

import (
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// wireRuntime gives one attempt its network probes, exec and node shells. A new probe set per
// attempt: an address found dead in one --wait attempt is asked again in the next. The returned
// cleanup deletes any helper pod still present; it runs also after Ctrl-C.
func wireRuntime(env *checks.Env, c *clients) (func(), error) {
	set, err := probe.NewSet(probe.Config{Timeout: env.Options.ProbeTimeout, CAFile: env.Options.CAFile})
	if err != nil {
		return nil, &kube.UsageError{Message: fmt.Sprintf("--ca-file %s: %v", env.Options.CAFile, err), Fix: "give a PEM file of CA certificates"}
	}
	env.Probes = set
	exec, err := kube.NewRemoteExecutor(c.config)
	if err != nil {
		return nil, fmt.Errorf("building the exec client: %w", err)
	}
	env.Exec = exec
	env.Helpers = kube.NewNodeShells(c.typed, exec, kube.HelperConfig{Namespace: env.Options.HelperNamespace, Image: env.Options.Image})
	return func() {
		_ = env.Helpers.Close()
		set.Close()
	}, nil
}
