package kube

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// splitName reads "namespace/name" or "name" (in def).
func splitName(name, def string) (ns, n string) {
	if i := strings.Index(name, "/"); i >= 0 {
		return name[:i], name[i+1:]
	}
	if name == "" {
		return "", ""
	}
	return def, name
}

// inScope reports whether ns is where the user asked to look.
func (d *discoverer) inScope(ns string) bool {
	return d.sel.AllNamespaces || d.sel.Namespace == "" || d.sel.Namespace == ns
}

func (d *discoverer) scopeText() string {
	if d.sel.AllNamespaces || d.sel.Namespace == "" {
		return " in any namespace"
	}
	return " in namespace " + d.sel.Namespace
}

// pickService finds the Service named by name, or the one Service with externalIPs that
// exposes port.
func (d *discoverer) pickService(name string, port int32, role, flag string) (*corev1.Service, error) {
	all := d.setup.Services
	var candidates []*corev1.Service
	for i := range all {
		if d.inScope(all[i].Namespace) && len(all[i].Spec.ExternalIPs) > 0 && exposesPort(&all[i], port) {
			candidates = append(candidates, &all[i])
		}
	}
	if name != "" {
		def := ""
		if !d.sel.AllNamespaces {
			def = d.sel.Namespace
		}
		ns, n := splitName(name, def)
		var found []*corev1.Service
		for i := range all {
			if all[i].Name == n && (ns == "" || all[i].Namespace == ns) {
				found = append(found, &all[i])
			}
		}
		switch {
		case len(found) == 1:
			return found[0], nil
		case len(found) > 1:
			return nil, &UsageError{
				Message:    fmt.Sprintf("%d Services are named %q", len(found), n),
				Candidates: describeServices(found),
				Fix:        fmt.Sprintf("name the %s Service with %s NAMESPACE/%s", role, flag, n),
			}
		}
		where := " in any namespace"
		if ns != "" {
			where = " in namespace " + ns
			if err := d.setup.Unread(ReadKey("", "services", ns)); err != nil {
				return nil, &UsageError{Message: fmt.Sprintf("cannot read Services in namespace %s: %v", ns, err), Fix: "grant list on services in " + ns}
			}
		}
		return nil, &UsageError{
			Message:    fmt.Sprintf("%s Service %q not found%s", role, n, where),
			Candidates: describeServices(candidates),
			Fix:        fmt.Sprintf("check the name given to %s", flag),
		}
	}
	switch len(candidates) {
	case 1:
		return candidates[0], nil
	case 0:
		var withIPs []*corev1.Service
		for i := range all {
			if d.inScope(all[i].Namespace) && len(all[i].Spec.ExternalIPs) > 0 {
				withIPs = append(withIPs, &all[i])
			}
		}
		fix := fmt.Sprintf("name the %s Service with %s NAMESPACE/NAME", role, flag)
		if d.sel.Namespace != "" && !d.sel.AllNamespaces {
			fix += ", or search every namespace with --all-namespaces instead of -n"
		}
		return nil, &UsageError{
			Message:    fmt.Sprintf("no Service with externalIPs exposes port %d%s (looking for the %s Service)", port, d.scopeText(), role),
			Candidates: describeServices(withIPs),
			Fix:        fix,
		}
	default:
		msg := fmt.Sprintf("%d Services with externalIPs expose port %d%s (looking for the %s Service)", len(candidates), port, d.scopeText(), role)
		if shared := sharedAddresses(candidates); len(shared) > 0 {
			msg += fmt.Sprintf("; they claim the same addresses (%s): if one is not yours, it may be intercepting this traffic (CVE-2020-8554, see LA106)", strings.Join(shared, ", "))
		}
		return nil, &UsageError{
			Message:    msg,
			Candidates: describeServices(candidates),
			Fix:        fmt.Sprintf("name the %s Service with %s NAMESPACE/NAME", role, flag),
		}
	}
}

// sharedAddresses lists the externalIPs claimed by more than one of svcs.
func sharedAddresses(svcs []*corev1.Service) []string {
	count := map[string]int{}
	for _, s := range svcs {
		seen := map[string]bool{}
		for _, ip := range s.Spec.ExternalIPs {
			if !seen[ip] {
				seen[ip] = true
				count[ip]++
			}
		}
	}
	var out []string
	for ip, n := range count {
		if n > 1 {
			out = append(out, ip)
		}
	}
	sort.Strings(out)
	return out
}

func exposesPort(svc *corev1.Service, port int32) bool {
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return true
		}
	}
	return false
}

// describeServices lists candidates as "ns/name (externalIPs a,b; ports 80/TCP,443/TCP)".
func describeServices(svcs []*corev1.Service) []string {
	out := make([]string, 0, len(svcs))
	for _, s := range svcs {
		var ports []string
		for _, p := range s.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, Protocol(p.Protocol)))
		}
		desc := s.Namespace + "/" + s.Name + " (ports " + strings.Join(ports, ",")
		if len(s.Spec.ExternalIPs) > 0 {
			desc += "; externalIPs " + strings.Join(s.Spec.ExternalIPs, ",")
		}
		out = append(out, desc+")")
	}
	sort.Strings(out)
	return out
}

// pickDeployment returns the Deployment whose pod template the Service selects; with
// several, the one that owns most of the selected pods (through its ReplicaSets' names).
func pickDeployment(deps []appsv1.Deployment, selector labels.Selector, pods []corev1.Pod) *appsv1.Deployment {
	var best *appsv1.Deployment
	bestOwned := -1
	for i := range deps {
		dep := &deps[i]
		if !selector.Matches(labels.Set(dep.Spec.Template.Labels)) {
			continue
		}
		owned := 0
		for _, p := range pods {
			for _, ref := range p.OwnerReferences {
				if ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.Name, dep.Name+"-") {
					owned++
				}
			}
		}
		if owned > bestOwned || (owned == bestOwned && dep.Name < best.Name) {
			best, bestOwned = dep, owned
		}
	}
	return best
}
