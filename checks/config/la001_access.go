package config

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// need is one question LA001 asks, and the checks that cannot run without it.
type need struct {
	kube.AccessQuestion
	Checks []string
	// Optional permissions serve checks that work without them (helper pods for LA201): a
	// missing one is information, not a warning.
	Optional bool
}

func (n need) String() string {
	r := n.Resource
	if n.Subresource != "" {
		r += "/" + n.Subresource
	}
	if n.Group != "" {
		r += "." + n.Group
	}
	where := "in all namespaces"
	if n.Namespace != "" {
		where = "in namespace " + n.Namespace
	}
	return n.Verb + " " + r + " " + where
}

// neededPermissions derives LA001's questions from what the catalogue's entries declare they
// read (catalogue.Permissions, which the shipped RBAC is tested against): the permissions doctor
// uses (its checks, or its discovery: LA000), in the namespaces of the discovered setup. Reads are
// asked as list, the verb doctor calls; custom resources whose CRD is not installed are not
// asked about, nor helper pods with --no-helpers.
func neededPermissions(env *Env) []need {
	var installed map[string]bool
	where := permissionNamespaces{helper: env.HelperNamespace}
	if s := env.Setup; s != nil {
		installed = s.Installed
		where.scope = s.Scope
		for _, ns := range []string{nsOf(s.ProxyService), nsOf(s.DNSService)} {
			if ns != "" && !slices.Contains(where.setup, ns) {
				where.setup = append(where.setup, ns)
			}
		}
	}
	if where.helper == "" {
		where.helper = "default"
	}
	doctorIDs := catalogue.IDs(append([]catalogue.Entry{catalogue.NotStarted(catalogue.Doctor)}, catalogue.ForCommand(catalogue.Doctor)...))
	var needs []need
	for _, p := range catalogue.Permissions() {
		checks := slices.DeleteFunc(slices.Clone(p.For), func(f string) bool { return !slices.Contains(doctorIDs, f) })
		if len(checks) == 0 || !askedByDoctor(p, env.NoHelpers, installed) {
			continue
		}
		resource, sub := p.Split()
		for _, ns := range where.asked(p, resource) {
			needs = append(needs, need{
				AccessQuestion: kube.AccessQuestion{Verb: p.Verb, Group: p.Group, Resource: resource, Subresource: sub, Namespace: ns},
				Checks:         withoutDiscovery(checks), Optional: p.Optional,
			})
		}
	}
	return needs
}

// askedByDoctor says whether LA001 asks about p: a read is asked as list (get and watch are
// not asked), the VPN's exec is vpn-trace's, helper pods are not with --no-helpers, and a
// custom resource only when its CRD is installed or that is not known.
func askedByDoctor(p manifests.Permission, noHelpers bool, installed map[string]bool) bool {
	if p.Verb == "get" || p.Verb == "watch" || p.Grant == manifests.GrantVPNExec {
		return false
	}
	if p.Grant == manifests.GrantHelpers && noHelpers {
		return false
	}
	if p.CRD {
		resource, _ := p.Split()
		if v, known := installed[kube.ReadKey(p.Group, resource, "")]; known && !v {
			return false // not installed: nothing to read
		}
	}
	return true
}

// permissionNamespaces are the namespaces of the discovered setup and the helper pods', and
// those discovery stayed in (nil: the whole cluster).
type permissionNamespaces struct {
	setup  []string
	helper string
	scope  []string
}

// asked lists the namespaces LA001 asks permission p (on resource) in. When discovery stays
// in some namespaces, a read it does not make is not asked about (LA001-SCOPE names it), and
// a namespaced resource it reads there instead of cluster-wide is asked there.
func (w permissionNamespaces) asked(p manifests.Permission, resource string) []string {
	if w.scope == nil || p.Verb == "create" && resource == "selfsubjectaccessreviews" {
		return w.of(p.Scope)
	}
	switch p.Scope {
	case manifests.Cluster:
		if kube.ReadPerNamespace(p.Group, resource) {
			return w.scope
		}
		return nil
	case manifests.SystemNamespace:
		if !slices.Contains(w.scope, "kube-system") {
			return nil
		}
	}
	return w.of(p.Scope)
}

// of lists the namespaces a permission of scope is asked in ("" for all namespaces).
func (w permissionNamespaces) of(scope manifests.Scope) []string {
	switch scope {
	case manifests.SetupNamespaces:
		return w.setup
	case manifests.HelperNamespace:
		return []string{w.helper}
	case manifests.SystemNamespace:
		return []string{"kube-system"}
	default:
		return []string{""}
	}
}

func nsOf(svc *corev1.Service) string {
	if svc == nil {
		return ""
	}
	return svc.Namespace
}

// withoutDiscovery names the checks a permission serves; discovery (LA000, the run's start)
// serves them all.
func withoutDiscovery(checks []string) []string {
	discovery := catalogue.NotStarted(catalogue.Doctor).ID
	out := slices.DeleteFunc(slices.Clone(checks), func(c string) bool { return c == discovery })
	if len(out) == 0 {
		return []string{"discovery (every check)"}
	}
	return out
}

