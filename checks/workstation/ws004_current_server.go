package workstation

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// resolvConfPaths are read, first found first, when systemd-resolved cannot be asked:
// systemd-resolved's list of upstream servers, then the classic file.
func resolvConfPaths() []string {
	return []string{"/run/systemd/resolve/resolv.conf", "/etc/resolv.conf"}
}

// currentServer (WS004, Linux): systemd-resolved asks one server of a link at a time and moves
// on only when it fails, so a link that lists the zone's servers may still be asking the
// network's own DNS, which answers the zone with the public address, until the connection comes
// up again. This check names each link's current server, and the link that wins the zone's
// queries when another one claims them with a routing domain.
func currentServer(s *session) engine.Check {
	return catalogue.Check("WS004", func(ctx context.Context) engine.Outcome {
		env := s.env
		if env.OS != ws.Linux {
			return engine.Outcome{Skip: "only ws.Linux's systemd-resolved keeps one current server per link; on " + string(env.OS) + " WS001 and WS003 tell it all"}
		}
		// Ask the zone first: systemd-resolved picks a link's current server at its first
		// query, so its state is only meaningful once a name went through it.
		zone := s.zoneLookup(ctx)
		cctx, cancel := context.WithTimeout(ctx, env.timeout())
		out, err := env.Commands.Run(cctx, "resolvectl", "status", "--no-pager")
		cancel()
		if ctx.Err() != nil {
			return engine.Outcome{Err: fmt.Errorf("resolvectl status: %w", ctx.Err())}
		}
		if err != nil {
			return fromResolvConf(env, zone, err)
		}
		links := ws.ParseResolvectlStatus(out)
		if len(links) == 0 {
			return engine.Outcome{Err: fmt.Errorf("resolvectl status printed nothing this version of the plugin can read: %q", firstLine(out))}
		}
		return judgeLinks(ctx, env, zone, links)
	})
}

func judgeLinks(ctx context.Context, env Env, zone lookupResult, links []ws.ResolvedLink) engine.Outcome {
	var ours, others []ws.ResolvedLink
	for _, l := range links {
		switch {
		case containsAny(env.Target.Servers, l.Servers...):
			ours = append(ours, l)
		case len(l.Servers) > 0:
			others = append(others, l)
		}
	}
	if len(ours) == 0 {
		return notConfigured(env, zone, "no link of systemd-resolved lists the zone's servers "+probe.JoinAddrsSep(env.Target.Servers, ", "),
			map[string]any{"links": linkSummaries(links)})
	}
	var findings []engine.Finding
	for _, l := range ours {
		findings = append(findings, judgeCurrent(ctx, env, l))
		if f, ok := judgeRouting(env, l, others); ok {
			findings = append(findings, f)
		}
	}
	return engine.Outcome{Findings: findings}
}

