//go:build lab

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEveryLabNodeIsReadyWithItsAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := lab.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		assert.True(t, ready, "node %s Ready", n.Name)
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				got[n.Name] = a.Address
			}
		}
	}
	for _, n := range lab.Nodes {
		assert.Equal(t, n.IP, got[n.Name], "InternalIP of %s", n.Name)
	}
	assert.Equal(t, []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}, lab.NodeIPs())
}

func TestKubectlReportsTheBuiltServerVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := lab.Kubectl(ctx, "version")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Server Version: v1.37.2")
}

func TestZoneDNSAnswersTheThreeNodeAddressesOnEveryNode(t *testing.T) {
	for _, server := range lab.NodeIPs() {
		for _, proto := range []string{"udp", "tcp"} {
			r, err := query(server, probeHost, dns.TypeA, proto)
			require.NoError(t, err, "%s over %s", server, proto)
			ips := aRecords(r)
			sort.Strings(ips)
			assert.Equal(t, lab.NodeIPs(), ips, "A %s @%s/%s", probeHost, server, proto)
			assert.True(t, r.Authoritative, "template answers are authoritative")
		}
	}
}

func TestDigAtNode2GivesThreeAddressesLikeTheSeed(t *testing.T) {
	out, err := exec.Command("dig", "+short", "+time=2", "+tries=1", "@10.0.10.12", probeHost).Output()
	require.NoError(t, err)
	lines := strings.Fields(string(out))
	sort.Strings(lines)
	assert.Equal(t, lab.NodeIPs(), lines)
}

func TestZoneDNSAnswersAAAAWithNoData(t *testing.T) {
	r, err := query("10.0.10.12", probeHost, dns.TypeAAAA, "udp")
	require.NoError(t, err)
	assert.Equal(t, dns.RcodeSuccess, r.Rcode)
	assert.Empty(t, r.Answer)
}

func TestZoneDNSForwardsOtherNamesToTheInternetResolver(t *testing.T) {
	r, err := query("10.0.10.11", "example.org", dns.TypeA, "udp")
	require.NoError(t, err)
	assert.Equal(t, []string{lab.InternetWeb()}, aRecords(r))
	r, err = query("10.0.10.11", "kubernetes.default.svc.cluster.local", dns.TypeA, "udp")
	require.NoError(t, err)
	assert.Equal(t, dns.RcodeNameError, r.Rcode, "dnsPolicy Default: cluster names do not leak")
}

func TestPublicDNSGivesTheVPNOnlyAddress(t *testing.T) {
	r, err := query(lab.InternetDNS(), probeHost, dns.TypeA, "udp")
	require.NoError(t, err)
	assert.Equal(t, []string{"198.51.100.80"}, aRecords(r))
}

func TestCurlResolveThroughEveryNodeGivesA302ToTheIdentityProvider(t *testing.T) {
	for _, ip := range lab.NodeIPs() {
		out, err := exec.Command("curl", "-s", "-o", "/dev/null", "-m", "5", "-w", "%{http_code} %{redirect_url}",
			"--cacert", lab.CAFile, "--resolve", probeHost+":443:"+ip, "https://"+probeHost+"/").Output()
		require.NoError(t, err, "curl via %s", ip)
		assert.Equal(t, "302 https://auth.example.com/oauth2/start?rd="+url.QueryEscape("https://"+probeHost+"/"), string(out), "via %s", ip)
	}
}

