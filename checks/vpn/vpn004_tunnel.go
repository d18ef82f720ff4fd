package vpn

import (
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// VPNTunnel is VPN004: the pod has its tun/tap interface up, and the client pool is known
// (the return path and the ladders need it).
func VPNTunnel(env *Env) engine.Check {
	return judged(env, "VPN004", facts.NeedTunnel|facts.NeedTargets, func(run *facts.Run) engine.Outcome {
		return perPod(run, func(p *facts.Pod) ([]engine.Finding, error) {
			if p.TunnelErr != nil {
				return nil, p.TunnelErr
			}
			return append(tunnelFindings(p), pushedRouteFindings(run, p)...), nil
		})
	})
}

func tunnelFindings(p *facts.Pod) []engine.Finding {
	obj, f := p.Object(), p.Tunnel
	if len(f.Tunnels) == 0 {
		return []engine.Finding{{Code: "VPN004-NO-TUNNEL", Severity: engine.SeverityFail, Object: obj,
			Message:     "no tun or tap interface in the pod: OpenVPN has not opened its tunnel, so nothing can be forwarded yet (it needs NET_ADMIN and /dev/net/tun)",
			Remediation: serverLogs(p)}}
	}
	var descr []string
	for _, ti := range f.Tunnels {
		d := ti.Name + " (" + ti.Kind + ")"
		var dSb40 strings.Builder
		for _, a := range ti.Addrs {
			dSb40.WriteString(" " + a.Prefix.String())
			if a.Peer.IsValid() {
				dSb40.WriteString(" peer " + a.Peer.String())
			}
		}
		d += dSb40.String()
		descr = append(descr, d)
	}
	ev := map[string]any{"interfaces": descr, "uplink": f.Uplink}
	if len(f.ConfigFrom) > 0 {
		ev["configFrom"] = f.ConfigFrom
	}
	if len(f.ConfigNotes) > 0 {
		ev["configNotes"] = f.ConfigNotes
	}
	if !f.IPTool {
		ev["note"] = "the image has no `ip`: addresses were inferred from the routing table"
	}
	var fs []engine.Finding
	if f.Pool.IsValid() {
		ev["pool"] = f.Pool.String()
		ev["poolFrom"] = f.PoolSource
		if len(f.Peers) > 0 {
			ev["peers"] = fmt.Sprint(f.Peers)
		}
		fs = append(fs, engine.Finding{Code: "VPN004-TUNNEL", Severity: engine.SeverityInfo, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("tunnel %s; clients use %s (from %s)", strings.Join(descr, ", "), f.Pool, f.PoolSource)})
	} else {
		fs = append(fs, engine.Finding{Code: "VPN004-POOL-UNKNOWN", Severity: engine.SeverityWarn, Object: obj, Evidence: ev,
			Message: fmt.Sprintf("tunnel %s, but the client pool could not be told (no readable OpenVPN configuration, no subnet or route on the tunnel): the return path cannot be matched to it", strings.Join(descr, ", "))})
	}
	// Only a server-mode configuration pushes options (static-key point-to-point cannot).
	if f.Config.Server.IsValid() || f.Config.PoolRange.IsValid() {
		if len(f.Config.PushDNS) > 0 {
			fs = append(fs, engine.Finding{Code: "VPN004-PUSHED-DNS", Severity: engine.SeverityInfo, Object: obj,
				Message: fmt.Sprintf("clients are told to use DNS %v (push dhcp-option DNS), search %v", f.Config.PushDNS, f.Config.PushDomain)})
		} else {
			fs = append(fs, engine.Finding{Code: "VPN004-NO-PUSHED-DNS", Severity: engine.SeverityInfo, Object: obj,
				Message: "the server pushes no DNS server: clients resolve cluster names only if their own resolver sends them to the cluster DNS"})
		}
	}
	return fs
}

// pushedRouteFindings judges whether a server tells its clients to send the pod and Service
// ranges into the tunnel.
func pushedRouteFindings(run *facts.Run, p *facts.Pod) []engine.Finding {
	cfg := p.Tunnel.Config
	targets := routeTargets(run.Targets)
	if !serverMode(cfg) || run.TargetsErr != nil || len(targets) == 0 {
		return nil
	}
	ev := map[string]any{"pushedRoutes": fmt.Sprint(cfg.PushRoutes), "configFrom": p.Tunnel.ConfigFrom}
	missing := unpushed(cfg, targets)
	if len(missing) == 0 {
		return []engine.Finding{{Code: "VPN004-PUSHED-ROUTES", Severity: engine.SeverityInfo, Object: p.Object(), Evidence: ev,
			Message: fmt.Sprintf("clients are told to route %v into the tunnel (push route), which covers %s", cfg.PushRoutes, targetList(targets))}}
	}
	var what []string
	for _, t := range missing {
		what = append(what, t.String())
	}
	return []engine.Finding{{Code: "VPN004-NO-PUSHED-ROUTE", Severity: engine.SeverityWarn, Object: p.Object(), Evidence: ev,
		Remediation: pushRoutesFix(run.Targets, missing),
		Message:     fmt.Sprintf("the server pushes no route to %s (pushed: %v): a client sends those packets by its own default route, never into the tunnel, unless its own configuration routes them", strings.Join(what, " nor "), cfg.PushRoutes)}}
}
