//go:build lab

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeproxy"
)

// These tests run against the real kube-proxy (v1.37.2, one per node namespace, iptables mode
// unless a test switches it): what it does to LAN traffic for the Services' externalIPs is
// what doctor's verdicts and advice must agree with.

// setLanDNSPolicy sets traefik/lan-dns's externalTrafficPolicy until cleanup and waits until
// every kube-proxy synced it.
func setLanDNSPolicy(t *testing.T, policy corev1.ServiceExternalTrafficPolicy) {
	t.Helper()
	patch := func(p corev1.ServiceExternalTrafficPolicy) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		body := fmt.Sprintf(`{"spec":{"externalTrafficPolicy":%q}}`, p)
		_, err := lab.Client.CoreV1().Services("traefik").Patch(ctx, "lan-dns", types.MergePatchType, []byte(body), metav1.PatchOptions{})
		return err
	}
	require.NoError(t, patch(policy))
	t.Cleanup(func() {
		assert.NoError(t, patch(corev1.ServiceExternalTrafficPolicyCluster))
		lab.WaitProxySynced(t)
	})
	lab.WaitProxySynced(t)
}

// lanDNSReplicas maps each seed node to the lan-dns pod on it ("" when none).
func lanDNSReplicas(t *testing.T) map[string]corev1.Pod {
	t.Helper()
	out := map[string]corev1.Pod{}
	for _, p := range runningPods(t, "traefik", "app=lan-dns") {
		out[p.Spec.NodeName] = p
	}
	return out
}

// nodeIP is a lab node's LAN address.
func nodeIP(t *testing.T, node string) string {
	t.Helper()
	n, err := lab.Node(node)
	require.NoError(t, err)
	return n.IP
}

// seedNodeWithout returns a seed node that runs no pod of the map, and one that does.
func seedNodeWithout(t *testing.T, replicas map[string]corev1.Pod) (without, with string) {
	t.Helper()
	for _, n := range lab.Nodes {
		if n.Dedicated {
			continue
		}
		if _, ok := replicas[n.Name]; ok {
			with = n.Name
		} else {
			without = n.Name
		}
	}
	require.NotEmpty(t, without, "lan-dns runs 2 replicas on 3 nodes: one node has none")
	require.NotEmpty(t, with)
	return without, with
}

// (a) externalTrafficPolicy Local: the node without a replica drops what it receives for the
// externalIP (kube-proxy's filter rule "has no local endpoints" -j DROP, pkg/proxy/iptables/
// proxier.go), LA103 names that node, and its printed fix makes the address answer again.
func TestRealKubeProxyDropsLocalPolicyTrafficOnANodeWithoutAReplica(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	without, with := seedNodeWithout(t, lanDNSReplicas(t))
	setLanDNSPolicy(t, corev1.ServiceExternalTrafficPolicyLocal)

	_, err := query(nodeIP(t, with), probeHost, dns.TypeA, "udp")
	require.NoError(t, err, "%s runs a replica: it answers", with)
	_, err = query(nodeIP(t, without), probeHost, dns.TypeA, "udp")
	require.Error(t, err, "%s has no replica: kube-proxy drops the query", without)
	filter := lab.MustExec(t, without, "iptables-save", "-t", "filter")
	assert.Regexp(t, `-d `+regexp.QuoteMeta(nodeIP(t, without))+`/32 .*"traefik/lan-dns:dns has no local endpoints".* -j DROP`, filter)

	r := doctor(t, "--only", "LA103")
	c := r.check(t, "LA103")
	require.Equal(t, "fail", c.Status, "%+v", c.Findings)
	var fix string
	for _, f := range c.Findings {
		if f.Code == "LA103-LOCAL-POLICY" {
			assert.Contains(t, f.Object, without, "doctor names the node that drops")
			assert.NotContains(t, f.Object, with)
			fix = f.Remediation
		}
	}
	require.NotEmpty(t, fix, "%+v", c.Findings)
	pasteKubectl(t, fix)
	lab.WaitProxySynced(t)
	_, err = query(nodeIP(t, without), probeHost, dns.TypeA, "udp")
	require.NoError(t, err, "after doctor's fix (Cluster) %s answers again", without)
	c = doctor(t, "--only", "LA103").check(t, "LA103")
	assert.Equal(t, "pass", c.Status, "%+v", c.Findings)
}

// coreDNSLogLine is CoreDNS's log plugin's default format: "[INFO] ip:port - id "A IN name udp
// ..." RCODE ...".
var coreDNSLogLine = regexp.MustCompile(`\[INFO\] ([0-9.]+):\d+ - \d+ "A IN (\S+) udp [^"]*" (\S+) `)

