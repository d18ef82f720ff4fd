// Package report renders check results as text (with live progress), JSON and JUnit. It is the
// only package that prints.
package report

import (
	"strings"

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

// Group names the section a check belongs to, from its ID.
func Group(id string) string {
	switch {
	case strings.HasPrefix(id, "LA0"), strings.HasPrefix(id, "LA1"):
		return "Configuration"
	case strings.HasPrefix(id, "LA2"):
		return "Node listeners"
	case strings.HasPrefix(id, "LA3"):
		return "DNS path"
	case strings.HasPrefix(id, "LA4"):
		return "HTTPS path"
	case strings.HasPrefix(id, "VPN"):
		return "VPN trace"
	case strings.HasPrefix(id, "WS"):
		return "This workstation"
	}
	return "Other"
}
