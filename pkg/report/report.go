// Package report renders check results as text (with live progress), JSON and JUnit. It is the
// only package that prints.
package report

import (
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// SchemaVersion of the JSON contract (DESIGN.md section 2). Fields are added, never renamed.
const SchemaVersion = 1

// Report is one run of a command.
type Report struct {
	Command string
	Cluster Cluster
	// Subject describes what was examined (e.g. "proxy" -> "Service traefik/traefik"), in order.
	Subject []KV
	Results []engine.Result
	// FailOnWarn makes warnings count as failures in JUnit (as in the exit code).
	FailOnWarn bool
}

// Cluster identifies where the run happened.
type Cluster struct {
	Context string `json:"context"`
	Server  string `json:"server"`
}

// KV is an ordered key/value pair.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Section names the report section of a result: the catalogue's, "Other" when it has none.
func Section(res engine.Result) string {
	if res.Section == "" {
		return "Other"
	}
	return res.Section
}
