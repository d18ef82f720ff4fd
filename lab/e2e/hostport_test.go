//go:build lab

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
)

// The hostPort form (issue 26): Traefik and lan-dns as DaemonSets mapping hostPorts 80/443 and
// 53 (UDP and TCP), the Services without externalIPs. The pods get namespaces of their own set
// up by the node's real CNI chain (Calico's conflist as install-cni renders it; its portmap
// plugin, containernetworking/plugins v1.10.0, runs as it is): the real portmap is the oracle
// for what reaches the node addresses, and doctor must agree with it on the healthy shape and
// on each broken one.
func TestHostPortFormPassesHealthyAndFailsEachBrokenShape(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	start := time.Now()
	lab.HostPortForm(t, labkit.HostPortShape{})
	t.Logf("hostPort form up in %s", time.Since(start).Round(time.Second))

	// The oracle first: portmap's chain is in the node's nat table and the node addresses
	// answer from the LAN (this test runs in the workstation's namespace, 10.0.10.1).
	nat := lab.MustExec(t, "node-1", "iptables", "-t", "nat", "-S", "CNI-HOSTPORT-DNAT")
	require.Contains(t, nat, "CNI-HOSTPORT-DNAT", "portmap's chain exists on node-1")
	t.Logf("node-1 CNI-HOSTPORT-DNAT:\n%s", nat)
	t.Cleanup(func() {
		if t.Failed() {
			dumpHostPortPods(t)
		}
	})
	for _, ip := range []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"} {
		eventually(t, 30*time.Second, func() error {
			resp, err := httpsVia(probeHost, ip, 3*time.Second)
			if err != nil {
				return err
			}
			if resp.StatusCode != 302 {
				return errorf("%s answered %d", ip, resp.StatusCode)
			}
			return nil
		})
		for _, proto := range []string{"udp", "tcp"} {
			r, err := query(ip, probeHost, dns.TypeA, proto)
			require.NoError(t, err, "%s %s", ip, proto)
			assert.ElementsMatch(t, []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}, aRecords(r))
		}
	}

	t.Run("healthy", func(t *testing.T) {
		r := doctor(t)
		t.Logf("doctor on the hostPort form: %s in %s", r.statuses(), r.Elapsed)
		for _, id := range []string{"LA101", "LA102", "LA103", "LA301", "LA302", "LA401"} {
			c := r.check(t, id)
			assert.Equal(t, "pass", c.Status, "%s: %+v", id, c.Findings)
		}
		la106 := r.check(t, "LA106")
		assert.Equal(t, "skip", la106.Status)
		assert.Contains(t, la106.Reason, "does not use spec.externalIPs (proxy: hostPort; DNS: hostPort)")
		for _, c := range r.Doc.Checks {
			assert.NotEqual(t, "fail", c.Status, "%s: %+v", c.ID, c.Findings)
		}
	})

	t.Run("proxy-not-on-node-3", func(t *testing.T) {
		lab.SetHostPortShape(t, labkit.HostPortShape{ProxySkip: "node-3"})
		_, err := httpsVia(probeHost, "10.0.10.13", 3*time.Second)
		require.Error(t, err, "portmap: nothing maps 443 on node-3")
		t.Logf("real: https to 10.0.10.13: %v", err)
		r := doctor(t, "--only", "LA101,LA401", "--no-helpers")
		la101 := r.check(t, "LA101")
		assert.Equal(t, "fail", la101.Status, "%+v", la101.Findings)
		assert.Contains(t, codes(la101), "LA101-PROXY-MISSING")
		assert.True(t, la101.mentions("fail", "10.0.10.13"), "%+v", la101.Findings)
		// LA401 probes where the proxy is reachable (node-1 and node-2 here), as it probes a
		// Service's externalIPs: both answer; the address the zone answers in vain is LA101's.
		assert.Equal(t, "pass", r.check(t, "LA401").Status)
	})

	t.Run("proxy-without-443", func(t *testing.T) {
		lab.SetHostPortShape(t, labkit.HostPortShape{ProxyPorts: []int32{80}})
		_, err := httpsVia(probeHost, "10.0.10.11", 3*time.Second)
		require.Error(t, err, "portmap: 443 not mapped")
		r := doctor(t, "--only", "LA102", "--no-helpers")
		la102 := r.check(t, "LA102")
		assert.Equal(t, "fail", la102.Status, "%+v", la102.Findings)
		assert.Contains(t, codes(la102), "LA102-HOSTPORT-MISSING")
	})

	t.Run("dns-udp-only", func(t *testing.T) {
		lab.SetHostPortShape(t, labkit.HostPortShape{DNSProtocols: []corev1.Protocol{corev1.ProtocolUDP}})
		_, err := query("10.0.10.11", probeHost, dns.TypeA, "tcp")
		require.Error(t, err, "portmap: 53/TCP not mapped")
		_, err = query("10.0.10.11", probeHost, dns.TypeA, "udp")
		require.NoError(t, err, "53/UDP still mapped")
		r := doctor(t, "--only", "LA103", "--no-helpers")
		la103 := r.check(t, "LA103")
		assert.Equal(t, "fail", la103.Status, "%+v", la103.Findings)
		assert.Contains(t, codes(la103), "LA103-HOSTPORT-MISSING")
		assert.True(t, la103.mentions("fail", "53/TCP"), "%+v", la103.Findings)
	})

	t.Run("dns-not-on-node-3", func(t *testing.T) {
		lab.SetHostPortShape(t, labkit.HostPortShape{DNSSkip: "node-3"})
		_, err := query("10.0.10.13", probeHost, dns.TypeA, "udp")
		require.Error(t, err, "portmap: nothing maps 53 on node-3")
		r := doctor(t, "--only", "LA101,LA301", "--no-helpers")
		la101 := r.check(t, "LA101")
		assert.Equal(t, "fail", la101.Status, "%+v", la101.Findings)
		assert.Contains(t, codes(la101), "LA101-DNS-MISSING")
		assert.Equal(t, "fail", r.check(t, "LA301").Status)
	})

	// client-config reads the addresses of the form in use.
	t.Run("client-config", func(t *testing.T) {
		lab.SetHostPortShape(t, labkit.HostPortShape{})
		r := runPlugin(t, "client-config", "--os", "linux")
		require.Equal(t, 0, r.Code, r.Stderr)
		out := r.Stdout
		for _, ip := range []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"} {
			assert.True(t, strings.Contains(out, ip), "client-config names %s:\n%s", ip, out)
		}
	})
}

