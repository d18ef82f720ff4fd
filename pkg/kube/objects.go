package kube

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ReadKeysIn names the discovery reads of a namespace, for Setup.UnreadReason: resources are
// "pods" or "deployments.apps".
func ReadKeysIn(ns string, resources ...string) []string {
	out := make([]string, 0, len(resources))
	for _, r := range resources {
		group := ""
		if i := strings.Index(r, "."); i >= 0 {
			r, group = r[:i], r[i+1:]
		}
		out = append(out, ReadKey(group, r, ns))
	}
	return out
}

// ValidateObjectRef checks a "[namespace/]name" flag value: each part a DNS-1123 name, as the
// API server requires of namespaces and of Service and ConfigMap names ("" is no value).
func ValidateObjectRef(ref string) error {
	if ref == "" {
		return nil
	}
	ns, name, hasNS := strings.Cut(ref, "/")
	if !hasNS {
		ns, name = "", ref
	}
	if hasNS {
		if err := ValidateNamespace(ns); err != nil {
			return err
		}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// ValidateNamespace checks a namespace name (DNS-1123 label).
func ValidateNamespace(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}
