package noderead

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// The outputs in testdata/nodenet were recorded on this project's build machine (Linux 6.18):
//   - ipvs-node.*: a network namespace shaped like a node in IPVS mode (eth0 with the node's
//     address, a second interface lan1, and a kube-ipvs0 holding /32s the way kube-proxy
//     binds them, down), read with NodeAddrCommand's iproute2 branch and its no-`ip` branch;
//   - this-machine.links.txt: the machine's own virtio NIC (speed -1, duplex unknown) and lo;
//   - scratch-veth-tap.links.txt: a veth (10000/full) and a tap whose link settings were set
//     to 100 Mb/s half duplex with the SIOCETHTOOL ioctl (drivers/net/tun.c accepts them).

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/nodenet/" + name)
	require.NoError(t, err)
	return string(b)
}

func TestNodeAddrsFromIproute2NameEachInterfaceAndLeaveKubeIPVS0Out(t *testing.T) {
	var n NodeNet
	require.NoError(t, ParseNodeAddrs(readTestdata(t, "ipvs-node.iproute2.txt"), &n))
	assert.True(t, n.Named)
	assert.True(t, n.IPVSDevicePresent)
	link, ok := n.Owns(netip.MustParseAddr("10.0.10.11"))
	assert.True(t, ok)
	assert.Equal(t, "eth0", link)
	link, ok = n.Owns(netip.MustParseAddr("192.168.50.11"))
	assert.True(t, ok, "an address on a second interface is the node's")
	assert.Equal(t, "lan1", link)
	_, ok = n.Owns(netip.MustParseAddr("10.0.10.12"))
	assert.False(t, ok, "a peer's address on kube-ipvs0 is kube-proxy's, not the node's")
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.10.12"), netip.MustParseAddr("10.0.10.13"),
		netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("10.96.0.10")}, n.IPVSAddrs())
	assert.Equal(t, []string{"eth0", "lan1"}, n.CarryingLinks(), "loopback, link-local and kube-ipvs0 carry no LAN")
}

func TestNodeAddrsWithoutIPComeFromFibTrieWithoutNames(t *testing.T) {
	var n NodeNet
	require.NoError(t, ParseNodeAddrs(readTestdata(t, "ipvs-node.no-ip.txt"), &n))
	assert.False(t, n.Named)
	assert.True(t, n.IPVSDevicePresent, "kube-ipvs0 is seen in /sys/class/net even without names")
	link, ok := n.Owns(netip.MustParseAddr("192.168.50.11"))
	assert.True(t, ok)
	assert.Empty(t, link, "fib_trie does not name the interface")
	_, ok = n.Owns(netip.MustParseAddr("10.0.10.99"))
	assert.False(t, ok)
	link, ok = n.Owns(netip.MustParseAddr("fd00:10::11"))
	assert.True(t, ok, "IPv6 addresses come from if_inet6 with their interface")
	assert.Equal(t, "eth0", link)
}

func TestNodeAddrsOutputOfAnotherCommandIsAnError(t *testing.T) {
	var n NodeNet
	assert.Error(t, ParseNodeAddrs("1: lo    inet 127.0.0.1/8 scope host lo\n", &n))
}

func TestLinkStatesReadAsTheKernelWritesThem(t *testing.T) {
	n := NodeNet{Links: []NodeLink{{Name: "eth0"}, {Name: "lo"}}}
	ParseLinkStates(readTestdata(t, "this-machine.links.txt"), &n)
	eth0 := n.Links[0].Link
	assert.True(t, eth0.Read)
	assert.True(t, eth0.Device)
	_, known := eth0.Speed()
	assert.False(t, known, "virtio reports SPEED_UNKNOWN (-1)")
	assert.Equal(t, "speed unknown (the driver reports -1), duplex unknown", eth0.Describe())
	lo := n.Links[1].Link
	assert.Equal(t, "speed not reported (the driver has none, or the link is down), duplex unknown", lo.Describe())

	n = NodeNet{Links: []NodeLink{{Name: "eth0"}, {Name: "lan0"}}}
	ParseLinkStates(readTestdata(t, "scratch-veth-tap.links.txt"), &n)
	assert.Equal(t, "10000 Mb/s, full duplex", n.Links[0].Link.Describe())
	assert.Equal(t, "100 Mb/s, half duplex", n.Links[1].Link.Describe())
}

// fakeExec answers NodeAddrCommand and LinkStateCommand per pod from recorded outputs.
type fakeExec struct {
	mu    sync.Mutex
	addrs map[string]string
	links map[string]string
	calls map[string]int
}

