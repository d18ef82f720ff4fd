// Package checks assembles the catalogue's suites from the check families (config, nodes,
// netpath, vpn, workstation), in the order the catalogue (package checks/catalogue) declares.
package checks

import (
	"fmt"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/config"
	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/checks/nodes"
	"github.com/lanaccess/kubectl-lanaccess/checks/vpn"
	"github.com/lanaccess/kubectl-lanaccess/checks/workstation"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// DoctorEnv gathers the narrow environments of doctor's families; a nil family is left out
// (doctor without cluster access runs the path checks only).
type DoctorEnv struct {
	Config *config.Env
	Nodes  *nodes.Env
	Path   *netpath.Env
}

// Doctor is doctor's suite.
func Doctor(e DoctorEnv) []engine.Check {
	var all []engine.Check
	if e.Config != nil {
		all = append(all, config.Checks(e.Config)...)
	}
	if e.Nodes != nil {
		all = append(all, nodes.Checks(e.Nodes)...)
	}
	if e.Path != nil {
		all = append(all, netpath.Checks(e.Path)...)
	}
	return inCatalogueOrder(catalogue.Doctor, all)
}

// VPNTrace is vpn-trace's suite.
func VPNTrace(env *vpn.Env) []engine.Check {
	return inCatalogueOrder(catalogue.VPNTraceCmd, vpn.Checks(env))
}

// ClientCheck is client-check's suite.
func ClientCheck(env workstation.Env) []engine.Check {
	return inCatalogueOrder(catalogue.ClientCheck, workstation.Checks(env))
}

// inCatalogueOrder orders checks as the catalogue lists command's entries. A check the
// catalogue does not list for the command is a programming error.
func inCatalogueOrder(command string, cs []engine.Check) []engine.Check {
	byID := map[string]engine.Check{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	out := make([]engine.Check, 0, len(cs))
	for _, e := range catalogue.ForCommand(command) {
		if c, ok := byID[e.ID]; ok {
			out = append(out, c)
			delete(byID, e.ID)
		}
	}
	if len(byID) > 0 {
		panic(fmt.Sprintf("checks not in the %s catalogue: %v", command, byID))
	}
	return out
}
