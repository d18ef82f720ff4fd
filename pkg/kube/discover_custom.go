package kube

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// customSteps read Traefik routes and middlewares, Contour's HTTPProxies, Kyverno policies,
// Gatekeeper templates (then the constraints of templates about externalIPs), Gateway API's
// kinds and Istio's AuthorizationPolicies when dyn is set: one step per resource, or per kind
// when versions of it are tried in turn. A CRD that is not installed is recorded in
// Setup.Installed, never as a failure.
func (d *discoverer) customSteps() []step {
	if d.dyn == nil {
		return nil
	}
	s := d.setup
	var steps []step
	for _, kind := range []struct {
		resources []DynamicResource
		into      *[]unstructured.Unstructured
	}{
		{TraefikIngressRoutes(), &s.IngressRoutes},
		{TraefikMiddlewares(), &s.Middlewares},
		{TraefikStreamRoutes(), &s.IngressRouteStreams},
		{[]DynamicResource{ContourHTTPProxies()}, &s.HTTPProxies},
		{KyvernoPolicyResources(), &s.KyvernoPolicies},
	} {
		for _, r := range kind.resources {
			var items []unstructured.Unstructured
			steps = append(steps, step{
				read: func(d *discoverer) error {
					var err error
					items, err = d.readCustom(r)
					return err
				},
				then: func() error { *kind.into = append(*kind.into, items...); return nil },
			})
		}
	}
	steps = append(steps, step{read: (*discoverer).readGatekeeper, serial: true})
	for i, versions := range GatewayAPIResources() {
		into := []*[]unstructured.Unstructured{&s.GatewayClasses, &s.Gateways, &s.HTTPRoutes, &s.ReferenceGrants}[i]
		steps = append(steps, step{read: func(d *discoverer) error { return d.readFirstServedVersion(versions, into) }})
	}
	return append(steps, step{read: func(d *discoverer) error {
		return d.readFirstServedVersion(IstioAuthorizationPolicies(), &s.AuthorizationPolicies)
	}})
}

// readCustom lists r; a failure other than a dead context is recorded, and gives no items.
func (d *discoverer) readCustom(r DynamicResource) ([]unstructured.Unstructured, error) {
	items, err := d.listCustom(r)
	if err != nil {
		return nil, d.optional(r.Key(), err)
	}
	d.installed[r.Key()] = true
	return items, nil
}

// readGatekeeper reads Gatekeeper's ConstraintTemplates, then the constraints of the templates
// about externalIPs.
func (d *discoverer) readGatekeeper() error {
	s := d.setup
	var err error
	if s.GatekeeperTemplates, err = d.readCustom(GatekeeperTemplates()); err != nil {
		return err
	}
	for _, t := range s.GatekeeperTemplates {
		kind, _, _ := unstructured.NestedString(t.Object, "spec", "crd", "spec", "names", "kind")
		if kind == "" || !MentionsExternalIPs(t.Object) {
			continue
		}
		r := GatekeeperConstraint(kind)
		items, err := listDynamic(d.ctx, d.dyn, r)
		if err != nil {
			if err := d.optional(r.Key(), err); err != nil {
				return err
			}
			continue
		}
		d.installed[r.Key()] = true
		s.GatekeeperConstraints = append(s.GatekeeperConstraints, items...)
	}
	return nil
}

// listCustom lists r cluster-wide, or in each namespace of Setup.Scope when discovery stays
// in some; a cluster-scoped r is then not read (a *ScopeError, recorded by the caller).
func (d *discoverer) listCustom(r DynamicResource) ([]unstructured.Unstructured, error) {
	if d.setup.Scope == nil {
		return listDynamic(d.ctx, d.dyn, r)
	}
	if !r.Namespaced {
		return nil, &ScopeError{Namespaces: d.setup.Scope}
	}
	var out []unstructured.Unstructured
	for _, ns := range d.setup.Scope {
		items, err := listDynamicIn(d.ctx, d.dyn, r, ns)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// markCustomScope records, for the namespaced custom resources read only in the namespaces
// of Setup.Scope, that the other namespaces were not read. It runs once the custom resources
// are read; staying in namespaces, discovery reads nothing else that it records as installed
// (the admission APIs and Calico's resources are cluster-wide, so not read).
func (d *discoverer) markCustomScope() {
	if d.setup.Scope == nil {
		return
	}
	for key, installed := range d.installed {
		if installed {
			if _, failed := d.partial[key]; !failed {
				d.partial[key] = &ScopeError{Namespaces: d.setup.Scope}
			}
		}
	}
}

// MentionsExternalIPs reports whether any string inside obj (a policy's rules, a template's
// rego or CEL) mentions externalIPs: how a policy about CVE-2020-8554 is recognised whatever
// engine wrote it.
func MentionsExternalIPs(obj any) bool {
	switch v := obj.(type) {
	case string:
		return strings.Contains(strings.ToLower(v), "externalips")
	case map[string]any:
		for k, x := range v {
			if strings.Contains(strings.ToLower(k), "externalips") || MentionsExternalIPs(x) {
				return true
			}
		}
	case []any:
		if slices.ContainsFunc(v, MentionsExternalIPs) {
			return true
		}
	}
	return false
}

// readFirstServedVersion reads the first of versions (one kind) that the API server serves.
func (d *discoverer) readFirstServedVersion(versions []DynamicResource, into *[]unstructured.Unstructured) error {
	for _, r := range versions {
		items, err := d.listCustom(r)
		if err == nil {
			d.installed[r.Key()] = true
			delete(d.partial, r.Key())
			*into = items
			return nil
		}
		if err := d.optional(r.Key(), err); err != nil {
			return err
		}
		if !IsNotInstalled(err) {
			return nil // forbidden or failing: recorded, another version would fail the same way
		}
	}
	return nil
}
