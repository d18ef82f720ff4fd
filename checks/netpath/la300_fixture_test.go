package netpath

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// The network checks' tests stand three loopback addresses in for the three nodes of the seed
// (10.0.10.11-13): the Services' externalIPs are 127.0.0.11-13 and the probe Set redirects their
// ports 53 and 443 to real servers on free ports of the same address.
var lanNodeIPs = []string{"127.0.0.11", "127.0.0.12", "127.0.0.13"}

func lanNodeAddrs() []netip.Addr {
	out := make([]netip.Addr, len(lanNodeIPs))
	for i, ip := range lanNodeIPs {
		out[i] = netip.MustParseAddr(ip)
	}
	return out
}

const lanTestZone = "apps.example.com."

type netFixture struct {
	t        *testing.T
	setup    *kube.Setup
	opts     Options
	host     string // --host
	redirect map[netip.AddrPort]netip.AddrPort
	cfg      probe.Config
}

func newNetFixture(t *testing.T) *netFixture {
	t.Helper()
	nodes := make([]corev1.Node, 0, len(lanNodeIPs))
	for i, ip := range lanNodeIPs {
		nodes = append(nodes, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i+1)},
			Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}},
		})
	}
	dnsSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lan-dns", Name: "lan-dns"},
		Spec: corev1.ServiceSpec{ExternalIPs: lanNodeIPs, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
		}},
	}
	proxySvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "traefik", Name: "traefik"},
		Spec: corev1.ServiceSpec{ExternalIPs: lanNodeIPs, Ports: []corev1.ServicePort{
			{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP},
			{Name: "websecure", Port: 443, Protocol: corev1.ProtocolTCP},
		}},
	}
	corefileText := `apps.example.com:1053 {
    reload
    template IN A {
        answer "{{ .Name }} 60 IN A 127.0.0.11"
        answer "{{ .Name }} 60 IN A 127.0.0.12"
        answer "{{ .Name }} 60 IN A 127.0.0.13"
    }
    template ANY ANY {
        rcode NOERROR
    }
}
.:1053 {
    forward . /etc/resolv.conf
}
`
	grafana := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"namespace": "monitoring", "name": "grafana"},
		"spec": map[string]any{"routes": []any{map[string]any{
			"match":       "Host(`grafana.apps.example.com`)",
			"middlewares": []any{map[string]any{"name": "forward-auth"}},
		}}},
	}}
	return &netFixture{
		t: t,
		setup: &kube.Setup{
			DNSService:   dnsSvc,
			ProxyService: proxySvc,
			ConfigMap: &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: "lan-dns", Name: "lan-dns"},
				Data:       map[string]string{"Corefile": corefileText},
			},
			CorefileKey:   "Corefile",
			Zone:          zone.MustParse(lanTestZone),
			DNSWorkload:   &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "lan-dns", Name: "lan-dns"}},
			Nodes:         nodes,
			IngressRoutes: []unstructured.Unstructured{grafana},
		},
		redirect: map[netip.AddrPort]netip.AddrPort{},
		cfg:      probe.Config{Timeout: 2 * time.Second},
	}
}

// healthyLANZone answers like the seed's Corefile with the three loopback node addresses, and
// resolves example.org through its "forwarder".
func healthyLANZone() *probetest.Zone {
	return &probetest.Zone{
		Zone: lanTestZone, Addrs: lanNodeAddrs(), TTL: 60,
		Outside: map[string][]netip.Addr{"example.org.": {netip.MustParseAddr("192.0.2.80")}},
	}
}

// serveDNS stands a DNS server in for node i's port 53 (nil = the healthy zone).
func (f *netFixture) serveDNS(i int, z *probetest.Zone) {
	f.t.Helper()
	if z == nil {
		z = healthyLANZone()
	}
	f.redirect[netip.AddrPortFrom(netip.MustParseAddr(lanNodeIPs[i]), 53)] = probetest.StartDNS(f.t, lanNodeIPs[i], z)
}

// serveHTTPS stands an HTTPS server in for node i's port 443.
func (f *netFixture) serveHTTPS(i int, s probetest.HTTPSServer) {
	f.t.Helper()
	f.redirect[netip.AddrPortFrom(netip.MustParseAddr(lanNodeIPs[i]), 443)] = probetest.StartHTTPS(f.t, lanNodeIPs[i], s)
}

// blackhole makes node i's ports 53 and 443 read and never answer: its link is down.
func (f *netFixture) blackhole(i int) *probetest.Hole {
	f.t.Helper()
	hole := probetest.CountingBlackhole(f.t, lanNodeIPs[i])
	ip := netip.MustParseAddr(lanNodeIPs[i])
	f.redirect[netip.AddrPortFrom(ip, 53)] = hole.Addr
	f.redirect[netip.AddrPortFrom(ip, 443)] = hole.Addr
	return hole
}

func (f *netFixture) env() *Env {
	f.t.Helper()
	cfg := f.cfg
	redirect := f.redirect
	cfg.Redirect = func(a netip.AddrPort) netip.AddrPort {
		to, ok := redirect[a]
		if !ok {
			// Probes run on other goroutines: report, and dial the loopback address itself.
			f.t.Errorf("the test dialled %s, which no stand-in serves", a)
			return a
		}
		return to
	}
	set, err := probe.NewSet(cfg)
	require.NoError(f.t, err)
	f.setup.DeriveModels(f.host)
	return &Env{Path: PathFromSetup(f.setup), Options: f.opts, Probes: set}
}

func runNetCheck(t *testing.T, c engine.Check) (engine.Status, engine.Outcome) {
	t.Helper()
	o := c.Run(t.Context())
	st, _ := engine.StatusOf(o)
	assert.Empty(t, catalogue.Undeclared(c.ID, o.Findings), "%s emits findings without a declared code", c.ID)
	return st, o
}

// netFindings returns the findings of severity sev about object ("" = any object).
func netFindings(o engine.Outcome, sev engine.Severity, object string) []engine.Finding {
	var out []engine.Finding
	for _, f := range o.Findings {
		if f.Severity == sev && (object == "" || f.Object == object) {
			out = append(out, f)
		}
	}
	return out
}

func lanNode(i int) string { return fmt.Sprintf("node-%d (%s)", i+1, lanNodeIPs[i]) }

func mustRule(t *testing.T, s string) LocationRule {
	t.Helper()
	r, err := ParseLocationRule(s)
	require.NoError(t, err)
	return r
}