func (f *fakeExec) Exec(_ context.Context, ref podexec.PodRef, _ string, cmd []string, _ io.Reader) ([]byte, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[ref.Name]++
	script := strings.Join(cmd, " ")
	switch {
	case strings.Contains(script, markAddrs):
		return []byte(f.addrs[ref.Name]), nil, nil
	case strings.Contains(script, markLink):
		return []byte(f.links[ref.Name]), nil, nil
	}
	return nil, nil, errors.New("unexpected command")
}

type fakeOpener struct{ exec *fakeExec }

func (o fakeOpener) Open(_ context.Context, n *corev1.Node) (*podexec.NodeShell, error) {
	if _, ok := o.exec.addrs[n.Name]; !ok {
		return nil, &podexec.HelperError{Node: n.Name, Cause: podexec.CauseForbidden, Message: "not permitted"}
	}
	return podexec.PodShell(n.Name, podexec.PodRef{Namespace: "ns", Name: n.Name}, "c", "ns/reader", o.exec), nil
}

func testNode(name, internalIP string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "linux"}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: internalIP}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{OperatingSystem: "linux"},
		}}
}

func TestPlaceAddrsFindsAnAddressOnASecondInterfaceOfAnotherNode(t *testing.T) {
	two := "@@lanaccess-ip-addr\n2: eth0    inet 10.0.10.12/24 scope global eth0\\\n@@lanaccess-links\neth0\nlo\n"
	ex := &fakeExec{calls: map[string]int{},
		addrs: map[string]string{"node-1": readTestdata(t, "ipvs-node.iproute2.txt"), "node-2": two},
		links: map[string]string{"node-1": "@@lanaccess-link eth0\nspeed=1000\nduplex=full\n"}}
	r := &NodeNetReader{Shells: fakeOpener{ex}}
	nodes := []corev1.Node{testNode("node-1", "10.0.10.11"), testNode("node-2", "10.0.10.12")}
	got := PlaceAddrs(context.Background(), r, nodes, []netip.Addr{netip.MustParseAddr("10.0.10.12"), netip.MustParseAddr("192.168.50.11")})
	assert.True(t, got.Searched)
	p := got.Places[netip.MustParseAddr("192.168.50.11")]
	assert.Empty(t, p.Listed, "no node lists it in status.addresses")
	assert.Equal(t, []AddrOwner{{Node: "node-1", Link: "lan1"}}, p.Owners)
	p = got.Places[netip.MustParseAddr("10.0.10.12")]
	assert.Equal(t, []AddrOwner{{Node: "node-2", Link: "eth0"}}, p.Owners, "node-1's kube-ipvs0 copy is not an owner")
	assert.Equal(t, []string{"node-1"}, p.OnIPVS)
	eth0, _ := got.Read["node-1"].Link("eth0")
	speed, ok := eth0.Link.Speed()
	assert.True(t, ok)
	assert.Equal(t, 1000, speed)

	// A second question costs no second read of a node.
	_ = PlaceAddrs(context.Background(), r, nodes, []netip.Addr{netip.MustParseAddr("10.0.10.12")})
	assert.Equal(t, 2, ex.calls["node-1"], "one address read and one link read, once per run")
}

func TestPlaceAddrsWithoutAReaderSaysWhy(t *testing.T) {
	nodes := []corev1.Node{testNode("node-1", "10.0.10.11")}
	got := PlaceAddrs(context.Background(), &NodeNetReader{Unavailable: "--no-helpers"}, nodes, []netip.Addr{netip.MustParseAddr("10.0.10.11")})
	assert.Equal(t, "--no-helpers", got.NotRead)
	assert.Len(t, got.Places[netip.MustParseAddr("10.0.10.11")].Listed, 1)
	assert.Empty(t, got.Read)
}

func TestPlaceAddrsKeepsWhyANodeWasNotRead(t *testing.T) {
	ex := &fakeExec{calls: map[string]int{}, addrs: map[string]string{}}
	nodes := []corev1.Node{testNode("node-1", "10.0.10.11")}
	got := PlaceAddrs(context.Background(), &NodeNetReader{Shells: fakeOpener{ex}}, nodes, []netip.Addr{netip.MustParseAddr("10.0.10.11")})
	require.Contains(t, got.Unread, "node-1")
	assert.Contains(t, got.Unread["node-1"].Error(), "not permitted")
}