// dumpHostPortPods logs what the form's pods saw (container logs, routes, cluster names), to
// tell a portmap fault from the pod's own paths.
func dumpHostPortPods(t *testing.T) {
	t.Helper()
	for _, sel := range []string{"lab.lanaccess.io/form=traefik-hostport", "lab.lanaccess.io/form=lan-dns-hostport"} {
		for _, p := range runningPods(t, "traefik", sel) {
			ns := lab.PodNetNS(p.UID)
			for _, c := range p.Spec.Containers {
				log, _ := lab.ContainerLog("traefik", p.Name, c.Name)
				if len(log) > 3000 {
					log = log[len(log)-3000:]
				}
				t.Logf("pod %s on %s (%s), container %s log tail:\n%s", p.Name, p.Spec.NodeName, ns, c.Name, log)
			}
			for _, argv := range [][]string{{"ip", "route"}, {"cat", "/etc/resolv.conf"}, {"getent", "hosts", "oauth2-proxy.auth.svc.cluster.local"},
				{"curl", "-s", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}", "http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth"}} {
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
				out, err := lab.Exec(ctx, ns, argv...)
				cancel()
				t.Logf("%s: %v: %s %v", ns, argv, out, err)
			}
		}
	}
	for _, argv := range [][]string{{"iptables", "-t", "nat", "-S", "POSTROUTING"}, {"ip", "route"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		out, err := lab.Exec(ctx, "node-1", argv...)
		cancel()
		t.Logf("node-1: %v: %s %v", argv, out, err)
	}
}
