package nodes

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/kubetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
)

// The sysfs outputs in pkg/kube/noderead/testdata/nodenet were recorded on the build machine: its
// virtio NIC (speed -1, duplex unknown, a device behind it), a veth (10000/full, no device) and
// a tap set to 100/half with SIOCETHTOOL (no device). No NIC that negotiates a speed exists
// there (nor in the lab, whose links are veths with a fixed 10000), so the comparison itself
// is proven on link states in the kernel's format (speed "%d" in Mb/s, duplex full/half).

func recordedLinks(t *testing.T, file string, names ...string) []noderead.LinkState {
	t.Helper()
	b, err := os.ReadFile("../../pkg/kube/noderead/testdata/nodenet/" + file)
	require.NoError(t, err)
	n := noderead.NodeNet{}
	for _, name := range names {
		n.Links = append(n.Links, noderead.NodeLink{Name: name})
	}
	noderead.ParseLinkStates(string(b), &n)
	out := make([]noderead.LinkState, len(n.Links))
	for i, l := range n.Links {
		out[i] = l.Link
	}
	return out
}

func nic(speed, duplex string) noderead.LinkState {
	return noderead.LinkState{Read: true, OperState: "up", SpeedRaw: speed, DuplexRaw: duplex, Device: true}
}

func carrier(node, link, addr string, st noderead.LinkState) Carrier {
	return Carrier{Node: node, Link: link, Addrs: []netip.Addr{netip.MustParseAddr(addr)}, State: st}
}

func judge(t *testing.T, cs ...Carrier) (engine.Status, string, engine.Outcome) {
	t.Helper()
	o := JudgeLinks(cs)
	st, reason := engine.StatusOf(o)
	assert.Empty(t, catalogue.Undeclared("LA203", o.Findings))
	return st, reason, o
}

func TestLA203FlagsTheNodeOnA100MbCard(t *testing.T) {
	st, _, o := judge(t,
		carrier("node-1", "eth0", "10.0.10.11", nic("1000", "full")),
		carrier("node-2", "eno1", "10.0.10.12", nic("1000", "full")),
		carrier("node-3", "eth0", "10.0.10.13", nic("100", "full")))
	require.Equal(t, engine.StatusWarn, st, "%+v", o.Findings)
	var slow []engine.Finding
	for _, f := range o.Findings {
		if f.Code == "LA203-SLOW-LINK" {
			slow = append(slow, f)
		}
	}
	require.Len(t, slow, 1)
	assert.Equal(t, "node node-3's eth0 (10.0.10.13)", slow[0].Object)
	assert.Contains(t, slow[0].Message, "100 Mb/s where the fastest carrier runs 1000 Mb/s")
	assert.Contains(t, slow[0].Message, "1/10")
}

func TestLA203HalfDuplexIsAWarningEvenAtTheSameSpeed(t *testing.T) {
	st, _, o := judge(t,
		carrier("node-1", "eth0", "10.0.10.11", nic("1000", "full")),
		carrier("node-2", "eth0", "10.0.10.12", nic("1000", "half")))
	require.Equal(t, engine.StatusWarn, st)
	assert.Equal(t, "LA203-HALF-DUPLEX", o.Findings[0].Code)
}

func TestLA203EqualNICsPass(t *testing.T) {
	st, _, _ := judge(t,
		carrier("node-1", "eth0", "10.0.10.11", nic("10000", "full")),
		carrier("node-2", "eth0", "10.0.10.12", nic("10000", "full")))
	assert.Equal(t, engine.StatusPass, st)
}

func TestLA203RecordedVirtioVethAndTapAreNotComparedAndTheCheckSkipsSayingSo(t *testing.T) {
	virtio := recordedLinks(t, "this-machine.links.txt", "eth0")[0]
	scratch := recordedLinks(t, "scratch-veth-tap.links.txt", "eth0", "lan0")
	st, reason, o := judge(t,
		carrier("node-1", "eth0", "10.0.10.11", virtio),
		carrier("node-2", "eth0", "10.0.10.12", scratch[0]),
		carrier("node-3", "lan0", "10.0.10.13", scratch[1]))
	require.Equal(t, engine.StatusSkip, st, "unknown is never a pass: %+v", o.Findings)
	assert.Contains(t, reason, "nothing to compare")
	require.Len(t, o.Findings, 3)
	assert.Contains(t, o.Findings[0].Message, "speed unknown (the driver reports -1)")
	assert.Contains(t, o.Findings[1].Message, "virtual interface")
	assert.Contains(t, o.Findings[2].Message, "100 Mb/s, half duplex", "what a virtual link reports is said, not judged")
}

func TestLA203UnreadLinksAreSaid(t *testing.T) {
	st, _, o := judge(t, Carrier{Node: "node-1", Link: "eth0", Addrs: []netip.Addr{netip.MustParseAddr("10.0.10.11")}, Unread: "reading /sys/class/net through pod x: timeout"})
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, o.Findings[0].Message, "timeout")
}

func TestLA203SaysTheNodesWereNotReadWhenNoneCouldBe(t *testing.T) {
	f := newLA201Fixture(t)
	f.exec.On("", "cat /proc/net/tcp", kubetest.Reply{Err: errors.New("exec refused")})
	f.env.Reader = &noderead.NodeNetReader{Shells: f.env.Shells, Limit: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := LinkSpeed(f.env).Run(ctx)
	st, reason := engine.StatusOf(o)
	assert.Equal(t, engine.StatusSkip, st)
	assert.Contains(t, reason, "the nodes could not be read")
	assert.NotContains(t, reason, "LA101 says more")
}
