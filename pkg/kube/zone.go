package kube

import (
	"net/netip"
	"slices"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

// ZoneAnswers are the A answers the zone's `template IN A` gives, read once from the parsed
// Corefile with corefile's own accessors: LA101 compares them with the Services' externalIPs,
// the DNS path checks show them as evidence.
type ZoneAnswers struct {
	// Known is false when the set cannot be read from the configuration: no readable Corefile,
	// no template IN A for the zone, or an answer that depends on the query.
	Known bool
	Why   string
	// Object names where they are written: "ConfigMap lan-dns/lan-dns (zone apps.example.com.)".
	Object string
	// Answers are the static A answers in Corefile order (their Line, Data, Addr and Err).
	Answers []corefile.Answer
}

// Addrs are the valid addresses of the answers, sorted, each once.
func (z ZoneAnswers) Addrs() []netip.Addr {
	var out []netip.Addr
	for _, a := range z.Answers {
		if a.Addr.IsValid() && !slices.Contains(out, a.Addr) {
			out = append(out, a.Addr)
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

// DeriveModels builds the models the checks read from what discovery read: the zone's
// answers, the proxy's routes and the probe host (host is --host, "" to choose one). Discover
// calls it; tests that build a Setup by hand call it too.
func (s *Setup) DeriveModels(host string) {
	s.parseCorefile()
	s.readZoneAnswers()
	s.readRouteModel()
	s.ProbeHost = chooseProbeHost(host, s.Zone, s.Routes)
	s.ProbeHost.Redirect = s.redirectTargets(s.ProbeHost)
}

// readZoneAnswers fills Setup.ZoneAnswers from the parsed Corefile.
func (s *Setup) readZoneAnswers() {
	z := ZoneAnswers{Object: "zone " + s.Zone}
	if s.ConfigMap != nil {
		z.Object = ConfigMapRef(s.ConfigMap)
		if s.Zone != "" {
			z.Object += " (zone " + s.Zone + ")"
		}
	}
	defer func() { s.ZoneAnswers = z }()
	if s.Corefile == nil {
		z.Why = "no readable Corefile"
		return
	}
	b := s.Corefile.ZoneBlockWithTemplateA(s.Zone)
	if b == nil {
		z.Why = "no server block answers A for the zone with a template"
		return
	}
	for _, t := range b.Templates {
		if !t.Matches("IN", "A") || t.CatchAll() {
			continue
		}
		for _, a := range t.Answers {
			if !a.Static {
				z.Why, z.Answers = "an answer depends on the query (.Match, .Remote...)", nil
				return
			}
			if a.Type == "A" {
				z.Answers = append(z.Answers, a)
			}
		}
	}
	z.Known = true
}
