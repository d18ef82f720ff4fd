package workstation

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

var (
	// The zone's servers stand on loopback addresses (each on its own free port, see portMap);
	// the node addresses they answer are only data.
	serverIPs   = []string{"127.0.10.11", "127.0.10.12", "127.0.10.13"}
	nodeAddrs   = addrs("10.0.10.11", "10.0.10.12", "10.0.10.13")
	publicAddr  = addrs("203.0.113.10")
	outsideName = "kubernetes.io"
)

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

// lanDNS answers like the seed's CoreDNS: the zone with the node addresses, NODATA for AAAA,
// and outsideName through its forwarder.
func lanDNS() *probetest.Zone {
	return &probetest.Zone{Zone: "apps.example.com.", Addrs: nodeAddrs, TTL: 60,
		Outside: map[string][]netip.Addr{outsideName + ".": addrs("198.51.100.7")}}
}

// orgDNS is the network's own resolver: it answers the zone with the public (VPN) address.
func orgDNS() *probetest.Zone {
	return &probetest.Zone{Zone: "apps.example.com.", Addrs: publicAddr, TTL: 300,
		Outside: map[string][]netip.Addr{outsideName + ".": addrs("198.51.100.7")}}
}

// systemResolver is Go's own stub resolver (the one a CGO_ENABLED=0 build uses on Linux) with
// every query sent to server: the real resolution path, aimed at a DNS server on loopback.
func systemResolver(server netip.AddrPort) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server.String())
	}}
}

// portMap sends a query for server:53 to the loopback port its stand-in listens on.
type portMap struct {
	inner probe.DNS
	ports map[netip.Addr]netip.AddrPort
}

func (p portMap) Query(ctx context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error) {
	to, ok := p.ports[server.Addr()]
	if !ok {
		return nil, fmt.Errorf("test: no stand-in for %s", server)
	}
	return p.inner.Query(ctx, to, name, qtype, network)
}

// fakeCommands answers "name arg..." with canned output; anything else is not installed.
type fakeCommands map[string]fakeOutput

type fakeOutput struct {
	out string
	err error
}

func (f fakeCommands) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	key := strings.Join(append([]string{name}, args...), " ")
	r, ok := f[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, exec.ErrNotFound)
	}
	return []byte(r.out), r.err
}

func files(m map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := m[p]; ok {
			return []byte(s), nil
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
}

func statusWith(current string, servers string, domains string) string {
	return fmt.Sprintf(`Global
       Protocols: -LLMNR -mDNS -DNSOverTLS DNSSEC=no/unsupported

Link 2 (enp3s0)
    Current Scopes: DNS
         Protocols: +DefaultRoute -LLMNR -mDNS -DNSOverTLS DNSSEC=no/unsupported
Current DNS Server: %s
       DNS Servers: %s
        DNS Domain: %s
`, current, servers, domains)
}

const zoneServers = "127.0.10.11 127.0.10.12 127.0.10.13"

type world struct {
	system   *probetest.Zone // what the system resolver reaches
	servers  []dns.Handler   // the zone's servers, one per serverIPs entry (nil = blackhole)
	os       ws.OS
	commands fakeCommands
	files    map[string]string
}

func healthyWorld() world {
	return world{
		system:  lanDNS(),
		servers: []dns.Handler{lanDNS(), lanDNS(), lanDNS()},
		os:      ws.Linux,
		commands: fakeCommands{
			"resolvectl status --no-pager":                   {out: statusWith("127.0.10.11", zoneServers+" 192.168.1.1", "~apps.example.com lan")},
			"nmcli -g GENERAL.CONNECTION device show enp3s0": {out: "Wired connection 1\n"},
		},
	}
}

func (w world) env(t *testing.T) Env {
	t.Helper()
	ports := map[netip.Addr]netip.AddrPort{}
	var servers []string
	for i, h := range w.servers {
		ip := serverIPs[i]
		servers = append(servers, ip)
		if h == nil {
			ports[netip.MustParseAddr(ip)] = probetest.Blackhole(t, ip)
			continue
		}
		ports[netip.MustParseAddr(ip)] = probetest.StartDNS(t, ip, h)
	}
	tg, err := ws.NewTarget("apps.example.com", servers, probe.AddrStrings(nodeAddrs))
	require.NoError(t, err)
	return Env{
		Target:      tg,
		OS:          w.os,
		ProbeName:   "lanaccess-3f9a1c2e.apps.example.com",
		OutsideName: outsideName,
		DNSPort:     53,
		Timeout:     400 * time.Millisecond,
		Resolver:    systemResolver(probetest.StartDNS(t, "127.0.0.1", w.system)),
		DNS:         portMap{inner: &probe.DNSClient{Timeout: 400 * time.Millisecond}, ports: ports},
		Commands:    w.commands,
		ReadFile:    files(w.files),
	}
}

func run(t *testing.T, env Env) map[string]engine.Result {
	t.Helper()
	r := &engine.Runner{Checks: Checks(env), DefaultTimeout: 5 * time.Second}
	out := map[string]engine.Result{}
	for _, res := range r.Run(context.Background()) {
		assert.Empty(t, catalogue.Undeclared(res.ID, res.Findings), "%s emits findings without a declared code", res.ID)
		out[res.ID] = res
	}
	require.Len(t, out, 4)
	return out
}

func findingOf(t *testing.T, r engine.Result, severity engine.Severity) engine.Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Severity == severity {
			return f
		}
	}
	require.Failf(t, "no finding", "%s has no %s finding: %+v", r.ID, severity, r.Findings)
	return engine.Finding{}
}

