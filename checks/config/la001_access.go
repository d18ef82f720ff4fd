package checks

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// Permission is one verb on one resource that doctor needs. Namespace "" means all
// namespaces (or a cluster-scoped resource).
type Permission struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
}

func (p Permission) String() string {
	r := p.Resource
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Group != "" {
		r += "." + p.Group
	}
	where := "in all namespaces"
	if p.Namespace != "" {
		where = "in namespace " + p.Namespace
	}
	return p.Verb + " " + r + " " + where
}

// Access is the answer of one SelfSubjectAccessReview.
type Access struct {
	Allowed bool
	Reason  string
}

// FactMissingPermissions is the Facts key under which LA001 records the permissions that
// were denied ([]Permission, empty when all were granted).
const FactMissingPermissions = "LA001.missingPermissions"

// FactAccessPrefix prefixes the Facts keys under which Permitted caches each answer
// ("access: list nodes in all namespaces").
const FactAccessPrefix = "access: "

// Permitted reports whether the current user may verb the resource ("pods/exec" for a
// subresource; group "" for the core group; ns "" for all namespaces or cluster scope). When
// it may not, reason names what is missing, ready to be a SKIP reason: "not permitted by RBAC:
// create pods/exec in all namespaces". Answers are cached in Facts; LA001 asks for everything
// doctor needs up front, other checks may ask for more. When the question cannot be asked (no
// client, API error) the answer is "permitted": the check then meets the real error itself.
func (e *Env) Permitted(ctx context.Context, verb, group, resource, ns string) (bool, string) {
	p := Permission{Verb: verb, Group: group, Resource: resource, Namespace: ns}
	if i := strings.Index(resource, "/"); i >= 0 {
		p.Resource, p.Subresource = resource[:i], resource[i+1:]
	}
	a, err := e.review(ctx, p)
	if err != nil || a.Allowed {
		return true, ""
	}
	return false, "not permitted by RBAC: " + p.String()
}

// review asks the API server once per permission and run.
func (e *Env) review(ctx context.Context, p Permission) (Access, error) {
	key := FactAccessPrefix + p.String()
	if e.Facts != nil {
		if v, ok := e.Facts.Get(key); ok {
			if a, ok := v.(Access); ok {
				return a, nil
			}
		}
	}
	if e.Client == nil {
		return Access{}, fmt.Errorf("no Kubernetes client")
	}
	r, err := e.Client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Namespace: p.Namespace,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return Access{}, err
	}
	a := Access{Allowed: r.Status.Allowed && !r.Status.Denied, Reason: r.Status.Reason}
	if e.Facts != nil {
		e.Facts.Set(key, a)
	}
	return a, nil
}

// need is one permission and the checks that cannot run without it.
type need struct {
	Permission
	Checks []string
	// Optional permissions serve checks that work without them (helper pods for LA201): a
	// missing one is information, not a warning.
	Optional bool
}

