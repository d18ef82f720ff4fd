package checks

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// probeHost is the name the DNS and HTTPS probes ask for, and where it came from; every
// finding of LA301-LA403 carries both.
type probeHost struct {
	Name   string
	Source string
}

func (h probeHost) evidence(ev map[string]any) map[string]any {
	if ev == nil {
		ev = map[string]any{}
	}
	ev["probeHost"] = h.Name
	ev["probeHostSource"] = h.Source
	return ev
}

// middlewaresAnnotation lists the Traefik middlewares of an Ingress's router.
const middlewaresAnnotation = "traefik.ingress.kubernetes.io/router.middlewares"

// hostRule matches Traefik's Host(`a`, `b`) matcher (v2 accepts several names, v3 one).
var (
	hostRule  = regexp.MustCompile(`Host\(([^)]*)\)`)
	hostQuote = regexp.MustCompile("[`\"]([^`\"]+)[`\"]")
)

type routeHost struct {
	host, source  string
	authenticated bool
}

// chooseProbeHost takes --host; else a host of the proxy's routes inside the zone, preferring a
// route with a middleware (the forward-auth that answers 302), then the first name in order;
// else the zone apex.
func chooseProbeHost(env *Env) probeHost {
	if h := strings.TrimSuffix(strings.TrimSpace(env.Options.ProbeHost), "."); h != "" {
		return probeHost{Name: strings.ToLower(h), Source: "--host"}
	}
	zone := ""
	if env.Setup != nil {
		zone = strings.ToLower(strings.TrimSuffix(env.Setup.Zone, "."))
	}
	var found []routeHost
	if env.Setup != nil {
		for _, ir := range env.Setup.IngressRoutes {
			found = append(found, ingressRouteHosts(ir)...)
		}
		for _, ing := range env.Setup.Ingresses {
			auth := ing.Annotations[middlewaresAnnotation] != ""
			for _, rule := range ing.Spec.Rules {
				found = append(found, routeHost{host: rule.Host, authenticated: auth,
					source: fmt.Sprintf("Ingress %s/%s", ing.Namespace, ing.Name)})
			}
		}
	}
	var inZone []routeHost
	for _, r := range found {
		h := strings.ToLower(strings.TrimSuffix(r.host, "."))
		if zone == "" || strings.Contains(h, "*") || (h != zone && !strings.HasSuffix(h, "."+zone)) {
			continue
		}
		r.host = h
		inZone = append(inZone, r)
	}
	sort.SliceStable(inZone, func(i, j int) bool {
		if inZone[i].authenticated != inZone[j].authenticated {
			return inZone[i].authenticated
		}
		return inZone[i].host < inZone[j].host
	})
	if len(inZone) > 0 {
		r := inZone[0]
		src := r.source
		if r.authenticated {
			src += " (a route with a middleware)"
		}
		return probeHost{Name: r.host, Source: src}
	}
	if zone == "" {
		return probeHost{}
	}
	return probeHost{Name: zone, Source: "zone apex (no route of the proxy for the zone was found; name one with --host)"}
}

// ingressRouteHosts reads spec.routes[].match and .middlewares of a Traefik IngressRoute.
func ingressRouteHosts(ir unstructured.Unstructured) []routeHost {
	routes, _, _ := unstructured.NestedSlice(ir.Object, "spec", "routes")
	var out []routeHost
	for _, r := range routes {
		route, ok := r.(map[string]any)
		if !ok {
			continue
		}
		match, _ := route["match"].(string)
		mws, _ := route["middlewares"].([]any)
		for _, rule := range hostRule.FindAllStringSubmatch(match, -1) {
			for _, q := range hostQuote.FindAllStringSubmatch(rule[1], -1) {
				out = append(out, routeHost{host: q[1], authenticated: len(mws) > 0,
					source: fmt.Sprintf("IngressRoute %s/%s", ir.GetNamespace(), ir.GetName())})
			}
		}
	}
	return out
}