func TestClientCheckOnAHealthyLinuxWorkstationEverythingPasses(t *testing.T) {
	res := run(t, healthyWorld().env(t))
	for id, r := range res {
		assert.Equal(t, engine.StatusPass, r.Status, "%s: %s %+v", id, r.Reason, r.Findings)
	}
	assert.Equal(t, []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}, res["WS001"].Findings[0].Evidence["got"])
	assert.Len(t, res["WS003"].Findings, 3, "one finding per server")
	cur := res["WS004"].Findings[0]
	assert.Equal(t, "link enp3s0", cur.Object)
	assert.Contains(t, cur.Message, "asks 127.0.10.11, one of the zone's servers")
	assert.Contains(t, cur.Message, "moves to 192.168.1.1", "the DHCP server the link falls back to is named")
}

func TestClientCheckFindsALinkThatMovedToTheNetworksDNS(t *testing.T) {
	w := healthyWorld()
	w.system = orgDNS()
	w.commands["resolvectl status --no-pager"] = fakeOutput{out: statusWith("192.168.1.1", zoneServers+" 192.168.1.1", "~apps.example.com")}
	res := run(t, w.env(t))

	assert.Equal(t, engine.StatusFail, res["WS001"].Status)
	f := findingOf(t, res["WS001"], engine.SeverityFail)
	assert.Contains(t, f.Message, "resolves to 203.0.113.10")
	assert.Equal(t, []string{"203.0.113.10"}, f.Evidence["unexpected"])

	assert.Equal(t, engine.StatusPass, res["WS003"].Status, "the zone's servers themselves are fine: the workstation is the problem")

	assert.Equal(t, engine.StatusFail, res["WS004"].Status)
	f = findingOf(t, res["WS004"], engine.SeverityFail)
	assert.Equal(t, "link enp3s0", f.Object)
	assert.Contains(t, f.Message, "asks 192.168.1.1, not one of the zone's servers")
	assert.Equal(t, "resolvectl flush-caches\nsudo nmcli connection up 'Wired connection 1'", f.Remediation,
		"the profile is the one NetworkManager has on the link")
}

func TestClientCheckQuotesAHostileProfileName(t *testing.T) {
	w := healthyWorld()
	w.system = orgDNS()
	w.commands["resolvectl status --no-pager"] = fakeOutput{out: statusWith("192.168.1.1", zoneServers+" 192.168.1.1", "~apps.example.com")}
	w.commands["nmcli -g GENERAL.CONNECTION device show enp3s0"] = fakeOutput{out: "it's \"$(touch pwned)\"\n"}
	f := findingOf(t, run(t, w.env(t))["WS004"], engine.SeverityFail)
	assert.Equal(t, "resolvectl flush-caches\nsudo nmcli connection up \"it's \\\"\\$(touch pwned)\\\"\"", f.Remediation,
		"any profile name is one quoted word, never a placeholder or a command substitution")
}

func TestClientCheckOnAnUnconfiguredWorkstation(t *testing.T) {
	w := healthyWorld()
	nx := orgDNS()
	nx.Zone = "other.example." // the network's DNS does not know the zone at all
	w.system = nx
	w.commands["resolvectl status --no-pager"] = fakeOutput{out: statusWith("192.168.1.1", "192.168.1.1", "lan")}
	res := run(t, w.env(t))

	f := findingOf(t, res["WS001"], engine.SeverityFail)
	assert.Contains(t, f.Message, "does not exist")
	assert.Equal(t, "kubectl lanaccess client-config --os linux --zone apps.example.com --dns-server 127.0.10.11,127.0.10.12,127.0.10.13 --answer 10.0.10.11,10.0.10.12,10.0.10.13", f.Remediation)

	f = findingOf(t, res["WS004"], engine.SeverityFail)
	assert.Equal(t, "this machine", f.Object)
	assert.Contains(t, f.Message, "no link of systemd-resolved lists the zone's servers")
	assert.Equal(t, []string{"enp3s0: 192.168.1.1"}, f.Evidence["links"])
}

