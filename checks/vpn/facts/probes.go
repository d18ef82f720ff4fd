package facts

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// podProbe is one way to test a hop from inside a pod with the tools its image has.
type podProbe struct {
	tool string
	cmd  []string
	read func(out string, code int, err error) (HopState, string)
}

// probeOutput is what a probe printed, lower-cased, stdout and stderr together.
func probeOutput(out string, err error) string {
	s := out
	if ee, ok := errors.AsType[*podexec.ExitError](err); ok {
		s += "\n" + ee.Stderr
	}
	return strings.ToLower(s)
}

func secs(d time.Duration) string {
	s := max(int(d.Seconds()), 1)
	return strconv.Itoa(s)
}

// bounded prefixes cmd with `timeout` when the image has it, for tools without a timeout flag.
func bounded(tb toolbox, limit time.Duration, cmd ...string) []string {
	if tb["timeout"] {
		return append([]string{"timeout", secs(limit)}, cmd...)
	}
	return cmd
}

func timedOut(code int, err error) bool {
	return code == 124 || code == 137 || errors.Is(err, context.DeadlineExceeded)
}

func pingProbe(addr netip.Addr, limit time.Duration) podProbe {
	return podProbe{tool: "ping", cmd: []string{"ping", "-c", "1", "-W", secs(limit), addr.String()},
		read: func(out string, _ int, err error) (HopState, string) {
			o := probeOutput(out, err)
			switch {
			case err == nil:
				return HopAnswered, "echo reply"
			case strings.Contains(o, "permission denied") || strings.Contains(o, "not permitted"):
				return HopUnmeasured, "ping needs CAP_NET_RAW in this container"
			}
			return HopSilent, "no echo reply within " + secs(limit) + " s"
		}}
}

