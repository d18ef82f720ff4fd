//go:build lab

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// LA202 on the lab's nodes: `lab fault ipvs on` does what kube-proxy's IPVS proxier does with
// externalIPs (every node binds the externalIPs that are not its own on kube-ipvs0) and makes
// kube-proxy's ConfigMap say mode: ipvs. The symptom is real: node-1's kernel then holds
// node-2's address as a local one, so node-1 cannot reach a service node-2 runs on it.

// connectFrom opens a TCP connection from a node namespace (bash's /dev/tcp), bounded.
func connectFrom(ns, addr, port string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := lab.Exec(ctx, ns, "timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/"+addr+"/"+port)
	return err
}

func codes(c checkResult) []string {
	out := make([]string, 0, len(c.Findings))
	for _, f := range c.Findings {
		out = append(out, f.Code)
	}
	return out
}

func TestLA202FailsKubeProxysIPVSModeWithNodeAddressesAndPassesOnIptables(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	// node-2 serves something on its LAN address (etcd's client port, as a control-plane node would).
	lab.StartListener(t, "node-2", 2379, "tcp")
	require.NoError(t, connectFrom("node-1", "10.0.10.12", "2379"), "healthy: node-1 reaches node-2's service")

	r := doctor(t, "--only", "LA202")
	c := r.check(t, "LA202")
	require.Equal(t, "pass", c.Status, "%+v", c.Findings)
	assert.Contains(t, codes(c), "LA202-MODE")
	assert.NotContains(t, codes(c), "LA202-NODES-NOT-READ", "the nodes were read: %+v", c.Findings)

	t.Run("ipvs", func(t *testing.T) {
		lab.IPVSMode(t)
		route := lab.MustExec(t, "node-1", "ip", "route", "get", "10.0.10.12")
		assert.True(t, strings.HasPrefix(strings.TrimSpace(route), "local 10.0.10.12"), "node-1 routes node-2's address to itself: %s", route)
		err := connectFrom("node-1", "10.0.10.12", "2379")
		require.Error(t, err, "node-1's connection to node-2's service stays on node-1, where nothing listens")
		t.Logf("symptom: ip route get 10.0.10.12 in node-1 = %q; connect 10.0.10.12:2379 from node-1: %v", strings.TrimSpace(route), err)

		r := doctor(t, "--only", "LA202")
		c := r.check(t, "LA202")
		require.Equal(t, "fail", c.Status, "%+v", c.Findings)
		assert.Equal(t, 1, r.Code)
		assert.Contains(t, codes(c), "LA202-IPVS-NODE-ADDRESSES")
		assert.Contains(t, codes(c), "LA202-PEER-ADDRESS-LOCAL")
		var fix string
		for _, f := range c.Findings {
			if f.Code == "LA202-PEER-ADDRESS-LOCAL" && f.Object == "Node node-1" {
				assert.Contains(t, f.Message, "10.0.10.12 (node-2)")
			}
			if f.Code == "LA202-IPVS-NODE-ADDRESSES" {
				fix = f.Remediation
			}
		}
		require.NotEmpty(t, fix)

		// The printed fix, pasted: the API server takes the new configuration and doctor reads
		// iptables mode; the addresses already bound stay until kube-proxy's cleanup, as the fix
		// says, and the nodes still show them.
		pasteKubectl(t, fix)
		r = doctor(t, "--only", "LA202")
		c = r.check(t, "LA202")
		assert.NotContains(t, codes(c), "LA202-IPVS-NODE-ADDRESSES", "%+v", c.Findings)
		assert.Contains(t, codes(c), "LA202-PEER-ADDRESS-LOCAL", "kube-ipvs0 stays until the cleanup: %+v", c.Findings)
	})
	// The subtest's cleanup removed kube-ipvs0 (kube-proxy --cleanup's effect) and put iptables back.
	require.NoError(t, connectFrom("node-1", "10.0.10.12", "2379"), "fixed: node-1 reaches node-2's service again")
	r = doctor(t, "--only", "LA202")
	c = r.check(t, "LA202")
	assert.Equal(t, "pass", c.Status, "%+v", c.Findings)
	assert.Equal(t, 0, r.Code)
}

// LA101 on a node whose LAN address sits on a second interface: node-3 gets lan1 with
// 10.0.10.23 (its status.addresses keep 10.0.10.13 only), and the setup adds that address to
// both Services and the zone. kube-proxy captures traffic to any address the node owns, so this
// is fine, and LA101 says which node and interface carry it.
func TestLA101PassesAnAddressOnANodesSecondInterfaceAndNamesIt(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	const second = "10.0.10.23"
	lab.SecondNIC(t, "node-3", second+"/24")
	require.True(t, lab.Ping("laptop", second, 5*time.Second), "the LAN reaches node-3's second interface")
	ips := append(lab.NodeIPs(), second)
	lab.SetExternalIPs(t, "traefik", "traefik", ips...)
	lab.SetExternalIPs(t, "traefik", "lan-dns", ips...)
	lab.EditLanDNSCorefile(t, func(c string) string {
		return strings.Replace(c, `answer "{{ .Name }} 60 IN A 10.0.10.13"`,
			`answer "{{ .Name }} 60 IN A 10.0.10.13"`+"\n            answer \"{{ .Name }} 60 IN A "+second+"\"", 1)
	})

	r := doctor(t, "--only", "LA101")
	c := r.check(t, "LA101")
	require.Equal(t, "pass", c.Status, "%+v", c.Findings)
	var said string
	for _, f := range c.Findings {
		if f.Code == "LA101-NODE-ADDRESS" && f.Object == second {
			said = f.Message
		}
	}
	assert.Contains(t, said, "node node-3 on lan1", "%+v", c.Findings)

	// LA201 reads node-3 for that address too: a process bound on it holds a captured port.
	r = doctor(t, "--only", "LA201")
	c = r.check(t, "LA201")
	require.Equal(t, "pass", c.Status, "%+v", c.Findings)
	assert.NotContains(t, codes(c), "LA201-NO-NODE", "node-3 carries the address")
	t.Run("listener on the second interface", func(t *testing.T) {
		lab.StartListenerOn(t, "node-3", second, 443, "tcp")
		r := doctor(t, "--only", "LA201")
		c := r.check(t, "LA201")
		require.Equal(t, "fail", c.Status, "%+v", c.Findings)
		var fails []string
		for _, f := range c.Findings {
			if f.Severity == "fail" {
				fails = append(fails, f.Object+" "+f.Message)
			}
		}
		require.Len(t, fails, 1, "%+v", c.Findings)
		assert.Contains(t, fails[0], "node-3 (10.0.10.13, "+second+")")
		assert.Contains(t, fails[0], second+":443/tcp")
	})

	// Read-only, the nodes are not read: the address is routed to no node that doctor can see.
	r = doctor(t, "--only", "LA101", "--no-helpers")
	c = r.check(t, "LA101")
	assert.Equal(t, "fail", c.Status, "%+v", c.Findings)
	assert.Contains(t, codes(c), "LA101-NO-NODE")
}