// neededPermissions lists what doctor reads, in the namespaces of the discovered setup.
// Custom resources whose CRD is not installed are not asked about.
func neededPermissions(env *Env) []need {
	var proxyNS, dnsNS string
	installed := map[string]bool{}
	if s := env.Setup; s != nil {
		if s.ProxyService != nil {
			proxyNS = s.ProxyService.Namespace
		}
		if s.DNSService != nil {
			dnsNS = s.DNSService.Namespace
		}
		installed = s.Installed
	}
	list := func(group, resource, ns string, checks ...string) need {
		return need{Permission: Permission{Verb: "list", Group: group, Resource: resource, Namespace: ns}, Checks: checks}
	}
	needs := []need{
		list("", "services", "", "LA106"),
		list("", "nodes", "", "LA101", "LA201"),
		list("", "pods", proxyNS, "LA102"),
		list("apps", "deployments", proxyNS, "LA102"),
		list("discovery.k8s.io", "endpointslices", proxyNS, "LA102"),
		list("", "pods", dnsNS, "LA103", "LA105"),
		list("apps", "deployments", dnsNS, "LA105"),
		list("discovery.k8s.io", "endpointslices", dnsNS, "LA103"),
		list("", "configmaps", dnsNS, "LA104"),
		list("policy", "poddisruptionbudgets", dnsNS, "LA105"),
		list("networking.k8s.io", "ingresses", "", "LA107"),
		list("networking.k8s.io", "ingressclasses", "", "LA107"),
		list("admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "LA106"),
	}
	optionalCRD := func(r kube.DynamicResource, checks ...string) {
		if v, known := installed[r.Key()]; known && !v {
			return // not installed: nothing to read
		}
		needs = append(needs, list(r.GVR.Group, r.GVR.Resource, "", checks...))
	}
	if v, known := installed[kube.ReadKey("admissionregistration.k8s.io", "validatingadmissionpolicies", "")]; !known || v {
		needs = append(needs,
			list("admissionregistration.k8s.io", "validatingadmissionpolicies", "", "LA106"),
			list("admissionregistration.k8s.io", "validatingadmissionpolicybindings", "", "LA106"))
	}
	for _, r := range kube.TraefikIngressRoutes() {
		optionalCRD(r, "LA107")
	}
	for _, r := range kube.TraefikMiddlewares() {
		optionalCRD(r, "LA107")
	}
	for _, r := range kube.KyvernoPolicyResources() {
		optionalCRD(r, "LA106")
	}
	optionalCRD(kube.GatekeeperTemplates(), "LA106")
	helperNS := env.Options.HelperNamespace
	if helperNS == "" {
		helperNS = "default"
	}
	needs = append(needs,
		need{Permission: Permission{Verb: "create", Resource: "pods", Subresource: "exec"}, Checks: []string{"LA201"}, Optional: true},
		need{Permission: Permission{Verb: "create", Resource: "pods", Namespace: helperNS}, Checks: []string{"LA201"}, Optional: true},
		need{Permission: Permission{Verb: "delete", Resource: "pods", Namespace: helperNS}, Checks: []string{"LA201"}, Optional: true},
	)
	return mergeNeeds(needs)
}

// mergeNeeds asks once for a permission several checks need (the proxy and the DNS often
// share a namespace).
func mergeNeeds(needs []need) []need {
	var out []need
	index := map[Permission]int{}
	for _, n := range needs {
		i, seen := index[n.Permission]
		if !seen {
			index[n.Permission] = len(out)
			out = append(out, n)
			continue
		}
		for _, c := range n.Checks {
			if !slices.Contains(out[i].Checks, c) {
				out[i].Checks = append(out[i].Checks, c)
			}
		}
		out[i].Optional = out[i].Optional && n.Optional
	}
	return out
}

// AccessAndPermissions is LA001: the API answers, and the user may read what the checks
// need. One SelfSubjectAccessReview per permission; a missing one is named with the checks
// that will SKIP because of it and the RBAC rule that grants it.
func AccessAndPermissions(env *Env) engine.Check {
	return engine.Check{
		ID:    "LA001",
		Title: "The API server answers and the permissions doctor needs are granted",
		Run:   func(ctx context.Context) engine.Outcome { return accessAndPermissions(ctx, env) },
	}
}

func accessAndPermissions(ctx context.Context, env *Env) engine.Outcome {
	if env.Client == nil {
		return engine.Outcome{Err: fmt.Errorf("no Kubernetes client in the environment")}
	}
	var findings []engine.Finding
	missing := []Permission{}
	for _, n := range neededPermissions(env) {
		a, err := env.review(ctx, n.Permission)
		if err != nil {
			if apierrors.IsForbidden(err) {
				return engine.Outcome{Findings: []engine.Finding{{
					Severity: engine.SeverityWarn, Object: "selfsubjectaccessreviews.authorization.k8s.io",
					Message:     "the API refuses to answer permission questions, so missing permissions show up as SKIP in each check instead",
					Evidence:    map[string]any{"error": err.Error()},
					Remediation: "kubectl create clusterrolebinding lanaccess-basic-user --clusterrole=system:basic-user --user=\"$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}')\"",
				}}}
			}
			return engine.Outcome{Err: fmt.Errorf("API server did not answer a SelfSubjectAccessReview (%s): %w", n.Permission, err)}
		}
		if a.Allowed {
			continue
		}
		missing = append(missing, n.Permission)
		f := engine.Finding{
			Severity: engine.SeverityWarn,
			Object:   "RBAC: " + n.String(),
			Message:  fmt.Sprintf("not permitted: %s will be skipped", strings.Join(n.Checks, ", ")),
			Evidence: map[string]any{
				"verb": n.Verb, "group": n.Group, "resource": n.Resource, "subresource": n.Subresource,
				"namespace": n.Namespace, "checks": n.Checks, "reason": a.Reason,
			},
			Remediation: grantCommand(n.Permission),
		}
		if n.Optional {
			f.Severity = engine.SeverityInfo
			f.Message = fmt.Sprintf("not permitted: %s works with less (existing pods, or reports what it could not read)", strings.Join(n.Checks, ", "))
		}
		findings = append(findings, f)
	}
	if env.Facts != nil {
		env.Facts.Set(FactMissingPermissions, missing)
	}
	findings = append(findings, unreadableReads(env)...)
	return engine.Outcome{Findings: findings}
}

// unreadableReads reports reads discovery could not make for a reason other than RBAC (a
// broken aggregated API, a webhook timing out): the checks that need them will say so.
func unreadableReads(env *Env) []engine.Finding {
	if env.Setup == nil {
		return nil
	}
	var keys []string
	for k, err := range env.Setup.Partial {
		if !apierrors.IsForbidden(err) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []engine.Finding
	for _, k := range keys {
		out = append(out, engine.Finding{
			Severity: engine.SeverityWarn, Object: k,
			Message:     "the API server failed to list " + k + ": checks that need it will be skipped",
			Evidence:    map[string]any{"error": env.Setup.Partial[k].Error()},
			Remediation: "kubectl get --raw /readyz?verbose   # then retry; an aggregated API or CRD conversion webhook may be down",
		})
	}
	return out
}

// grantCommand is a Role (or ClusterRole) and binding that grant p to the current user.
func grantCommand(p Permission) string {
	resource := p.Resource
	if p.Subresource != "" {
		resource += "/" + p.Subresource
	}
	if p.Group != "" {
		resource += "." + p.Group
	}
	user := `"$(kubectl auth whoami -o jsonpath='{.status.userInfo.username}')"`
	name := "lanaccess-" + p.Verb + "-" + strings.NewReplacer("/", "-", ".", "-").Replace(resource)
	if p.Namespace == "" {
		return fmt.Sprintf("kubectl create clusterrole %[1]s --verb=%[2]s --resource=%[3]s\nkubectl create clusterrolebinding %[1]s --clusterrole=%[1]s --user=%[4]s",
			name, p.Verb, resource, user)
	}
	return fmt.Sprintf("kubectl -n %[5]s create role %[1]s --verb=%[2]s --resource=%[3]s\nkubectl -n %[5]s create rolebinding %[1]s --role=%[1]s --user=%[4]s",
		name, p.Verb, resource, user, p.Namespace)
}