func TestClientCheckAcceptsAZoneAnsweredBySomethingElse(t *testing.T) {
	w := healthyWorld()
	w.commands["resolvectl status --no-pager"] = fakeOutput{out: statusWith("192.168.1.1", "192.168.1.1", "lan")}
	res := run(t, w.env(t))
	assert.Equal(t, engine.StatusPass, res["WS001"].Status)
	assert.Equal(t, engine.StatusPass, res["WS004"].Status, "no link names the zone's servers, but the zone resolves right: not a failure")
	assert.Contains(t, res["WS004"].Findings[0].Message, "something else answers the zone here")
}

func TestClientCheckWhenTheZonesDNSDoesNotForward(t *testing.T) {
	w := healthyWorld()
	noForward := lanDNS()
	noForward.Outside = nil
	w.system = noForward
	res := run(t, w.env(t))
	assert.Equal(t, engine.StatusPass, res["WS001"].Status)
	f := findingOf(t, res["WS002"], engine.SeverityFail)
	assert.Equal(t, "name kubernetes.io", f.Object)
	assert.Contains(t, f.Message, "no longer resolve")
	assert.Contains(t, f.Remediation, "doctor --only LA303")
}

// everything answers every name with the node addresses: a template without a zone.
type answerEverything struct{}

func (answerEverything) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	if r.Question[0].Qtype == dns.TypeA {
		for _, a := range nodeAddrs {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: a.AsSlice()})
		}
	}
	_ = w.WriteMsg(m)
}

func TestClientCheckWhenTheZonesDNSAnswersEveryName(t *testing.T) {
	w := healthyWorld()
	w.system = nil
	env := w.env(t)
	env.Resolver = systemResolver(probetest.StartDNS(t, "127.0.0.1", answerEverything{}))
	res := run(t, env)
	f := findingOf(t, res["WS002"], engine.SeverityFail)
	assert.Contains(t, f.Message, "resolves to the node address(es)")
	assert.Contains(t, f.Remediation, "LA104")
}

func TestClientCheckFailsOnALeakedAAAA(t *testing.T) {
	w := healthyWorld()
	leak := lanDNS()
	leak.AAAA = addrs("2001:db8::10")
	w.system = leak
	res := run(t, w.env(t))
	f := findingOf(t, res["WS001"], engine.SeverityFail)
	assert.Equal(t, []string{"2001:db8::10"}, f.Evidence["unexpected"], "an AAAA the zone should not have sends IPv6 clients elsewhere")
}

func TestClientCheckWarnsOnAnOlderAddressList(t *testing.T) {
	w := healthyWorld()
	stale := lanDNS()
	stale.Addrs = nodeAddrs[:2]
	w.system = stale
	res := run(t, w.env(t))
	assert.Equal(t, engine.StatusWarn, res["WS001"].Status)
	assert.Equal(t, []string{"10.0.10.13"}, findingOf(t, res["WS001"], engine.SeverityWarn).Evidence["missing"])
}

func TestClientCheckNamesTheServerThatDoesNotAnswer(t *testing.T) {
	w := healthyWorld()
	w.servers[1] = nil
	start := time.Now()
	res := run(t, w.env(t))
	assert.Less(t, time.Since(start), 3*time.Second, "servers are asked at once: one dead server costs one timeout")
	assert.Equal(t, engine.StatusFail, res["WS003"].Status)
	require.Len(t, res["WS003"].Findings, 3, "no summary: the other servers answer")
	f := findingOf(t, res["WS003"], engine.SeverityFail)
	assert.Equal(t, "DNS server 127.0.10.12:53", f.Object)
}

func TestClientCheckSaysWhenNoServerAnswersAtAll(t *testing.T) {
	w := healthyWorld()
	w.os = ws.MacOS
	w.servers = []dns.Handler{nil, nil, nil}
	res := run(t, w.env(t))
	require.Len(t, res["WS003"].Findings, 4)
	summary := res["WS003"].Findings[3]
	assert.Equal(t, "zone apps.example.com", summary.Object)
	assert.Contains(t, summary.Message, "off-site")
	assert.Contains(t, summary.Remediation, "global on this OS; remove it")
	assert.Equal(t, engine.StatusSkip, res["WS004"].Status, "no per-link server on macOS")
}