// seen is what one replica logged for a query name: the source address and the rcode.
type seen struct{ pod, source, rcode string }

// coreDNSSaw reads the replicas' logs: name -> what the replica that got it saw.
func coreDNSSaw(t *testing.T, replicas map[string]corev1.Pod) map[string]seen {
	t.Helper()
	out := map[string]seen{}
	for _, p := range replicas {
		log, err := lab.ContainerLog("traefik", p.Name, "coredns")
		require.NoError(t, err)
		for _, m := range coreDNSLogLine.FindAllStringSubmatch(log, -1) {
			out[strings.TrimSuffix(m[2], ".")] = seen{pod: p.Spec.NodeName, source: m[1], rcode: m[3]}
		}
	}
	return out
}

// askFromInternet asks name at server:53 from the internet namespace with a public source
// address (outside the LAN subnet), bounded, and returns dig's status ("" when no answer).
func askFromInternet(t *testing.T, server, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := lab.Exec(ctx, lab.Internet(), "dig", "+time=1", "+tries=1", "-b", lab.InternetDNS(), "@"+server, name, "A")
	if m := regexp.MustCompile(`status: (\w+)`).FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}

// (b) and (c): the source address real CoreDNS sees for a LAN query under each policy, with an
// acl that allows only the LAN subnet, and which replica answers successive queries.
//
// Cluster: kube-proxy marks external-IP traffic for masquerade; a query it sends to the
// replica on another node leaves through the LAN and gets the receiving node's LAN address,
// so the acl lets every source in, the internet's too (doctor's open-resolver advice says so).
// A query for the replica on the receiving node is not forwarded in this lab (the pod's
// address is the node's own: no POSTROUTING, no masquerade) and keeps its source; on a bridge
// CNI node it would leave through cni0 and get cni0's address (a pod-network address the LAN
// acl refuses). Successive queries to one address reach both replicas: kube-proxy picks per
// flow, each UDP query from a new source port being one.
//
// Local: the source is kept, the acl works: the LAN's queries answered, the internet's refused.
func TestCoreDNSSeesTheSourceRealKubeProxyLeavesUnderEachPolicy(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	// Registered first, so it runs last: after the Corefile is restored, the replicas restart
	// on it (the acl must not outlive the test until a reload).
	t.Cleanup(func() { lab.RestartPods(t, "traefik", "app=lan-dns", "lan-dns") })
	lab.EditLanDNSCorefile(t, func(c string) string {
		edited := strings.Replace(c, "template IN A {", "log\n    acl {\n        allow net 10.0.10.0/24\n        block\n    }\n    template IN A {", 1)
		require.NotEqual(t, c, edited, "the zone block has a template")
		return edited
	})
	lab.RestartPods(t, "traefik", "app=lan-dns", "lan-dns")
	replicas := lanDNSReplicas(t)
	_, same := seedNodeWithout(t, replicas)
	addr := nodeIP(t, same)
	require.Len(t, replicas, 2)

	const n = 16
	ask := func(phase string) (ws, inet []string) {
		for i := range n {
			name := fmt.Sprintf("%s-ws-%d.apps.example.com", phase, i)
			_, err := query(addr, name, dns.TypeA, "udp")
			require.NoError(t, err, name)
			ws = append(ws, name)
			name = fmt.Sprintf("%s-inet-%d.apps.example.com", phase, i)
			askFromInternet(t, addr, name)
			inet = append(inet, name)
		}
		return ws, inet
	}

	t.Run("cluster", func(t *testing.T) {
		ws, inet := ask("cluster")
		saw := coreDNSSaw(t, replicas)
		byPod := map[string]int{}
		for _, name := range ws {
			s, ok := saw[name]
			require.True(t, ok, "no replica logged %s", name)
			byPod[s.pod]++
			if s.pod == same {
				assert.Equal(t, lab.Workstation, s.source, "same-node replica (lab: pod address local to the node) keeps the source")
			} else {
				assert.Equal(t, addr, s.source, "the other node's replica sees the receiving node's LAN address (masquerade)")
			}
			assert.Equal(t, "NOERROR", s.rcode, "a LAN source, or the LAN node address it was masqueraded to")
		}
		assert.Len(t, byPod, 2, "successive queries from one workstation to %s reach both replicas: %v", addr, byPod)
		t.Logf("cluster policy, %d queries from %s to %s: replicas %v", n, lab.Workstation, addr, byPod)
		refused, allowed := 0, 0
		for _, name := range inet {
			s, ok := saw[name]
			require.True(t, ok, "no replica logged %s", name)
			if s.pod == same {
				assert.Equal(t, lab.InternetDNS(), s.source)
				assert.Equal(t, "REFUSED", s.rcode)
				refused++
			} else {
				assert.Equal(t, addr, s.source, "masqueraded to the receiving node's LAN address")
				assert.Equal(t, "NOERROR", s.rcode, "the LAN-only acl lets the internet in through masquerade")
				allowed++
			}
		}
		assert.Positive(t, allowed, "some internet queries pass the LAN-only acl under Cluster")
		t.Logf("cluster policy, %d queries from %s: %d refused (same-node replica), %d answered (masqueraded)", n, lab.InternetDNS(), refused, allowed)
		f := la104ACLFinding(t)
		assert.Equal(t, "LA104-MASQUERADED-SOURCE", f.Code, "%+v", f)
		assert.Contains(t, fmt.Sprint(f.Evidence["answered"]), addr+" ("+same+"'s own address", "the masquerade address the lab shows is named")
		assert.Contains(t, f.Remediation, `"externalTrafficPolicy":"Local"`)
	})

	t.Run("local", func(t *testing.T) {
		setLanDNSPolicy(t, corev1.ServiceExternalTrafficPolicyLocal)
		ws, inet := ask("local")
		saw := coreDNSSaw(t, replicas)
		for _, name := range ws {
			s := saw[name]
			assert.Equal(t, seen{pod: same, source: lab.Workstation, rcode: "NOERROR"}, s, name)
		}
		for _, name := range inet {
			s := saw[name]
			assert.Equal(t, seen{pod: same, source: lab.InternetDNS(), rcode: "REFUSED"}, s, name)
		}
		assert.Equal(t, "LA104-BY-SOURCE", la104ACLFinding(t).Code, "with Local the acl sees the workstation")
	})
}