// tcpProbes connect to addr:port: an accepted or a refused connection both prove the packet
// got there and back; only a timeout is silence.
func tcpProbes(tb toolbox, addr netip.Addr, port uint16, limit time.Duration) []podProbe {
	target := netip.AddrPortFrom(addr, port)
	read := func(out string, _ int, err error) (HopState, string) {
		o := probeOutput(out, err)
		switch {
		case err == nil:
			return HopAnswered, "connected to " + target.String()
		case strings.Contains(o, "refused"):
			return HopAnswered, "connection refused: the host answered"
		case strings.Contains(o, "invalid option") || strings.Contains(o, "unrecognized option") || strings.Contains(o, "usage:"):
			return HopUnmeasured, "this nc cannot do a connect-only test"
		case strings.Contains(o, "unreachable") || strings.Contains(o, "no route"):
			return HopSilent, "unreachable: " + firstLine(o)
		}
		return HopSilent, "no answer within " + secs(limit) + " s"
	}
	return []podProbe{
		{tool: "nc", cmd: []string{"nc", "-z", "-w", secs(limit), addr.String(), strconv.Itoa(int(port))}, read: read},
		{tool: "bash", cmd: bounded(tb, limit, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", addr, port)), read: read},
	}
}

// dnsReply reads the answer of dig, nslookup or host; any DNS answer (even NXDOMAIN) means the
// server answered.
func dnsReply(limit time.Duration) func(out string, code int, err error) (HopState, string) {
	return func(out string, code int, err error) (HopState, string) {
		o := probeOutput(out, err)
		switch {
		case strings.Contains(o, "status: "):
			st := o[strings.Index(o, "status: ")+8:]
			st, _, _ = strings.Cut(st, ",")
			return HopAnswered, strings.ToUpper(strings.TrimSpace(st))
		case strings.Contains(o, "nxdomain") || strings.Contains(o, "can't find") || strings.Contains(o, "not found: 3"):
			return HopAnswered, "NXDOMAIN"
		case strings.Contains(o, "servfail") || strings.Contains(o, "not found: 2"):
			return HopAnswered, "SERVFAIL"
		case strings.Contains(o, "refused"):
			return HopRefused, "refused (ICMP port unreachable or REFUSED): nothing serves DNS there, e.g. a Service without ready endpoints"
		case strings.Contains(o, "unreachable"):
			return HopSilent, "unreachable: the pod has no route to it (" + firstLine(o) + ")"
		case strings.Contains(o, "timed out") || strings.Contains(o, "no servers could be reached") || timedOut(code, err):
			return HopSilent, "no DNS answer within " + secs(limit) + " s"
		case err == nil && (strings.Contains(o, "has address") || strings.Contains(o, "address")):
			return HopAnswered, "NOERROR"
		}
		return HopSilent, "no DNS answer: " + firstLine(o)
	}
}

// tcpQueryScript sends a prebuilt A query over TCP with bash's /dev/tcp and counts the
// reply's bytes: the last resort for images with bash but no DNS tool. TCP, because bash
// writes a printf in several chunks, which over /dev/udp become several broken datagrams.
func tcpQueryScript(server netip.Addr, name string) string {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.Id = 0x4c41
	wire, _ := m.Pack()
	if len(wire) > math.MaxUint16 {
		return "" // one question cannot be this long
	}
	wire = append(binary.BigEndian.AppendUint16(nil, uint16(len(wire))), wire...) //nolint:gosec // bounded just above
	var esc strings.Builder
	for _, b := range wire {
		fmt.Fprintf(&esc, `\%03o`, b)
	}
	return fmt.Sprintf(`exec 3<>/dev/tcp/%s/53; printf '%s' >&3; dd bs=512 count=1 <&3 2>/dev/null | wc -c`, server, esc.String())
}

// dnsProbes ask server for name (A), with whatever DNS tool the image has.
func dnsProbes(tb toolbox, server netip.Addr, name string, limit time.Duration) []podProbe {
	probes := []podProbe{
		{tool: "dig", cmd: []string{"dig", "+time=" + secs(limit), "+tries=1", "@" + server.String(), name, "A"}, read: dnsReply(limit)},
		{tool: "nslookup", cmd: bounded(tb, limit, "nslookup", name, server.String()), read: dnsReply(limit)},
		{tool: "host", cmd: []string{"host", "-W", secs(limit), "-t", "A", name, server.String()}, read: dnsReply(limit)},
	}
	if tb["timeout"] && tb["dd"] && tb["wc"] {
		probes = append(probes, podProbe{tool: "bash", cmd: []string{"timeout", secs(limit), "bash", "-c", tcpQueryScript(server, name)},
			read: func(out string, _ int, err error) (HopState, string) {
				o := probeOutput(out, err)
				n, perr := strconv.Atoi(strings.TrimSpace(out))
				switch {
				case perr == nil && n >= 14: // length prefix and a DNS header
					return HopAnswered, fmt.Sprintf("a %d-byte DNS reply over TCP", n)
				case strings.Contains(o, "refused"):
					return HopRefused, "connection refused on 53/tcp: nothing serves DNS there"
				}
				return HopSilent, "no DNS answer over TCP within " + secs(limit) + " s"
			}})
	}
	return probes
}

// resolveProbes resolve name through the pod's own resolver (/etc/resolv.conf): only an
// address counts; NXDOMAIN here means the resolver asks a server that does not know the
// cluster's names.
func resolveProbes(tb toolbox, name string, limit time.Duration) []podProbe {
	resolved := func(out string, code int, err error) (HopState, string) {
		o := probeOutput(out, err)
		switch {
		case err == nil && (strings.Contains(o, "address") || len(strings.Fields(o)) >= 2) && !strings.Contains(o, "nxdomain") && !strings.Contains(o, "can't find"):
			return HopAnswered, "resolved: " + firstLine(out)
		case strings.Contains(o, "nxdomain") || strings.Contains(o, "can't find") || code == 2:
			return HopSilent, "the resolver did not resolve it (" + firstLine(o) + ")"
		case timedOut(code, err):
			return HopSilent, "the resolver gave no answer within " + secs(limit*3) + " s"
		}
		return HopSilent, "not resolved: " + firstLine(o)
	}
	// A resolver may try several servers and attempts: give it three hop times.
	return []podProbe{
		{tool: "getent", cmd: bounded(tb, limit*3, "getent", "hosts", name), read: resolved},
		{tool: "nslookup", cmd: bounded(tb, limit*3, "nslookup", name), read: resolved},
		{tool: "host", cmd: []string{"host", "-W", secs(limit), "-t", "A", name}, read: resolved},
	}
}

// runPodProbes tries probes in order with the tools the image has; "unmeasured" moves on to
// the next probe, any other state is the hop's result.
func (g *Gatherer) runPodProbes(ctx context.Context, m *podMemos, tb toolbox, hop, target string, limit time.Duration, probes []podProbe) HopResult {
	r := HopResult{Hop: hop, Target: target, State: HopUnmeasured}
	var tried []string
	for _, pr := range probes {
		if !tb[pr.tool] {
			continue
		}
		tried = append(tried, pr.tool)
		out, errOut, err := g.exec(ctx, m, pr.cmd, limit*3+5*time.Second)
		code, _ := podexec.ExitCode(err)
		if err != nil && code == 0 && !errors.Is(err, context.DeadlineExceeded) {
			r.Method, r.Detail = strings.Join(pr.cmd, " "), "the probe could not run: "+err.Error()
			continue
		}
		state, detail := pr.read(out+"\n"+errOut, code, err)
		r.Method, r.State, r.Detail = strings.Join(pr.cmd, " "), state, detail
		if state != HopUnmeasured {
			return r
		}
	}
	if len(tried) == 0 {
		var want []string
		for _, pr := range probes {
			want = append(want, pr.tool)
		}
		r.Detail = "the image has none of " + strings.Join(dedupe(want), ", ")
	}
	return r
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// publicProbes: a TCP connect to host:port (a name is resolved by the tool itself).
func publicProbes(tb toolbox, hostPort string, limit time.Duration) []podProbe {
	host, port, _ := net.SplitHostPort(hostPort)
	n, _ := strconv.ParseUint(port, 10, 16) // --public was validated: 1..65535
	if a, err := netip.ParseAddr(host); err == nil {
		return append(tcpProbes(tb, a, uint16(n), limit), pingProbe(a, limit))
	}
	read := tcpProbes(tb, netip.IPv4Unspecified(), uint16(n), limit)[0].read
	return []podProbe{
		{tool: "nc", cmd: []string{"nc", "-z", "-w", secs(limit), host, port}, read: read},
		{tool: "bash", cmd: bounded(tb, limit, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port)), read: read},
	}
}
