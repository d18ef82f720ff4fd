package config

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
)

// In la101-address-of-no-node, node-3's InternalIP is 10.0.10.23 while the Services and the
// zone use 10.0.10.13. Whether that is broken depends on what node-3 really carries.

// node3Carries is node-3's `ip -o addr` (NodeAddrCommand's output) with lan on lan1.
func node3Carries(t *testing.T, lan string) noderead.NodeNet {
	t.Helper()
	out := "@@lanaccess-ip-addr\n" +
		"1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n" +
		"2: eth0    inet 10.0.10.23/24 scope global eth0\\       valid_lft forever preferred_lft forever\n" +
		"3: lan1    inet " + lan + "/24 scope global lan1\\       valid_lft forever preferred_lft forever\n" +
		"@@lanaccess-links\neth0\nlan1\nlo\n"
	n := noderead.NodeNet{Node: "node-3", Via: "pod kube-system/kube-proxy-node-3"}
	require.NoError(t, noderead.ParseNodeAddrs(out, &n))
	return n
}

// placedBy places addresses as noderead.PlaceAddrs does, from node reads given here.
func placedBy(reads map[string]noderead.NodeNet, searched bool) func([]netip.Addr) *noderead.NodeAddrs {
	return func(addrs []netip.Addr) *noderead.NodeAddrs {
		out := &noderead.NodeAddrs{Places: map[netip.Addr]*noderead.AddrPlacement{}, Read: reads, Unread: map[string]error{}, Searched: searched}
		for _, a := range addrs {
			p := &noderead.AddrPlacement{Addr: a}
			for name, n := range reads {
				if link, ok := n.Owns(a); ok {
					p.Owners = append(p.Owners, noderead.AddrOwner{Node: name, Link: link})
				}
			}
			out.Places[a] = p
		}
		return out
	}
}

func TestLA101AnAddressOnANodesSecondInterfaceIsThatNodesAndTheInterfaceIsNamed(t *testing.T) {
	env := configEnv(t, nil, nil, configBroken+"/la101-address-of-no-node")
	o := addressConsistency(env.Setup, placedBy(map[string]noderead.NodeNet{"node-3": node3Carries(t, "10.0.10.13")}, true))
	st, _ := engine.StatusOf(o)
	require.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
	var said *engine.Finding
	for i := range o.Findings {
		if o.Findings[i].Code == "LA101-NODE-ADDRESS" {
			said = &o.Findings[i]
		}
	}
	require.NotNil(t, said, "%+v", o.Findings)
	assert.Equal(t, "10.0.10.13", said.Object)
	assert.Contains(t, said.Message, "node node-3 on lan1")
	assert.Contains(t, said.Message, "pod kube-system/kube-proxy-node-3")
}

func TestLA101AnAddressNoNodeCarriesFailsSayingEveryNodeWasRead(t *testing.T) {
	env := configEnv(t, nil, nil, configBroken+"/la101-address-of-no-node")
	o := addressConsistency(env.Setup, placedBy(map[string]noderead.NodeNet{"node-3": node3Carries(t, "192.168.50.13")}, true))
	st, _ := engine.StatusOf(o)
	require.Equal(t, engine.StatusFail, st)
	for _, f := range o.Findings {
		if f.Code == "LA101-NO-NODE" {
			assert.Contains(t, f.Message, "no interface of the 1 Ready Linux nodes read carries it")
			return
		}
	}
	t.Fatalf("no LA101-NO-NODE: %+v", o.Findings)
}

func TestLA101WithoutNodeReadsStillFailsAndSaysTheNodesWereNotRead(t *testing.T) {
	env := configEnv(t, nil, nil, configBroken+"/la101-address-of-no-node")
	env.Reader = &noderead.NodeNetReader{Unavailable: "--no-helpers: doctor stays read-only"}
	st, o := runConfigCheck(t, AddressConsistency(env))
	require.Equal(t, engine.StatusFail, st)
	found := false
	for _, f := range o.Findings {
		if f.Code == "LA101-NO-NODE" {
			found = true
			assert.Contains(t, f.Message, "the nodes' own addresses were not read: --no-helpers")
		}
	}
	assert.True(t, found, "%+v", o.Findings)
}