// judgeCurrent: the link's current server must be one of the zone's servers.
func judgeCurrent(ctx context.Context, env Env, l ws.ResolvedLink) engine.Finding {
	object, evidence := linkObject(l), linkEvidence(l)
	fallbacks := filterOut(l.Servers, env.Target.Servers)
	evidence["otherServers"] = probe.AddrStrings(fallbacks)
	switch {
	case !l.CurrentServer.IsValid():
		return engine.Finding{Code: "WS004-NO-CURRENT-SERVER",
			Severity: engine.SeverityWarn, Object: object, Evidence: evidence,
			Message:     object + " lists the zone's servers but has no current server: systemd-resolved has not sent it a query (is the link up, and is it the route for " + env.Target.Zone.String() + "?)",
			Remediation: remedy.Command("resolvectl", "query", env.ProbeName) + "\n" + remedy.Command(append([]string{"resolvectl", "status"}, linkArgs(l)...)...),
		}
	case !containsAny(env.Target.Servers, l.CurrentServer) && slices.Contains(listedBefore(l, env.Target.Servers), l.CurrentServer):
		before := listedBefore(l, env.Target.Servers)
		evidence["listedBefore"] = probe.AddrStrings(before)
		return engine.Finding{Code: "WS004-OTHER-SERVER",
			Severity: engine.SeverityFail, Object: object, Evidence: evidence,
			Message: fmt.Sprintf("%s lists %s before the zone's servers %s: systemd-resolved asks a link's servers in that order and stays on the first that answers, so %s gets the network's answers (the public address), and re-activating the connection starts from %s again. A server the profile itself lists (a manual DNS setting) comes before the ones added to it: move it after the zone's",
				object, probe.JoinAddrs(before), probe.JoinAddrsSep(env.Target.Servers, ", "), env.Target.Zone, l.CurrentServer),
			Remediation: reorderFor(ctx, env, l, before),
		}
	case !containsAny(env.Target.Servers, l.CurrentServer):
		return engine.Finding{Code: "WS004-OTHER-SERVER",
			Severity: engine.SeverityFail, Object: object, Evidence: evidence,
			// resolved moves on when a server gives no answer, SERVFAIL or REFUSED
			// (dns_transaction_process_reply in src/resolve/resolved-dns-transaction.c,
			// systemd-stable v252.31); proven on the real workstation for a stopped server and
			// for a zone DNS without the '.' block (refused-org-status.txt).
			Message: fmt.Sprintf("%s asks %s, not one of the zone's servers %s: systemd-resolved moved to it after the zone's servers failed a query (no answer, SERVFAIL, or REFUSED: a zone DNS without the '.' forward block refuses every name outside the zone, see doctor's LA303), and stays there until the connection comes up again, so %s gets the network's answers (the public address)",
				object, l.CurrentServer, probe.JoinAddrsSep(env.Target.Servers, ", "), env.Target.Zone.String()),
			Remediation: resetFor(ctx, env, l),
		}
	}
	msg := fmt.Sprintf("%s asks %s, one of the zone's servers", object, l.CurrentServer)
	if next := nextServers(l, env.Target.Servers); len(next) > 0 && !containsAny(env.Target.Servers, next[len(next)-1]) {
		evidence["nextServers"] = probe.AddrStrings(next)
		msg += fmt.Sprintf("; if it fails, resolved tries %s, and stays on the first that answers until the connection comes up again: once the zone's servers have failed, that is %s, which answers %s with the network's address (keep two DNS replicas and a PodDisruptionBudget)",
			probe.JoinAddrsSep(next, ", then "), next[len(next)-1], env.Target.Zone)
	}
	return engine.Finding{Code: "WS004-CURRENT-SERVER", Severity: engine.SeverityInfo, Object: object, Evidence: evidence, Message: msg}
}

// listedBefore are the link's servers before the first of the zone's. NetworkManager hands
// resolved a profile's own servers first, then DHCP's (recorded: static-first-status.txt).
func listedBefore(l ws.ResolvedLink, zone []netip.Addr) []netip.Addr {
	for i, s := range l.Servers {
		if containsAny(zone, s) {
			return l.Servers[:i]
		}
	}
	return nil
}

// nextServers are the servers systemd-resolved tries after the link's current one fails, in
// order, up to and including the first that is not one of the zone's: the next server of the
// link's list, wrapping around to the first after the last (link_next_dns_server in
// src/resolve/resolved-link.c, systemd-stable v252.31; recorded on the real workstation:
// moved-next-status.txt). None when the current server is not in the list.
func nextServers(l ws.ResolvedLink, zone []netip.Addr) []netip.Addr {
	at := slices.Index(l.Servers, l.CurrentServer)
	if at < 0 {
		return nil
	}
	var next []netip.Addr
	for i := 1; i < len(l.Servers); i++ {
		s := l.Servers[(at+i)%len(l.Servers)]
		next = append(next, s)
		if !containsAny(zone, s) {
			break
		}
	}
	return next
}