// la104ACLFinding is doctor's LA104 finding about the zone's acl.
func la104ACLFinding(t *testing.T) finding {
	t.Helper()
	c := doctor(t, "--only", "LA104", "--no-helpers").check(t, "LA104")
	for _, f := range c.Findings {
		if f.Code == "LA104-BY-SOURCE" || f.Code == "LA104-MASQUERADED-SOURCE" {
			return f
		}
	}
	t.Fatalf("LA104 says nothing about the acl: %+v", c.Findings)
	return finding{}
}

// (d) the seed's "only the Service ports are captured": kube-proxy's rules match the Service's
// address and port, so the node's own services on its LAN address (ssh, an apiserver, the
// kubelet) still answer there, while 53 and 443 go to the Services' pods.
func TestRealKubeProxyCapturesOnlyTheServicePortsOfANodesAddress(t *testing.T) {
	const node = "node-2"
	addr := nodeIP(t, node)
	lab.StartListener(t, node, 22, "tcp")
	lab.StartListener(t, node, 6443, "tcp")
	for _, port := range []string{"22", "6443", "10250"} {
		require.NoError(t, connectFrom(lab.Laptop(), addr, port), "%s:%s reaches the node itself", addr, port)
	}
	nat := lab.MustExec(t, node, "iptables-save", "-t", "nat")
	for _, port := range []string{"22", "6443", "10250"} {
		assert.NotRegexp(t, `-d `+regexp.QuoteMeta(addr)+`/32 .*--dport `+port+` `, nat, "no rule captures %s:%s", addr, port)
	}
	assert.Regexp(t, `-d `+regexp.QuoteMeta(addr)+`/32 .*--dport 443 .*-j KUBE-EXT-`, nat)
	r, err := query(addr, probeHost, dns.TypeA, "udp")
	require.NoError(t, err)
	assert.NotEmpty(t, aRecords(r), "53 is the Service's: CoreDNS answers")
}

