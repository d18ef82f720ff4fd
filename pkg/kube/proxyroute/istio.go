package proxyroute

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// Istio's gateway authenticates with AuthorizationPolicies, not in the route (istio/istio
// security API, AuthorizationPolicy; pilot/pkg/security/authz/builder). Modelled:
//   - which policies apply to the gateway's pods: those of the gateway's namespace whose
//     targetRefs name its Gateway, whose selector matches the pods' labels, or that have
//     neither (the whole namespace); and those of the root namespace istio-system (the default
//     meshConfig rootNamespace) that have no selector or one matching the pods;
//   - a CUSTOM policy delegates the decision of every request one of its rules matches to its
//     ext_authz provider (an unknown provider is taken to deny them: not verified, see
//     docs/semantics.md section 12). A route is authenticated when one rule
//     matches every request of it: no from, no when, and a `to` whose operation sets only hosts
//     (covering each route host: exact, "*.suffix", "prefix*" or "*") and ports (including the
//     ports of the Gateway listeners the route attaches to).
//
// Not modelled, and said so on the route: an ALLOW, DENY or AUDIT policy applying to the gateway
// (an action left unset is ALLOW), a CUSTOM rule that matches only some requests of the route
// (paths, methods, sources, conditions), and policies that could not be read.

const istioRootNamespace = "istio-system"

// istioAuthorization judges the routes of Istio's gateway by its AuthorizationPolicies.
func (s *builder) istioAuthorization(routes []Route) {
	if s.AuthorizationPoliciesUnread != "" {
		for i := range routes {
			if routes[i].Unjudged != "" {
				routes[i].Unjudged = "served by " + s.Implementation.String() + ": its AuthorizationPolicies could not be read (" + s.AuthorizationPoliciesUnread + ")"
			}
		}
		return
	}
	s.Implementation.AuthorizationRead = true
	s.Implementation.Unjudged = ""
	gwNS, gwName, podLabels := s.istioGateway()
	var custom []unstructured.Unstructured
	var other []string
	for _, p := range s.AuthorizationPolicies {
		if !istioApplies(p, gwNS, gwName, podLabels) {
			continue
		}
		action, _, _ := unstructured.NestedString(p.Object, "spec", "action")
		if action == "CUSTOM" {
			custom = append(custom, p)
		} else {
			if action == "" {
				action = "ALLOW"
			}
			other = append(other, fmt.Sprintf("%s (%s)", kubeobj.Ref("AuthorizationPolicy", p.GetNamespace(), p.GetName()), action))
		}
	}
	for i := range routes {
		r := &routes[i]
		if r.Kind != "HTTPRoute" || r.Unjudged == "" {
			continue
		}
		r.Unjudged = ""
		spec, ok := s.httpRouteSpecOf(r.Namespace, r.Name)
		if ok && r.Index < len(spec.Rules) {
			// RequestRedirect is core Gateway API: the rule answers the redirect, no backend
			// (sigs.k8s.io/gateway-api apis/v1/httproute_types.go HTTPRouteFilter)
			r.Redirects = requestRedirect(spec.Rules[r.Index].Filters)
		}
		if len(other) > 0 {
			r.Unjudged = "served by Istio's gateway, to which " + strings.Join(other, ", ") + " applies: ALLOW, DENY and AUDIT policies are not modelled"
			continue
		}
		istioJudge(r, custom, s.istioListenerPorts(spec, r.Namespace))
	}
}

// istioJudge credits the route with the first CUSTOM policy that covers it, or says why it
// cannot be told (a policy that covers only some of its requests).
func istioJudge(r *Route, custom []unstructured.Unstructured, ports []string) {
	unsure := ""
	for _, p := range custom {
		how, partial := istioCovers(p, r.Hosts, ports)
		if how != "" {
			r.Middlewares = append(r.Middlewares, MiddlewareRef{Raw: kubeobj.Ref("AuthorizationPolicy", p.GetNamespace(), p.GetName()),
				Namespace: p.GetNamespace(), Name: p.GetName(), Found: true, Auth: how})
			return
		}
		if unsure == "" {
			unsure = partial
		}
	}
	if unsure != "" {
		r.AuthUnsure = unsure
		r.Unjudged = "served by Istio's gateway: " + unsure
	}
}

// istioGateway is the Gateway that provisioned the proxy's pods (their
// gateway.networking.k8s.io/gateway-name label) and the pods' labels.
func (s *builder) istioGateway() (ns, name string, podLabels map[string]string) {
	switch {
	case s.ProxyWorkload != nil:
		podLabels = s.ProxyWorkload.Spec.Template.Labels
	case len(s.ProxyPods) > 0:
		podLabels = s.ProxyPods[0].Labels
	}
	if s.ProxyService != nil {
		ns = s.ProxyService.Namespace
	}
	return ns, podLabels["gateway.networking.k8s.io/gateway-name"], podLabels
}

// istioApplies reports whether policy p applies to the gateway's pods.
func istioApplies(p unstructured.Unstructured, gwNS, gwName string, podLabels map[string]string) bool {
	refs, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetRefs")
	if ref, ok, _ := unstructured.NestedMap(p.Object, "spec", "targetRef"); ok {
		refs = append(refs, ref)
	}
	sel, hasSel, _ := unstructured.NestedStringMap(p.Object, "spec", "selector", "matchLabels")
	switch p.GetNamespace() {
	case gwNS:
	case istioRootNamespace:
		if len(refs) > 0 {
			return false
		}
	default:
		return false
	}
	if len(refs) > 0 {
		for _, x := range refs {
			ref, _ := x.(map[string]any)
			kind, _ := ref["kind"].(string)
			name, _ := ref["name"].(string)
			if kind == "Gateway" && name == gwName && gwName != "" {
				return true
			}
		}
		return false
	}
	if !hasSel || len(sel) == 0 {
		return true
	}
	return labels.SelectorFromSet(sel).Matches(labels.Set(podLabels))
}

