package config

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// scopeFindings is LA001-SCOPE: discovery stayed in the namespaces it was given (-n, both
// Services named NAMESPACE/NAME, or the kubeconfig's namespace when the cluster-wide Service
// list was refused); it names the reads it skipped and the checks those reads serve, which
// judge without them (or SKIP saying so).
func scopeFindings(env *Env) []engine.Finding {
	s := env.Setup
	if s == nil || s.Scope == nil {
		return nil
	}
	skipped := s.Skipped()
	if len(skipped) == 0 {
		return nil
	}
	where := "namespace " + s.Scope[0]
	if len(s.Scope) > 1 {
		where = "namespaces " + strings.Join(s.Scope, ", ")
	}
	why := "-n or the Services named NAMESPACE/NAME"
	if err := s.Unread(kube.ReadKey("", "services", "")); apierrors.IsForbidden(err) {
		why = "the cluster-wide Service list was refused"
	}
	unjudged := unjudgedBy(skipped)
	return []engine.Finding{{
		Code: "LA001-SCOPE", Severity: engine.SeverityInfo, Object: "discovery in " + where,
		Message: fmt.Sprintf("discovery stayed in %s (%s): %d cluster-wide reads skipped (%s), so %s judge without them or SKIP",
			where, why, len(skipped), strings.Join(skipped, ", "), strings.Join(unjudged, ", ")),
		Evidence:    map[string]any{"namespaces": s.Scope, "skipped": skipped, "unjudged": unjudged},
		Remediation: wholeCluster(s),
	}}
}

// wholeCluster is the command that reads the whole cluster for the same setup.
func wholeCluster(s *kube.Setup) string {
	args := []string{"kubectl", "lanaccess", "doctor", "-A"}
	if s.ProxyService != nil && s.DNSService != nil {
		args = append(args, "--proxy-service", s.ProxyService.Namespace+"/"+s.ProxyService.Name, "--dns-service", s.DNSService.Namespace+"/"+s.DNSService.Name)
	}
	return remedy.Command(args...) + "   # needs the cluster-wide read grants (kubectl lanaccess manifests rbac)"
}

// unjudgedBy names the doctor checks (and "probe host") that the skipped reads serve,
// from the plugin's one permission list.
func unjudgedBy(skipped []string) []string {
	doctorIDs := catalogue.IDs(catalogue.ForCommand(catalogue.Doctor))
	var out []string
	for _, key := range skipped {
		group, resource, ns := kube.SplitReadKey(key)
		scope := manifests.SetupNamespaces
		switch ns {
		case "":
			scope = manifests.Cluster
		case "kube-system":
			scope = manifests.SystemNamespace
		}
		for _, p := range catalogue.Permissions() {
			r, sub := p.Split()
			if p.Group != group || r != resource || sub != "" || p.Scope != scope {
				continue
			}
			for _, f := range p.For {
				if (f == "probe host" || slices.Contains(doctorIDs, f)) && !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