// judgeRouting: systemd-resolved sends a name to the links whose domain matches it best (most
// labels); "~." matches everything with zero labels, and a link without any domain gets names
// only as a default route. Another link matching the zone better than ours takes its queries.
func judgeRouting(env Env, ours ws.ResolvedLink, others []ws.ResolvedLink) (engine.Finding, bool) {
	object := linkObject(ours)
	has, n := ours.HasRoutingDomainFor(env.Target.Zone)
	for _, o := range others {
		ok, m := o.HasRoutingDomainFor(env.Target.Zone)
		if !ok {
			continue
		}
		ev := linkEvidence(ours)
		ev["competingLink"] = o.Name
		ev["competingDomains"] = o.Domains
		switch {
		case !has || m > n:
			return engine.Finding{Code: "WS004-OTHER-LINK-CLAIMS",
				Severity: engine.SeverityFail, Object: object, Evidence: ev,
				Message: fmt.Sprintf("%s claims %s with the domain(s) %s, which matches better than %s does: systemd-resolved sends the zone's names there, not to the zone's servers",
					linkObject(o), env.Target.Zone.String(), strings.Join(o.Domains, " "), object),
				Remediation: addRoutingDomain(env, ours),
			}, true
		case m == n:
			return engine.Finding{Code: "WS004-OTHER-LINK-TIES",
				Severity: engine.SeverityWarn, Object: object, Evidence: ev,
				Message: fmt.Sprintf("%s matches %s as well as %s does (%s): systemd-resolved asks both and takes the first positive answer, which may be the public address",
					linkObject(o), env.Target.Zone.String(), object, strings.Join(o.Domains, " ")),
				Remediation: addRoutingDomain(env, ours),
			}, true
		}
	}
	if !has {
		return engine.Finding{Code: "WS004-NO-ROUTING-DOMAIN",
			Severity: engine.SeverityInfo, Object: object, Evidence: linkEvidence(ours),
			Message:     object + " has no routing domain for " + env.Target.Zone.String() + ": it gets the zone's names as a default route only, so a VPN that claims every name (~.) would take them",
			Remediation: addRoutingDomain(env, ours),
		}, true
	}
	return engine.Finding{}, false
}

// notConfigured: no resolver of this machine is a zone server. That is a failure only when the
// zone does not resolve correctly anyway (something else, such as /etc/hosts, may answer it).
func notConfigured(env Env, zone lookupResult, why string, evidence map[string]any) engine.Outcome {
	if zone.resolvedCorrectly(env.Target.Answers) {
		return engine.Outcome{Findings: []engine.Finding{{Code: "WS004-ANSWERED-ELSEWHERE", Severity: engine.SeverityInfo, Object: "this machine", Evidence: evidence,
			Message: why + ", yet " + zone.name + " resolves to the node addresses: something else answers the zone here (the network's DNS, /etc/hosts)",
		}}}
	}
	return engine.Outcome{Findings: []engine.Finding{{Code: "WS004-NOT-CONFIGURED", Severity: engine.SeverityFail, Object: "this machine", Evidence: evidence,
		Message:     why + ": this machine is not set up to send " + env.Target.Zone.String() + " to them",
		Remediation: configureCommand(env),
	}}}
}

// fromResolvConf judges the resolv.conf nameserver list when resolvectl cannot be used. Without
// systemd-resolved, glibc asks the (first three) nameservers in order, the first one first.
func fromResolvConf(env Env, zone lookupResult, resolvectlErr error) engine.Outcome {
	var data []byte
	var path string
	var readErr error
	for _, p := range resolvConfPaths() {
		if data, readErr = env.ReadFile(p); readErr == nil {
			path = p
			break
		}
	}
	if path == "" {
		return engine.Outcome{Err: fmt.Errorf("cannot read the resolver's state: %v; and %s: %w", resolvectlErr, strings.Join(resolvConfPaths(), ", "), readErr)}
	}
	servers := ws.ParseResolvConf(data)
	object := path
	evidence := map[string]any{"file": path, "nameservers": probe.AddrStrings(servers), "resolvectl": resolvectlErr.Error()}
	pos := -1
	for i, a := range servers {
		if containsAny(env.Target.Servers, a) {
			pos = i
			break
		}
	}
	switch {
	case pos < 0:
		return notConfigured(env, zone, path+" lists none of the zone's servers "+probe.JoinAddrsSep(env.Target.Servers, ", "), evidence)
	case pos == 0:
		return engine.Outcome{Findings: []engine.Finding{{Code: "WS004-RESOLV-CONF-FIRST", Severity: engine.SeverityInfo, Object: object, Evidence: evidence,
			Message: fmt.Sprintf("%s lists %s first (resolvectl unavailable: %v): every name is asked of it first, the zone's and the others", path, servers[0], resolvectlErr),
		}}}
	}
	sev := engine.SeverityFail
	if zone.resolvedCorrectly(env.Target.Answers) {
		sev = engine.SeverityWarn
	}
	msg := fmt.Sprintf("%s lists %s before the zone's server %s: the first nameserver answers %s (with the public address) and the zone's servers are asked only when it fails", path, servers[0], servers[pos], env.Target.Zone.String())
	if pos >= 3 {
		msg += "; beyond the third nameserver, glibc never asks at all"
	}
	return engine.Outcome{Findings: []engine.Finding{{
		Code: "WS004-RESOLV-CONF-ORDER", Severity: sev, Object: object, Evidence: evidence, Message: msg,
		Remediation: configureCommand(env),
	}}}
}

