package proxyroute

import (
	"slices"
)

// The authentication server's own route: the forwardAuth of the proxy's routes asks a cluster
// Service (its address names it: Setup.redirectTargets reads it the same way), and a route
// whose backend is that Service is the login those routes redirect anonymous clients to
// (oauth2-proxy's /oauth2/start, Authelia's portal). It must answer anonymous clients, and a
// forwardAuth in front of it would send the login to itself: its audience is the identity
// provider's, not an application's (LA107 says so, as information).

// markAuthPortals sets AuthPortal on the served routes whose backend is the Service a
// forwardAuth of another route asks.
func (s *builder) markAuthPortals(routes []Route) {
	short, namespaces := s.serviceShortNames(), s.namespaceNames()
	services := map[string]string{} // "namespace/name" -> the Middleware that asks it
	for _, r := range routes {
		for _, m := range r.Middlewares {
			if m.Forward == nil {
				continue
			}
			u, err := ParseAuthURL(m.Forward.Address)
			if err != nil {
				continue
			}
			if ns, name, _, ok := serviceOf(normalHost(u.Hostname()), s.proxyNamespace(), short, namespaces); ok {
				if _, seen := services[ns+"/"+name]; !seen {
					services[ns+"/"+name] = m.Forward.Middleware
				}
			}
		}
	}
	for i := range routes {
		r := &routes[i]
		for key, mw := range services {
			if slices.ContainsFunc(r.Backends, func(b Backend) bool { return b.Kind == "Service" && b.Namespace+"/"+b.Name == key }) {
				r.AuthPortal = "Service " + key + ", which the forwardAuth of Middleware " + mw + " asks"
			}
		}
	}
}
