package netpath

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// SamePathAnswer is LA402: the LAN path (a node address) and the path this machine's own
// resolver gives (the VPN or public address) serve the same certificate and the same answer,
// so a workstation moving between the two sees one site. When there is no second path to
// compare (the system resolver gives no other address, or one side does not answer) the check
// is SKIP with the reason: nothing was compared, so nothing passed. The system resolver is asked
// when the run starts (Begin), beside the other probes: a resolver that stays silent for the
// name costs one probe timeout that overlaps the rest of the run instead of following it.
func SamePathAnswer(env *Env) engine.Check {
	c := catalogue.Check("LA402", func(ctx context.Context) engine.Outcome { return samePathAnswer(ctx, env) })
	c.Begin = func(ctx context.Context) { env.beginSystemLookup(ctx) }
	return c
}

func samePathAnswer(ctx context.Context, env *Env) engine.Outcome {
	p, targets, out, ok := httpsPath(env)
	if !ok {
		return out
	}
	nothingToCompare := func(msg string, ev map[string]any) engine.Outcome {
		return engine.Outcome{Skip: msg, Findings: []engine.Finding{{
			Code: "LA402-NO-SECOND-PATH", Severity: engine.SeverityInfo, Object: p.ProxyObject, Message: msg, Evidence: p.hostEvidence(ev),
		}}}
	}
	resolved, err := env.systemAddrs(ctx)
	if ctx.Err() != nil {
		return engine.Outcome{Err: netInterrupted(ctx)}
	}
	if err != nil || len(resolved) == 0 {
		why := "no address"
		if err != nil {
			why = err.Error()
		}
		return nothingToCompare(fmt.Sprintf("this machine's resolver gives no address for %s (%s): there is no second path to compare from here", p.Host.Name, why),
			map[string]any{"resolverError": why})
	}
	vpnReq, ok := systemPathRequest(p, targets, resolved)
	if !ok {
		return nothingToCompare(fmt.Sprintf("this machine's resolver already gives the LAN addresses for %s (%s): it uses the LAN DNS, so the other path cannot be reached by name from here",
			p.Host.Name, probe.JoinAddrs(resolved)), map[string]any{"resolved": probe.AddrStrings(resolved)})
	}

	lanReply, lanTarget := firstLANAnswer(ctx, env, p, targets)
	if lanReply == nil {
		if ctx.Err() != nil {
			return engine.Outcome{Err: netInterrupted(ctx)}
		}
		return nothingToCompare("no LAN address answered HTTPS (LA401 says why): nothing to compare the system resolver's path with",
			map[string]any{"resolved": probe.AddrStrings(resolved)})
	}
	vpnAddr := vpnReq.Addr
	vpnReply, err := env.Probes.Get(ctx, vpnReq)
	if ctx.Err() != nil {
		return engine.Outcome{Err: netInterrupted(ctx)}
	}
	ev := map[string]any{
		"lanAddress":    lanTarget.Addr.String(),
		"resolvedBy":    "system resolver",
		"resolved":      probe.AddrStrings(resolved),
		"systemAddress": vpnAddr.String(),
	}
	if err != nil {
		ev["error"] = err.Error()
		return nothingToCompare(fmt.Sprintf("the system resolver's address %s for %s did not answer HTTPS from this machine (%v): not connected to the VPN? Nothing to compare",
			vpnAddr.Addr(), p.Host.Name, err), ev)
	}
	ev["lan"] = httpsEvidence(lanReply)
	ev["system"] = httpsEvidence(vpnReply)
	return engine.Outcome{Findings: comparePaths(p, pathAnswer{lanTarget.Addr, lanReply}, pathAnswer{vpnAddr, vpnReply}, ev)}
}