// AccessAndPermissions is LA001: the API answers, and the user may read what the checks
// need. Each permission is known from a list this run made, a namespace's complete rules review or
// an access review (kube.AccessReviewer); a missing one is named with the checks
// that will SKIP because of it and the RBAC rule that grants it.
func AccessAndPermissions(env *Env) engine.Check {
	return catalogue.Check("LA001", func(ctx context.Context) engine.Outcome { return accessAndPermissions(ctx, env) })
}

func accessAndPermissions(ctx context.Context, env *Env) engine.Outcome {
	if env.Access == nil {
		return engine.Outcome{Err: fmt.Errorf("no access reviewer in the environment")}
	}
	var findings []engine.Finding
	for _, n := range neededPermissions(env) {
		a, err := env.Access.Review(ctx, n.AccessQuestion)
		if err != nil {
			if apierrors.IsForbidden(err) {
				return engine.Outcome{Findings: []engine.Finding{{
					Code: "LA001-REVIEW-FORBIDDEN", Severity: engine.SeverityWarn, Object: "selfsubjectaccessreviews.authorization.k8s.io",
					Message:     "the API refuses to answer permission questions, so missing permissions show up as SKIP in each check instead",
					Evidence:    map[string]any{"error": err.Error()},
					Remediation: "kubectl create clusterrolebinding lanaccess-basic-user --clusterrole=system:basic-user --user=\"$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}')\"",
				}}}
			}
			return engine.Outcome{Err: fmt.Errorf("API server did not answer a SelfSubjectAccessReview (%s): %w", n, err)}
		}
		if a.Allowed {
			continue
		}
		f := engine.Finding{
			Code:     "LA001-PERMISSION",
			Severity: engine.SeverityWarn,
			Object:   "RBAC: " + n.String(),
			Message:  fmt.Sprintf("not permitted: %s will be skipped", strings.Join(n.Checks, ", ")),
			Evidence: map[string]any{
				"verb": n.Verb, "group": n.Group, "resource": n.Resource, "subresource": n.Subresource,
				"namespace": n.Namespace, "checks": n.Checks, "reason": a.Reason,
			},
			Remediation: grantCommand(n.AccessQuestion),
		}
		if n.Optional {
			f.Code, f.Severity = "LA001-PERMISSION-OPTIONAL", engine.SeverityInfo
			f.Message = fmt.Sprintf("not permitted: %s works with less (existing pods, or reports what it could not read)", strings.Join(n.Checks, ", "))
		}
		findings = append(findings, f)
	}
	findings = append(findings, unreadableReads(env)...)
	findings = append(findings, scopeFindings(env)...)
	return engine.Outcome{Findings: findings}
}

// unreadableReads reports reads discovery could not make for a reason other than RBAC (a
// broken aggregated API, a webhook timing out), naming the checks that declare the read (the
// catalogue): they will say what they did not see.
func unreadableReads(env *Env) []engine.Finding {
	if env.Setup == nil {
		return nil
	}
	setupNamespaces := []string{nsOf(env.Setup.ProxyService), nsOf(env.Setup.DNSService)}
	var keys []string
	for k, err := range env.Setup.Partial {
		if !apierrors.IsForbidden(err) && !kube.IsOutOfScope(err) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []engine.Finding
	for _, k := range keys {
		who := "the checks that need it"
		readers := catalogue.Readers(catalogue.Doctor, k, setupNamespaces)
		if len(readers) > 0 {
			readers = withoutDiscovery(readers)
			who = strings.Join(readers, ", ")
		}
		out = append(out, engine.Finding{
			Code: "LA001-LIST-FAILED", Severity: engine.SeverityWarn, Object: k,
			Message:     "the API server failed to list " + k + ": " + who + " will say what they did not see",
			Evidence:    map[string]any{"error": env.Setup.Partial[k].Error(), "checks": readers},
			Remediation: "kubectl get --raw /readyz?verbose   # then retry; an aggregated API or CRD conversion webhook may be down",
		})
	}
	return out
}

// grantCommand is a Role (or ClusterRole) and binding that grant q to the current user.
func grantCommand(q kube.AccessQuestion) string {
	resource := q.Resource
	if q.Subresource != "" {
		resource += "/" + q.Subresource
	}
	if q.Group != "" {
		resource += "." + q.Group
	}
	user := `"$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}')"`
	name := "lanaccess-" + q.Verb + "-" + strings.NewReplacer("/", "-", ".", "-").Replace(resource)
	if q.Namespace == "" {
		return remedy.Command("kubectl", "create", "clusterrole", name, "--verb="+q.Verb, "--resource="+resource) + "\n" +
			remedy.Command("kubectl", "create", "clusterrolebinding", name, "--clusterrole="+name) + " --user=" + user
	}
	return remedy.Kubectl(q.Namespace, "create", "role", name, "--verb="+q.Verb, "--resource="+resource) + "\n" +
		remedy.Kubectl(q.Namespace, "create", "rolebinding", name, "--role="+name) + " --user=" + user
}