// Traefik picks a certificate by the SNI name among every certificate it holds, not by router
// (traefik v3.7.9 pkg/tls/certificate_store.go GetBestCertificate): a host no router matches
// still gets the apps wildcard that grafana's route loaded, and a 404; only a name no
// certificate covers gets Traefik's own self-signed default certificate.
func TestAnUnknownHostGetsTraefiksDefaultCertificate(t *testing.T) {
	resp, err := httpsVia("nothing.apps.example.com", "10.0.10.13", 5*time.Second)
	require.NoError(t, err, "the wildcard of another route covers the name")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no router matches")
	assert.Contains(t, resp.TLS.PeerCertificates[0].DNSNames, "*.apps.example.com")

	_, err = httpsVia("nothing.example.net", "10.0.10.13", 5*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate", "the default certificate is not valid for the host")
	conn, err := tls.Dial("tcp", "10.0.10.13:443", &tls.Config{ServerName: "nothing.example.net", InsecureSkipVerify: true})
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	assert.Equal(t, "TRAEFIK DEFAULT CERT", conn.ConnectionState().PeerCertificates[0].Subject.CommonName)
}

func TestExecIntoAPodRunsInsideItsNodeNamespace(t *testing.T) {
	for _, p := range runningPods(t, "traefik", "app=lan-dns") {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := lab.Kubectl(ctx, "exec", "-n", "traefik", p.Name, "--", "ip", "-br", "-4", "addr")
		cancel()
		require.NoError(t, err, out)
		assert.Contains(t, out, p.Status.PodIP, "pod %s on %s", p.Name, p.Spec.NodeName)
		node, err := lab.Node(p.Spec.NodeName)
		require.NoError(t, err)
		assert.Contains(t, out, node.IP)
	}
}

func TestEveryPodIPIsARealAddressInItsNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := lab.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	checked := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.HostNetwork {
			continue
		}
		node, err := lab.Node(p.Spec.NodeName)
		require.NoError(t, err)
		assert.True(t, netip.MustParsePrefix(node.PodCIDR).Contains(netip.MustParseAddr(p.Status.PodIP)),
			"pod %s/%s IP %s from its node's pod CIDR %s", p.Namespace, p.Name, p.Status.PodIP, node.PodCIDR)
		// A dedicated node's pod has its own namespace, the IP on its eth0 with the mask of the
		// node's pod CIDR, as the real ptp plugin sets it from host-local's range.
		ns, dev, want := node.Name, "pods0", p.Status.PodIP+"/32"
		if node.Dedicated {
			ns, dev = lab.PodNetNS(p.UID), "eth0"
			want = fmt.Sprintf("%s/%d", p.Status.PodIP, netip.MustParsePrefix(node.PodCIDR).Bits())
		}
		addrs := lab.MustExec(t, ns, "ip", "-4", "-br", "addr", "show", "dev", dev)
		assert.Contains(t, addrs, want, "pod %s/%s", p.Namespace, p.Name)
		checked++
	}
	assert.GreaterOrEqual(t, checked, 7, "coredns, traefik, 2 lan-dns, grafana, web, openvpn")
}

func TestTheWebPodAnswersOnItsPodIPFromAnotherNode(t *testing.T) {
	web := runningPods(t, "web", "app=web")[0]
	from := "node-1"
	if web.Spec.NodeName == from {
		from = "node-2"
	}
	out, err := httpFrom(from, "http://"+web.Status.PodIP+":5678/", 3*time.Second)
	require.NoError(t, err)
	assert.Contains(t, out, "hello from the web pod")
}

func TestTheClusterDNSVIPAnswersClusterNamesInsideNodes(t *testing.T) {
	out := lab.MustExec(t, "node-3", "dig", "+short", "+time=2", "+tries=1", "@"+lab.ClusterDNSIP(), "kube-dns.kube-system.svc.cluster.local")
	assert.Equal(t, lab.ClusterDNSIP(), strings.TrimSpace(out))
}

func TestNoLabNamespaceHasADefaultRoute(t *testing.T) {
	hosts := make([]string, 0, 3+len(lab.Nodes))
	hosts = append(hosts, lab.ControlPlane(), lab.Laptop(), lab.Internet())
	for _, n := range lab.Nodes {
		hosts = append(hosts, n.Name)
	}
	for _, h := range hosts {
		out := lab.MustExec(t, h, "ip", "-4", "route", "show", "default")
		assert.Empty(t, strings.TrimSpace(out), "default route in %s", h)
	}
}

func TestAConfigMapEditChangesWhatCoreDNSAnswers(t *testing.T) {
	lab.EditLanDNSCorefile(t, func(c string) string {
		return strings.Replace(c, `answer "{{ .Name }} 60 IN A 10.0.10.13"`+"\n", "", 1)
	})
	eventually(t, 10*time.Second, func() error {
		for _, server := range lab.NodeIPs() {
			r, err := query(server, probeHost, dns.TypeA, "udp")
			if err != nil {
				return err
			}
			if n := len(aRecords(r)); n != 2 {
				return fmt.Errorf("@%s: %d answers, want 2 after the edit", server, n)
			}
		}
		return nil
	})
}

func TestHTTPSAnswersWithTheLabCertificateThroughGo(t *testing.T) {
	resp, err := httpsVia(probeHost, "10.0.10.12", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Location"), "https://auth.example.com/oauth2/start?rd="))
}
