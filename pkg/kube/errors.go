package kube

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// UsageError is a problem with what the user asked for or named: a missing object, an
// ambiguous discovery, an invalid flag value. It maps to exit code 2. Message names the object;
// Fix names the flag or change that helps.
type UsageError struct {
	Message    string
	Candidates []string
	Fix        string
}

func (e *UsageError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	if len(e.Candidates) > 0 {
		fmt.Fprintf(&b, "; candidates: %s", strings.Join(e.Candidates, ", "))
	}
	if e.Fix != "" {
		fmt.Fprintf(&b, "; %s", e.Fix)
	}
	return b.String()
}

// IsUsage reports whether err is (or wraps) a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Selection is what the user named on the command line; empty fields are discovered.
// Names are "name" (in Namespace) or "namespace/name".
type Selection struct {
	Namespace     string
	AllNamespaces bool
	ProxyService  string
	DNSService    string
	ConfigMap     string
	Zone          zone.Zone
	// Host is --host: the probe host, instead of one chosen among the proxy's routes.
	Host string
	// KubeconfigNamespace is the kubeconfig context's namespace: where discovery stays when it
	// may not list Services cluster-wide and no namespace was named.
	KubeconfigNamespace string
}
