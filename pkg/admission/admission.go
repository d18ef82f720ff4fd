// Package admission tells what the cluster's admission controls do to a Service request: a
// ValidatingAdmissionPolicy (evaluated with the API server's own CEL compiler and activation),
// Kyverno and Gatekeeper policies about externalIPs (in the forms their public libraries
// publish), and the API server's DenyServiceExternalIPs plugin. LA106 asks each control about
// the requests that matter (a foreign Service claiming our addresses, the next update of our
// own Services and of the other legitimate users of externalIPs) instead of judging a policy
// by whether it mentions externalIPs.
package admission

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Operation is an admission operation on a Service.
type Operation string

// The operations LA106 asks about.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
)

// Request is one admission request for a Service.
type Request struct {
	Operation Operation
	// Object is the Service as written; OldObject the stored one (UPDATE only).
	Object, OldObject *corev1.Service
	// Namespace is the Service's namespace with its labels (nil: only its name is known, and
	// the API server's kubernetes.io/metadata.name label is assumed).
	Namespace *corev1.Namespace
}

// NamespaceObject is r's namespace, with at least the label the API server sets on every
// namespace (kubernetes.io/metadata.name, since Kubernetes 1.21).
func (r Request) NamespaceObject() *corev1.Namespace {
	if r.Namespace != nil {
		return r.Namespace
	}
	ns := r.Object.Namespace
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns}}}
}

// Decision is what a control does with a request.
type Decision string

// The decisions.
const (
	// Allowed: the control lets the request through (or does not apply to it).
	Allowed Decision = "allowed"
	// Denied: the control refuses it.
	Denied Decision = "denied"
	// Unknown: what the control does cannot be told from what is read.
	Unknown Decision = "unknown"
)

// Verdict is a decision and why.
type Verdict struct {
	Decision Decision
	Why      string
}

func allowed(format string, a ...any) Verdict {
	return Verdict{Decision: Allowed, Why: fmt.Sprintf(format, a...)}
}

func denied(format string, a ...any) Verdict {
	return Verdict{Decision: Denied, Why: fmt.Sprintf(format, a...)}
}

func unknown(format string, a ...any) Verdict {
	return Verdict{Decision: Unknown, Why: fmt.Sprintf(format, a...)}
}

// Control is one admission control that may refuse Services.
type Control struct {
	// What names it: "ValidatingAdmissionPolicy restrict-service-externalips".
	What string
	// Enforcing: a violation refuses the request. A control that only audits or warns is
	// not enforcing (NotEnforcedWhy says why; Remedy makes it enforce).
	Enforcing      bool
	NotEnforcedWhy string
	Remedy         string
	// Remove is the command that takes the control away (to replace it).
	Remove string
	// Notes are facts worth telling beside the verdicts (it fails open while its webhook is
	// down, it cannot see some namespaces...).
	Notes []string
	// violates says whether the request breaks the control's rule, whatever its action.
	violates func(Request) Verdict
}

// Violates says whether r breaks the control's rule (whether it refuses it depends on
// Enforcing).
func (c Control) Violates(r Request) Verdict { return c.violates(r) }

// Admit is what the control does with r: a violation is refused only when it enforces.
func (c Control) Admit(r Request) Verdict {
	v := c.violates(r)
	if v.Decision == Denied && !c.Enforcing {
		return allowed("it would refuse it (%s) but does not enforce: %s", v.Why, c.NotEnforcedWhy)
	}
	return v
}

// matchesOperation reports whether ops (admission operations, "*" for all) include op.
func matchesOperation(ops []string, op Operation) bool {
	return len(ops) == 0 || slices.Contains(ops, string(op)) || slices.Contains(ops, "*")
}

// joinWhy adds a reason to another.
func joinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