func TestClientCheckReportsAServerThatIsNotTheZonesDNS(t *testing.T) {
	w := healthyWorld()
	w.servers[2] = orgDNS()
	res := run(t, w.env(t))
	f := findingOf(t, res["WS003"], engine.SeverityFail)
	assert.Equal(t, "DNS server 127.0.10.13:53", f.Object)
	assert.Contains(t, f.Message, "answers 203.0.113.10")
}

func TestClientCheckRoutingDomains(t *testing.T) {
	vpnLink := `
Link 5 (tun0)
    Current Scopes: DNS
         Protocols: +DefaultRoute -LLMNR -mDNS -DNSOverTLS DNSSEC=no/unsupported
Current DNS Server: 10.8.0.1
       DNS Servers: 10.8.0.1
        DNS Domain: %s
`
	for _, tc := range []struct {
		name, ours, theirs string
		status             engine.Status
		message            string
	}{
		{"a VPN claiming every name takes the zone from a link without a routing domain", "lan", "~.", engine.StatusFail, "claims apps.example.com with the domain(s) ~."},
		{"a VPN claiming a parent domain beats a link without the zone", "lan", "~example.com", engine.StatusFail, "matches better"},
		{"the zone's routing domain beats a VPN claiming every name", "~apps.example.com", "~.", engine.StatusPass, ""},
		{"two links with the zone share its queries", "~apps.example.com", "~apps.example.com", engine.StatusWarn, "asks both"},
		{"no routing domain and no rival is only worth a note", "lan", "corp.internal", engine.StatusPass, "no routing domain for apps.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := healthyWorld()
			w.commands["resolvectl status --no-pager"] = fakeOutput{out: statusWith("127.0.10.11", zoneServers, tc.ours) + fmt.Sprintf(vpnLink, tc.theirs)}
			res := run(t, w.env(t))
			assert.Equal(t, tc.status, res["WS004"].Status, "%+v", res["WS004"].Findings)
			if tc.message == "" {
				require.Len(t, res["WS004"].Findings, 1)
				return
			}
			var msgs []string
			for _, f := range res["WS004"].Findings {
				msgs = append(msgs, f.Message)
				if strings.Contains(f.Message, tc.message) {
					assert.Contains(t, f.Remediation, `+ipv4.dns-search '~apps.example.com'`)
				}
			}
			assert.Contains(t, strings.Join(msgs, "\n"), tc.message)
		})
	}
}

func TestClientCheckWithoutResolvectlReadsResolvConf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		status  engine.Status
		object  string
		message string
	}{
		{"the zone's server first is fine", map[string]string{"/etc/resolv.conf": "nameserver 127.0.10.11\nnameserver 192.168.1.1\n"},
			engine.StatusPass, "/etc/resolv.conf", "lists 127.0.10.11 first"},
		{"systemd-resolved's own list wins over /etc/resolv.conf", map[string]string{
			"/run/systemd/resolve/resolv.conf": "nameserver 127.0.10.12\n", "/etc/resolv.conf": "nameserver 127.0.0.53\n"},
			engine.StatusPass, "/run/systemd/resolve/resolv.conf", "lists 127.0.10.12 first"},
		{"the zone's server after another one only warns while the zone resolves", map[string]string{"/etc/resolv.conf": "nameserver 192.168.1.1\nnameserver 192.168.1.2\nnameserver 192.168.1.3\nnameserver 127.0.10.11\n"},
			engine.StatusWarn, "/etc/resolv.conf", "beyond the third nameserver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := healthyWorld()
			delete(w.commands, "resolvectl status --no-pager")
			w.files = tc.files
			res := run(t, w.env(t))
			r := res["WS004"]
			assert.Equal(t, tc.status, r.Status, "%+v", r.Findings)
			require.NotEmpty(t, r.Findings)
			assert.Equal(t, tc.object, r.Findings[0].Object)
			assert.Contains(t, r.Findings[0].Message, tc.message)
			assert.Contains(t, r.Findings[0].Evidence["resolvectl"], "executable file not found")
		})
	}

	t.Run("nothing readable is an error, not a verdict", func(t *testing.T) {
		w := healthyWorld()
		delete(w.commands, "resolvectl status --no-pager")
		res := run(t, w.env(t))
		assert.Equal(t, engine.StatusError, res["WS004"].Status)
		assert.Contains(t, res["WS004"].Reason, "/etc/resolv.conf")
	})
}

func TestClientCheckInterruptedIsAnErrorNotAFailure(t *testing.T) {
	env := healthyWorld().env(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range Checks(env)[:2] {
		o := c.Run(ctx)
		require.Error(t, o.Err, c.ID)
		assert.Empty(t, o.Findings, c.ID)
	}
}