// systemPathRequest is the HTTPS request to the system resolver's path: its first address that
// is not a LAN address, on the LAN's port (false: it gives only LAN addresses).
func systemPathRequest(p *Path, targets []Target, resolved []netip.Addr) (probe.HTTPSRequest, bool) {
	lan := targetAddrs(targets)
	other := slices.DeleteFunc(slices.Clone(resolved), func(a netip.Addr) bool { return slices.Contains(lan, a) })
	if len(other) == 0 || len(targets) == 0 {
		return probe.HTTPSRequest{}, false
	}
	return probe.HTTPSRequest{Addr: netip.AddrPortFrom(other[0], targets[0].Addr.Port()), Host: p.Host.Name}, true
}

// pathAnswer is what one path's address answered over HTTPS.
type pathAnswer struct {
	addr  netip.AddrPort
	reply *probe.HTTPSReply
}

// comparePaths says whether the LAN path and the system resolver's path serve the same
// certificate and the same answer, with the commands that compare them where they differ.
func comparePaths(p *Path, lan, system pathAnswer, ev map[string]any) []engine.Finding {
	var findings []engine.Finding
	warn := func(code, msg, fix string) {
		findings = append(findings, engine.Finding{Code: code, Severity: engine.SeverityWarn, Object: p.ProxyObject, Message: msg, Evidence: p.hostEvidence(ev), Remediation: fix})
	}
	host := p.Host.Name
	if lan.reply.TLS.SHA256 != system.reply.TLS.SHA256 {
		warn("LA402-CERT-DIFFERS", fmt.Sprintf("the LAN path (%s) serves a certificate for %s other than the system resolver's path (%s): %s (%s) versus %s (%s)",
			lan.addr.Addr(), host, system.addr.Addr(), lan.reply.TLS.Subject, lan.reply.TLS.SHA256, system.reply.TLS.Subject, system.reply.TLS.SHA256),
			"# both paths should end at the same proxy with the same TLS secret; compare them:\n"+
				remedy.Command("openssl", "s_client", "-connect", lan.addr.String(), "-servername", host)+" </dev/null | openssl x509 -noout -fingerprint -sha256\n"+
				remedy.Command("openssl", "s_client", "-connect", system.addr.String(), "-servername", host)+" </dev/null | openssl x509 -noout -fingerprint -sha256")
	}
	if lan.reply.Status != system.reply.Status || lan.reply.Location != system.reply.Location {
		warn("LA402-ANSWER-DIFFERS", fmt.Sprintf("the LAN path (%s) answers %d %s, the system resolver's path (%s) answers %d %s: users see a different site depending on the path",
			lan.addr.Addr(), lan.reply.Status, lan.reply.Location, system.addr.Addr(), system.reply.Status, system.reply.Location),
			"# both paths should reach the same proxy and routes; compare:\n"+
				remedy.Command("curl", "-sk", "-o", "/dev/null", "-w", `%{http_code} %{redirect_url}\n`, "--resolve", fmt.Sprintf("%s:%d:%s", host, lan.addr.Port(), lan.addr.Addr()), "https://"+host+"/")+"\n"+
				remedy.Command("curl", "-sk", "-o", "/dev/null", "-w", `%{http_code} %{redirect_url}\n`, "https://"+host+"/"))
	}
	if len(findings) == 0 {
		findings = append(findings, engine.Finding{
			Code: "LA402-SAME", Severity: engine.SeverityInfo, Object: p.ProxyObject, Evidence: p.hostEvidence(ev),
			Message: fmt.Sprintf("the LAN path (%s) and the system resolver's path (%s) serve the same certificate (%s) and answer (%d)",
				lan.addr.Addr(), system.addr.Addr(), lan.reply.TLS.SHA256, lan.reply.Status),
		})
	}
	return findings
}

// firstLANAnswer asks the LAN addresses in order until one answers; dead ones cost nothing more
// once LA401 (or any probe) met them.
func firstLANAnswer(ctx context.Context, env *Env, p *Path, targets []Target) (*probe.HTTPSReply, Target) {
	for _, t := range targets {
		if r, err := env.Probes.Get(ctx, p.request(t)); err == nil {
			return r, t
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, Target{}
}
