package kube

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Scope returns the namespaces discovery stays in, or nil for the whole cluster. With -n
// (Namespace, AllNamespaces false) they are that namespace and those of the objects named
// NAMESPACE/NAME; without -n, the namespaces of both Services when both are named
// NAMESPACE/NAME (nothing is left to search for). -A, or a Service left to discover without
// -n, reads the whole cluster, as kubectl does.
func (s Selection) Scope() []string {
	if s.AllNamespaces {
		return nil
	}
	var out []string
	add := func(ns string) {
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	proxyNS, _ := splitName(s.ProxyService, s.Namespace)
	dnsNS, _ := splitName(s.DNSService, s.Namespace)
	if s.Namespace == "" && (proxyNS == "" || dnsNS == "") {
		return nil
	}
	add(s.Namespace)
	add(proxyNS)
	add(dnsNS)
	if s.ConfigMap != "" {
		ns, _ := splitName(s.ConfigMap, "")
		add(ns)
	}
	sort.Strings(out)
	return out
}

// ScopeError is the reason a read was not made: discovery stays in the namespaces it was
// given, and the read is cluster-wide or in another namespace. It is recorded in
// Setup.Partial like a refused read, so the checks that need it say what they could not judge.
type ScopeError struct {
	// Namespaces discovery stayed in.
	Namespaces []string
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("not read: discovery stays in %s (-n or named NAMESPACE/NAME objects); -A reads the whole cluster",
		namespacesText(e.Namespaces))
}

// IsOutOfScope reports whether err says a read was skipped because discovery stays in the
// namespaces it was given.
func IsOutOfScope(err error) bool {
	var s *ScopeError
	return errors.As(err, &s)
}

func namespacesText(nss []string) string {
	if len(nss) == 1 {
		return "namespace " + nss[0]
	}
	return "namespaces " + strings.Join(nss, ", ")
}

// outOfScope reports whether a read in ns ("" for all namespaces or a cluster-scoped
// resource) leaves the namespaces discovery stays in; if so the read, named by key, is
// recorded as skipped.
func (d *discoverer) outOfScope(key, ns string) bool {
	if d.setup.Scope == nil || (ns != "" && slices.Contains(d.setup.Scope, ns)) {
		return false
	}
	d.partial[key] = &ScopeError{Namespaces: d.setup.Scope}
	return true
}

// Skipped lists the reads (ReadKeys) discovery did not make because they leave its scope.
func (s *Setup) Skipped() []string {
	var out []string
	for k, err := range s.Partial {
		if IsOutOfScope(err) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// ReadPerNamespace reports whether discovery, staying in some namespaces, still reads
// group/resource in each of them (a namespaced resource it otherwise lists cluster-wide);
// the cluster-scoped resources and the all-namespace reads are then not made at all.
func ReadPerNamespace(group, resource string) bool {
	if group == "" && resource == "services" || group == "networking.k8s.io" && resource == "ingresses" {
		return true
	}
	all := slices.Concat(TraefikIngressRoutes(), TraefikMiddlewares(), TraefikStreamRoutes(), IstioAuthorizationPolicies(), []DynamicResource{ContourHTTPProxies()}, KyvernoPolicyResources())
	for _, versions := range GatewayAPIResources() {
		all = append(all, versions...)
	}
	return slices.ContainsFunc(all, func(r DynamicResource) bool {
		return r.Namespaced && r.GVR.Group == group && r.GVR.Resource == resource
	})
}

// SplitReadKey is ReadKey's inverse: "resource.group in namespace" to its parts.
func SplitReadKey(key string) (group, resource, namespace string) {
	key, namespace, _ = strings.Cut(key, " in ")
	resource, group, _ = strings.Cut(key, ".")
	return group, resource, namespace
}
