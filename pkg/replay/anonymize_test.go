package replay

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// procHex is an IPv4 address as /proc/net/tcp writes it.
func procHex(a netip.Addr) string {
	b := a.As4()
	raw := make([]byte, 4)
	binary.LittleEndian.PutUint32(raw, binary.BigEndian.Uint32(b[:]))
	return strings.ToUpper(hex.EncodeToString(raw))
}

func TestAnonymizeMapsEachNameHostAndAddressTheSameEverywhere(t *testing.T) {
	reply := new(dns.Msg)
	reply.SetQuestion("grafana.apps.corp-secret.net.", dns.TypeA)
	rr, err := dns.NewRR("grafana.apps.corp-secret.net. 30 IN A 192.168.7.21")
	require.NoError(t, err)
	reply.Answer = []dns.RR{rr}
	wire, err := reply.Pack()
	require.NoError(t, err)
	nodes := `{"kind":"NodeList","items":[{"metadata":{"name":"worker-amsterdam-1"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.7.21"}]}},` +
		`{"metadata":{"name":"worker-amsterdam-2"},"status":{"addresses":[{"type":"InternalIP","address":"192.168.7.22"}]}}]}`
	svc := `{"metadata":{"name":"payroll-dns","namespace":"finance"},"spec":{"externalIPs":["192.168.7.21"],"selector":{"app":"payroll-dns"}},"podCIDR":"10.244.3.0/24"}`
	b := &Bundle{
		Format: Format, Version: Version, Command: "doctor",
		Cluster: Cluster{Context: "prod-finance", Server: "https://192.168.7.5:6443"},
		Flags:   []Flag{{Name: "zone", Value: "apps.corp-secret.net"}, {Name: "dns-service", Value: "finance/payroll-dns"}},
		API: []API{
			{Method: "GET", Path: "/api/v1/nodes", Status: 200, Body: json.RawMessage(nodes)},
			{Method: "GET", Path: "/api/v1/namespaces/finance/services/payroll-dns", Status: 200, Body: json.RawMessage(svc)},
		},
		Execs: []Exec{{Namespace: "finance", Pod: "payroll-dns-5df7c965cf-x2x9z", Command: []string{"cat", "/proc/net/udp"},
			Stdout: "  0: " + procHex(netip.MustParseAddr("192.168.7.21")) + ":0035 00000000:0000 07\n" +
				"1: 192.168.7.21/24 brd 192.168.7.255 on worker-amsterdam-1\n"}},
		DNS:   []DNS{{Server: "192.168.7.21:53", Name: "grafana.apps.corp-secret.net", Type: dns.TypeA, Network: "udp", Reply: wire}},
		HTTPS: []HTTPS{{Addr: "192.168.7.21:443", Host: "grafana.apps.corp-secret.net", Reply: json.RawMessage(`{"Status":302,"Location":"https://sso.corp-secret.net/auth"}`)}},
	}
	anon := Anonymize(b)
	raw, err := json.Marshal(anon)
	require.NoError(t, err)
	text := string(raw)
	for _, original := range []string{"worker-amsterdam-1", "worker-amsterdam-2", "payroll-dns", "finance", "corp-secret", "grafana", "sso",
		"prod-finance", "192.168.7.21", "192.168.7.22", "192.168.7.5", procHex(netip.MustParseAddr("192.168.7.21"))} {
		assert.NotContains(t, text, original)
	}
	assert.True(t, anon.Anonymized)

	// One stand-in per address, wherever it is written: JSON, a DNS answer, /proc/net, text.
	var list struct {
		Items []struct {
			Status struct {
				Addresses []struct{ Address string } `json:"addresses"`
			} `json:"status"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(anon.API[0].Body, &list))
	node1 := netip.MustParseAddr(list.Items[0].Status.Addresses[0].Address)
	node2 := netip.MustParseAddr(list.Items[1].Status.Addresses[0].Address)
	m := new(dns.Msg)
	require.NoError(t, m.Unpack(anon.DNS[0].Reply))
	assert.Equal(t, node1.String(), m.Answer[0].(*dns.A).A.String())
	assert.Equal(t, netip.AddrPortFrom(node1, 53).String(), anon.DNS[0].Server)
	assert.Contains(t, anon.Execs[0].Stdout, procHex(node1)+":0035")
	assert.Contains(t, anon.Execs[0].Stdout, node1.String()+"/24")
	assert.Contains(t, string(anon.API[1].Body), node1.String())

	// Prefixes are kept: both nodes stay in one /24 of 192.168/16, the pod network stays a network.
	assert.True(t, netip.MustParsePrefix("192.168.0.0/16").Contains(node1))
	p1, _ := node1.Prefix(24)
	assert.True(t, p1.Contains(node2), "%s and %s share their /24", node1, node2)
	assert.NotEqual(t, node1, node2)
	assert.Regexp(t, `"podCIDR":"10\.\d+\.\d+\.0/24"`, string(anon.API[1].Body))

	// Names: the same stand-in for the namespace in the path, the body, the flags, the exec;
	// the zone's names stay in one (renamed) zone; the pod keeps its generated suffix.
	var s struct {
		Metadata struct{ Name, Namespace string } `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(anon.API[1].Body, &s))
	assert.Equal(t, "/api/v1/namespaces/"+s.Metadata.Namespace+"/services/"+s.Metadata.Name, anon.API[1].Path)
	assert.Contains(t, anon.Flags, Flag{Name: "dns-service", Value: s.Metadata.Namespace + "/" + s.Metadata.Name})
	assert.Equal(t, s.Metadata.Name+"-5df7c965cf-x2x9z", anon.Execs[0].Pod)
	zone := strings.TrimPrefix(anon.Flags[0].Value, "")
	assert.True(t, strings.HasSuffix(anon.DNS[0].Name, "."+zone), "%s in %s", anon.DNS[0].Name, zone)
	assert.True(t, strings.HasSuffix(zone, ".net"))
	assert.Equal(t, anon.DNS[0].Name+".", m.Question[0].Name)
	assert.Equal(t, anon.DNS[0].Name, anon.HTTPS[0].Host)
}

func TestAnonymizeKeepsWhatTheChecksRecognise(t *testing.T) {
	body := `{"metadata":{"name":"traefik","namespace":"kube-system"},"spec":{"containers":[{"image":"traefik:v3.3"}]},"addr":"127.0.0.1","mask":"255.255.255.0"}`
	b := &Bundle{Format: Format, Version: Version, API: []API{{Method: "GET", Path: "/apis/apps/v1/namespaces/kube-system/deployments/traefik", Status: 200, Body: json.RawMessage(body)}}}
	anon := Anonymize(b)
	assert.JSONEq(t, body, string(anon.API[0].Body))
	assert.Equal(t, b.API[0].Path, anon.API[0].Path)
}

// vpn-trace --from-client's prober calls: the addresses in their arguments and answers, and the
// routing table's hexadecimal, map as everywhere else; a route's destination stays a network
// under its mask.
func TestAnonymizeMapsTheProberCallsAndTheRoutingTable(t *testing.T) {
	table := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth0\t00000000\t" + procHex(netip.MustParseAddr("192.168.7.1")) + "\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
		"eth0\t" + procHex(netip.MustParseAddr("192.168.7.0")) + "\t00000000\t0001\t0\t0\t0\t" + procHex(netip.MustParseAddr("255.255.255.0")) + "\t0\t0\t0\n"
	b := &Bundle{Format: Format, Version: Version, Command: "vpn-trace",
		HTTPS: []HTTPS{{Addr: "192.168.7.21:443", Host: "vpn.corp-secret.net", Reply: json.RawMessage(`{"Status":200}`)}},
		Calls: []Call{
			{Method: "prober.LocalAddrs", Result: json.RawMessage(`["192.168.7.21","10.8.0.6"]`)},
			{Method: "prober.RoutingTable", Result: mustJSON(t, table)},
			{Method: "prober.Resolve", Args: json.RawMessage(`{"name":"vpn.corp-secret.net"}`), Result: json.RawMessage(`["192.168.7.21"]`)},
		}}
	anon := Anonymize(b)
	raw, err := json.Marshal(anon)
	require.NoError(t, err)
	for _, original := range []string{"192.168.7.21", "10.8.0.6", "corp-secret", procHex(netip.MustParseAddr("192.168.7.1")), procHex(netip.MustParseAddr("192.168.7.0"))} {
		assert.NotContains(t, string(raw), original)
	}
	var locals []string
	require.NoError(t, json.Unmarshal(anon.Calls[0].Result, &locals))
	var resolved []string
	require.NoError(t, json.Unmarshal(anon.Calls[2].Result, &resolved))
	assert.Equal(t, locals[0], resolved[0], "one stand-in per address")
	var mapped string
	require.NoError(t, json.Unmarshal(anon.Calls[1].Result, &mapped))
	lines := strings.Split(mapped, "\n")
	network := strings.Split(lines[2], "\t")[1]
	node := netip.MustParseAddr(locals[0]).As4()
	assert.Equal(t, procHex(netip.AddrFrom4([4]byte{node[0], node[1], node[2], 0})), network,
		"192.168.7.0/24 maps to the network of 192.168.7.21's stand-in")
	assert.Contains(t, lines[2], "\t"+procHex(netip.MustParseAddr("255.255.255.0"))+"\t", "masks are kept")
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

func TestAnErrnoReplaysAsTheSameErrnoByName(t *testing.T) {
	err := &net.OpError{Op: "dial", Net: "udp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}
	f := failureOf(err)
	assert.Equal(t, "errno", f.Kind)
	assert.Equal(t, "ENETUNREACH", f.What)
	back := f.Err()
	require.ErrorIs(t, back, syscall.ENETUNREACH)
	assert.Equal(t, err.Error(), back.Error())
}

// A connect that ran out of time replays as a timeout (the client ladder reads it so).
func TestADialTimeoutReplaysAsATimeout(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := (&net.Dialer{}).DialContext(ctx, "tcp", "127.0.0.1:9") // expired: nothing is sent
	require.Error(t, err)
	f := failureOf(err)
	assert.Equal(t, "deadline", f.Kind)
	var ne net.Error
	require.ErrorAs(t, f.Err(), &ne)
	assert.True(t, ne.Timeout())
}