// resetFor: forget the cache and re-activate the link's profile, named when nmcli knows it.
func resetFor(ctx context.Context, env Env, l ws.ResolvedLink) string {
	if l.Name == "Global" {
		return "resolvectl flush-caches\nsudo systemctl restart systemd-resolved   # the zone's servers are in resolved.conf (DNS=)"
	}
	return resetCommands(env, profileOf(ctx, env, l.Name))
}

// reorderFor moves servers listed before the zone's to the end of the profile's own list:
// nmcli applies "-ipv4.dns A +ipv4.dns A" in order, removing then appending.
func reorderFor(ctx context.Context, env Env, l ws.ResolvedLink, before []netip.Addr) string {
	if l.Name == "Global" {
		return "# list the zone's servers first in DNS= under [Resolve] in /etc/systemd/resolved.conf, then: sudo systemctl restart systemd-resolved"
	}
	profile := profileOf(ctx, env, l.Name)
	if profile == "" {
		profile = "<profile of " + l.Name + ">"
	}
	args := []string{"sudo", "nmcli", "connection", "modify", profile}
	for _, fam := range []struct {
		key string
		v4  bool
	}{{"ipv4.dns", true}, {"ipv6.dns", false}} {
		var addrs []netip.Addr
		for _, a := range before {
			if a.Is4() == fam.v4 {
				addrs = append(addrs, a)
			}
		}
		if len(addrs) > 0 {
			list := probe.JoinAddrsSep(addrs, ",")
			args = append(args, "-"+fam.key, list, "+"+fam.key, list)
		}
	}
	return remedy.Command(args...) + "\n" + remedy.Command("sudo", "nmcli", "connection", "up", profile)
}

func addRoutingDomain(env Env, l ws.ResolvedLink) string {
	if l.Name == "Global" {
		return remedy.Commentf("# add Domains=~%s under [Resolve] in /etc/systemd/resolved.conf, then: sudo systemctl restart systemd-resolved", env.Target.Zone.String())
	}
	profile := env.Connection
	if profile == "" {
		profile = "<profile of " + l.Name + ">"
	}
	return "sudo nmcli connection modify " + remedy.Quote(profile) + " +ipv4.dns-search " + remedy.Quote("~"+env.Target.Zone.String()) + "\nsudo nmcli connection up " + remedy.Quote(profile)
}

// profileOf asks NetworkManager which profile is active on device; "" when it cannot say.
func profileOf(ctx context.Context, env Env, device string) string {
	if env.Connection != "" {
		return env.Connection
	}
	ctx, cancel := context.WithTimeout(ctx, env.timeout())
	defer cancel()
	out, err := env.Commands.Run(ctx, "nmcli", "-g", "GENERAL.CONNECTION", "device", "show", device)
	if err != nil {
		return ""
	}
	// Any name is fine: remedy.Quote makes it one shell word.
	return strings.TrimSpace(firstLine(out))
}

func linkObject(l ws.ResolvedLink) string {
	if l.Name == "Global" {
		return "systemd-resolved global servers"
	}
	return "link " + l.Name
}

// linkArgs names the link for resolvectl: none for the global servers.
func linkArgs(l ws.ResolvedLink) []string {
	if l.Name == "Global" {
		return nil
	}
	return []string{l.Name}
}

func linkEvidence(l ws.ResolvedLink) map[string]any {
	ev := map[string]any{"link": l.Name, "servers": probe.AddrStrings(l.Servers), "domains": append([]string{}, l.Domains...)}
	if l.CurrentServer.IsValid() {
		ev["currentServer"] = l.CurrentServer.String()
	}
	if l.DefaultRoute != nil {
		ev["defaultRoute"] = *l.DefaultRoute
	}
	return ev
}

func linkSummaries(links []ws.ResolvedLink) []string {
	var out []string
	for _, l := range links {
		if len(l.Servers) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s", l.Name, probe.JoinAddrsSep(l.Servers, " ")))
	}
	return out
}

func firstLine(b []byte) string {
	s := string(b)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