// (e) both modes that run here program the externalIPs, and the LAN reaches the Services
// through either.
func TestRealKubeProxyProgramsExternalIPsInIptablesAndNftablesModes(t *testing.T) {
	const node = "node-1"
	addr := nodeIP(t, node)
	nat := lab.MustExec(t, node, "iptables-save", "-t", "nat")
	assert.Regexp(t, `-d `+regexp.QuoteMeta(addr)+`/32 .*"traefik/traefik:websecure external IP"`, nat)
	assert.Regexp(t, `-d `+regexp.QuoteMeta(addr)+`/32 .*"traefik/lan-dns:dns external IP"`, nat)

	lab.KubeProxyMode(t, kubeproxy.NFTables)
	ruleset := lab.MustExec(t, node, "nft", "list", "table", "ip", "kube-proxy")
	assert.Contains(t, ruleset, addr+" . tcp . 443 : goto external-")
	assert.Contains(t, ruleset, addr+" . udp . 53 : goto external-")
	assert.NotContains(t, lab.MustExec(t, node, "iptables-save", "-t", "nat"), "KUBE-SERVICES", "nftables mode removed the iptables rules")
	r, err := query(addr, probeHost, dns.TypeA, "udp")
	require.NoError(t, err, "nftables mode: the zone answers on %s", addr)
	assert.NotEmpty(t, aRecords(r))
	resp, err := httpsVia(probeHost, addr, 10*time.Second)
	require.NoError(t, err, "nftables mode: HTTPS through %s", addr)
	_ = resp.Body.Close()
	mode := kubectl(t, "-n", "kube-system", "get", "configmap", "kube-proxy", "-o", "jsonpath={.data.config\\.conf}")
	assert.True(t, slices.Contains(strings.Fields(mode), "nftables"), "kube-proxy's ConfigMap says the mode that runs: %s", mode)
}

// (c) on doctor: a replica that runs an older Corefile (no reload) while the ConfigMap is
// right. kube-proxy sends each query to either replica, so one workstation asking one address
// gets both answers, and LA301 must blame the replica (restart), not the ConfigMap (edit). The
// printed fix, pasted, makes LA301 pass.
func TestLA301BlamesAStaleReplicaBehindTheRealKubeProxy(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	t.Cleanup(func() { lab.RestartPods(t, "traefik", "app=lan-dns", "lan-dns") })
	const third = `    answer "{{ .Name }} 60 IN A 10.0.10.13"` + "\n"
	// Both replicas start on a wrong Corefile without reload, then the ConfigMap is put right:
	// they keep the wrong one until restarted.
	lab.EditLanDNSCorefile(t, func(c string) string {
		edited := strings.ReplaceAll(strings.Replace(c, third, "", 1), "    reload\n", "")
		require.NotEqual(t, c, edited)
		return edited
	})
	lab.RestartPods(t, "traefik", "app=lan-dns", "lan-dns")
	lab.EditLanDNSCorefile(t, func(c string) string {
		return strings.Replace(c, `    answer "{{ .Name }} 60 IN A 10.0.10.12"`+"\n", `    answer "{{ .Name }} 60 IN A 10.0.10.12"`+"\n"+third, 1)
	})
	// One replica replaced: it runs the ConfigMap's (right) Corefile, the other the old one.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods := runningPods(t, "traefik", "app=lan-dns")
	require.NoError(t, lab.Client.CoreV1().Pods("traefik").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}))
	lab.WaitRollout(t, "traefik", "lan-dns")
	// The new replica answers once kube-proxy has programmed its endpoint: before that every
	// query reaches the old one (seen in a CI run: 16 of 16).
	lab.WaitProxySynced(t)

	addr := lab.NodeIPs()[0]
	var sets map[string]int
	// 16 queries, each a new flow: both replicas answer. Sampled at most 5 times, a second
	// apart, in case the endpoint change is still on its way to kube-proxy.
	for try := 0; try < 5 && len(sets) < 2; try++ {
		if try > 0 {
			time.Sleep(time.Second)
		}
		sets = map[string]int{}
		for range 16 {
			r, err := query(addr, probeHost, dns.TypeA, "udp")
			require.NoError(t, err)
			got := aRecords(r)
			slices.Sort(got)
			sets[strings.Join(got, ",")]++
		}
	}
	assert.Len(t, sets, 2, "one workstation, one address, 16 queries: both replicas' answers %v", sets)
	t.Logf("16 queries to %s: %v", addr, sets)

	c := doctor(t, "--only", "LA301").check(t, "LA301")
	require.Equal(t, "fail", c.Status, "%+v", c.Findings)
	var fix string
	for _, f := range c.Findings {
		if f.Code == "LA301-WRONG-ANSWER" {
			assert.Contains(t, f.Message, "a DNS replica runs an older one")
			fix = f.Remediation
		}
	}
	require.NotEmpty(t, fix, "%+v", c.Findings)
	assert.NotContains(t, fix, "edit configmap", "the ConfigMap is right")
	pasteKubectl(t, fix)
	lab.WaitRollout(t, "traefik", "lan-dns")
	c = doctor(t, "--only", "LA301").check(t, "LA301")
	assert.Equal(t, "pass", c.Status, "%+v", c.Findings)
}