// istioListenerPorts are the ports of the proxy Gateway's listeners the route attaches to (all
// of them when it names no section or port).
func (s *builder) istioListenerPorts(spec httpRouteSpec, routeNS string) []string {
	var out []string
	for _, ref := range spec.ParentRefs {
		ns := ref.Namespace
		if ns == "" {
			ns = routeNS
		}
		gw, ok := findObject(s.Gateways, ns, ref.Name)
		if !ok {
			continue
		}
		listeners, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
		for _, x := range listeners {
			l, _ := x.(map[string]any)
			name, _ := l["name"].(string)
			port := fmt.Sprint(l["port"]) // int64 from the API, float64 from a decoded manifest
			if (ref.SectionName != "" && ref.SectionName != name) || (ref.Port != 0 && strconv.Itoa(int(ref.Port)) != port) {
				continue
			}
			if !slices.Contains(out, port) {
				out = append(out, port)
			}
		}
	}
	return out
}

// istioCovers says how CUSTOM policy p authenticates every request to hosts on ports ("" when
// no rule of it does), or, when a rule matches only some of them, why it cannot be told.
func istioCovers(p unstructured.Unstructured, hosts, ports []string) (how, partial string) {
	provider, _, _ := unstructured.NestedString(p.Object, "spec", "provider", "name")
	rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "rules")
	for _, x := range rules {
		rule, _ := x.(map[string]any)
		tos, _ := rule["to"].([]any)
		_, hasFrom := rule["from"]
		_, hasWhen := rule["when"]
		if len(tos) == 0 {
			if !hasFrom && !hasWhen {
				return "Istio CUSTOM " + provider + " (ext_authz)", ""
			}
			partial = fmt.Sprintf("AuthorizationPolicy %s/%s (CUSTOM) matches only some sources or conditions", p.GetNamespace(), p.GetName())
			continue
		}
		for _, t := range tos {
			op, _, _ := unstructured.NestedMap(t.(map[string]any), "operation")
			if !istioOperationCovers(op, hosts, ports) {
				continue
			}
			extra := slices.DeleteFunc(opKeys(op), func(k string) bool { return k == "hosts" || k == "ports" })
			if hasFrom || hasWhen || len(extra) > 0 {
				partial = fmt.Sprintf("AuthorizationPolicy %s/%s (CUSTOM) matches only some of its requests (%s)", p.GetNamespace(), p.GetName(),
					strings.Join(append(extra, condKeys(hasFrom, hasWhen)...), ", "))
				continue
			}
			return "Istio CUSTOM " + provider + " (ext_authz)", ""
		}
	}
	return "", partial
}

func condKeys(from, when bool) []string {
	var out []string
	if from {
		out = append(out, "from")
	}
	if when {
		out = append(out, "when")
	}
	return out
}

func opKeys(op map[string]any) []string {
	out := make([]string, 0, len(op))
	for k := range op {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// istioOperationCovers: the operation's hosts cover every host and its ports every port (an
// unset field matches everything); other fields are judged by the caller.
func istioOperationCovers(op map[string]any, hosts, ports []string) bool {
	if hs, ok := op["hosts"].([]any); ok {
		if len(hosts) == 0 {
			return slices.ContainsFunc(hs, func(x any) bool { return x == "*" })
		}
		for _, h := range hosts {
			if !slices.ContainsFunc(hs, func(x any) bool { p, _ := x.(string); return istioHostMatches(p, h) }) {
				return false
			}
		}
	}
	if ps, ok := op["ports"].([]any); ok {
		if len(ports) == 0 {
			return false
		}
		for _, want := range ports {
			if !slices.ContainsFunc(ps, func(x any) bool { return fmt.Sprint(x) == want }) {
				return false
			}
		}
	}
	return true
}

// istioHostMatches is Istio's string match of a host: exact, "*" any, "*suffix", "prefix*"
// (istio/istio pilot/pkg/security/authz/matcher StringMatcher). A wildcard route host is
// covered only by a pattern that covers all its names.
func istioHostMatches(pattern, host string) bool {
	pattern, host = strings.ToLower(pattern), strings.ToLower(host)
	switch {
	case pattern == "*":
		return true
	case strings.HasPrefix(pattern, "*"):
		suffix := pattern[1:]
		if strings.HasPrefix(host, "*") {
			return strings.HasSuffix(host[1:], suffix)
		}
		return strings.HasSuffix(host, suffix)
	case strings.HasSuffix(pattern, "*"):
		return !strings.HasPrefix(host, "*") && strings.HasPrefix(host, pattern[:len(pattern)-1])
	}
	return pattern == host
}

// httpRouteSpecOf finds HTTPRoute ns/name's spec.
func (s *builder) httpRouteSpecOf(ns, name string) (httpRouteSpec, bool) {
	var spec httpRouteSpec
	hr, ok := findObject(s.HTTPRoutes, ns, name)
	if !ok {
		return spec, false
	}
	raw, _ := hr.Object["spec"].(map[string]any)
	return spec, raw != nil && runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec) == nil
}
