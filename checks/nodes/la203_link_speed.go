package nodes

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// LinkSpeed is LA203: the interfaces that carry our addresses negotiated the same speed, full
// duplex. One node on a 100 Mb/s card serves a tenth of the others' bandwidth to every client
// DNS or the proxy sends there, and LA403's latency does not show it (a handshake is a few
// small packets). Speed and duplex are what the kernel reports in /sys/class/net/IF (see
// noderead.LinkState); a virtual interface (veth, bridge, bond: no device behind it) reports a
// fixed or derived value, not a negotiated one, and is not compared.
func LinkSpeed(env *Env) engine.Check {
	return catalogue.Check("LA203", func(ctx context.Context) engine.Outcome { return linkSpeed(ctx, env) })
}

// Carrier is an interface of a node that carries some of our addresses.
type Carrier struct {
	Node, Link string
	Addrs      []netip.Addr
	State      noderead.LinkState
	// Unread says why the link's sysfs was not read ("" when it was).
	Unread string
}

func (c Carrier) name() string {
	return fmt.Sprintf("node %s's %s (%s)", c.Node, c.Link, addrsText(c.Addrs))
}

func addrsText(addrs []netip.Addr) string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return strings.Join(out, ", ")
}

func linkSpeed(ctx context.Context, env *Env) engine.Outcome {
	s := env.Setup
	if s == nil || (s.ProxyService == nil && s.DNSService == nil) {
		return engine.Outcome{Skip: "neither the proxy nor the DNS Service was found (name them with --proxy-service/--dns-service)"}
	}
	if ok, why := env.Reader.Available(); !ok {
		return engine.Outcome{Skip: "the nodes' links are not read (" + why + ")"}
	}
	placed := noderead.PlaceAddrs(ctx, env.Reader, s.Nodes, ourExternalIPs(s))
	o := JudgeLinks(Carriers(placed))
	if len(placed.Unread) == 0 {
		return o
	}
	var unread []string
	for _, name := range slices.Sorted(maps.Keys(placed.Unread)) {
		unread = append(unread, placed.Unread[name].Error())
	}
	if len(placed.Read) == 0 && o.Skip != "" {
		// Nothing was read: that, not the addresses, is why there is nothing to compare.
		o.Skip = "the nodes could not be read: " + strings.Join(unread, "; ")
		return o
	}
	o.Findings = append(o.Findings, engine.Finding{Code: "LA203-NOT-COMPARED", Severity: engine.SeverityInfo,
		Message: "some nodes could not be read, and their links are not compared: " + strings.Join(unread, "; ")})
	return o
}

// Carriers are the interfaces that carry the placed addresses, in address order.
func Carriers(placed noderead.NodeAddrs) []Carrier {
	var out []Carrier
	for _, a := range sortedPlaces(placed) {
		for _, o := range placed.Places[a].Owners {
			i := slices.IndexFunc(out, func(c Carrier) bool { return c.Node == o.Node && c.Link == o.Link })
			if i >= 0 {
				out[i].Addrs = append(out[i].Addrs, a)
				continue
			}
			c := Carrier{Node: o.Node, Link: o.Link, Addrs: []netip.Addr{a}}
			net := placed.Read[o.Node]
			l, found := net.Link(o.Link)
			switch {
			case o.Link == "":
				c.Unread = "the reader could not name the interface (no `ip` in its image)"
			case net.LinksErr != nil:
				c.Unread = net.LinksErr.Error()
			case !found || !l.Link.Read:
				c.Unread = "its /sys/class/net entry was not read"
			default:
				c.State = l.Link
			}
			out = append(out, c)
		}
	}
	return out
}

func sortedPlaces(placed noderead.NodeAddrs) []netip.Addr {
	out := make([]netip.Addr, 0, len(placed.Places))
	for a := range placed.Places {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

// JudgeLinks compares the NIC-backed carriers' speeds and flags the slower ones and half
// duplex; what cannot be compared is said, and fewer than two comparable links is a SKIP.
func JudgeLinks(carriers []Carrier) engine.Outcome {
	var findings []engine.Finding
	var compared []Carrier
	for _, c := range carriers {
		if f, ok := notComparable(c); ok {
			findings = append(findings, f)
			continue
		}
		compared = append(compared, c)
		if d, _ := c.State.Duplex(); d == "half" {
			findings = append(findings, engine.Finding{Code: "LA203-HALF-DUPLEX", Severity: engine.SeverityWarn, Object: c.name(),
				Message:  c.name() + " runs half duplex (" + c.State.Describe() + "): a duplex mismatch with the switch port, or a forced setting, drops and retransmits under load",
				Evidence: linkEvidence(c)})
		}
	}
	if len(compared) < 2 {
		why := "fewer than two interfaces carrying the addresses report a negotiated speed, so there is nothing to compare"
		if len(carriers) == 0 {
			why = "no node read carries the addresses (LA101 says more)"
		}
		if engine.HasSeverity(findings, engine.SeverityWarn) {
			return engine.Outcome{Findings: findings}
		}
		return engine.Outcome{Findings: findings, Skip: why}
	}
	fastest := 0
	for _, c := range compared {
		n, _ := c.State.Speed()
		fastest = max(fastest, n)
	}
	for _, c := range compared {
		n, _ := c.State.Speed()
		if n < fastest {
			findings = append(findings, engine.Finding{Code: "LA203-SLOW-LINK", Severity: engine.SeverityWarn, Object: c.name(),
				Message: fmt.Sprintf("%s negotiated %d Mb/s where the fastest carrier runs %d Mb/s: every client DNS sends to these addresses gets at most 1/%d of the bandwidth (latency, LA403, does not show it)",
					c.name(), n, fastest, max(1, fastest/max(n, 1))),
				Evidence:    linkEvidence(c),
				Remediation: remedy.Commentf("# check the cable, the switch port and the card of node %s (ethtool %s on the node shows what was negotiated); or take its address out of the Services and the zone", c.Node, c.Link)})
			continue
		}
		findings = append(findings, engine.Finding{Code: "LA203-SUMMARY", Severity: engine.SeverityInfo, Object: c.name(),
			Message: c.name() + ": " + c.State.Describe(), Evidence: linkEvidence(c)})
	}
	return engine.Outcome{Findings: findings}
}

// notComparable is the information finding for a carrier whose speed is not a NIC's
// negotiated one.
func notComparable(c Carrier) (engine.Finding, bool) {
	f := engine.Finding{Code: "LA203-NOT-COMPARED", Severity: engine.SeverityInfo, Object: c.name(), Evidence: linkEvidence(c)}
	switch _, known := c.State.Speed(); {
	case c.Unread != "":
		f.Message = c.name() + ": not read (" + c.Unread + ")"
	case !c.State.Device:
		f.Message = c.name() + " is a virtual interface (no device behind it: a veth, bridge or bond): what it reports (" + c.State.Describe() + ") is not a negotiated speed, so it is not compared"
	case !known:
		f.Message = c.name() + ": " + c.State.Describe() + ", so it is not compared (virtio and many VM NICs report no speed)"
	default:
		return engine.Finding{}, false
	}
	return f, true
}

func linkEvidence(c Carrier) map[string]any {
	ev := map[string]any{"node": c.Node, "interface": c.Link, "addresses": addrsText(c.Addrs)}
	if c.State.Read {
		ev["speed"], ev["duplex"], ev["operstate"], ev["device"] = c.State.SpeedRaw, c.State.DuplexRaw, c.State.OperState, c.State.Device
	}
	return ev
}
