//go:build record

package facts

// The recorder of vpn-trace's testdata: it runs the trace's own commands for real, in network
// namespaces it creates (prefix "vpnrec-", deleted afterwards), and stores what they printed
// in ../testdata/vpn/NAME.json. It needs root:
//
//	go test -tags record -run TestRecord -v ./checks/vpn/facts/
//
// It never touches another namespace, nor a sysctl of the initial one: the init-netns
// recordings only read.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

type recording struct {
	Cmd    []string `json:"cmd"`
	Stdout string   `json:"stdout"`
	Stderr string   `json:"stderr"`
	Exit   int      `json:"exit"`
}

// netns creates a network namespace for one test and deletes it afterwards.
func netns(t *testing.T, name string) string {
	t.Helper()
	name = "vpnrec-" + name
	_ = exec.Command("ip", "netns", "del", name).Run()
	require.NoError(t, exec.Command("ip", "netns", "add", name).Run())
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	return name
}

// inNS runs a setup command in ns (ns "" = this namespace) and fails on error.
func inNS(t *testing.T, ns string, args ...string) {
	t.Helper()
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	require.NoError(t, err, "%v: %s", args, out)
}

// record runs cmd in ns ("" = this namespace) and saves what it printed as name.
func record(t *testing.T, name, ns string, cmd ...string) recording {
	t.Helper()
	args := cmd
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, cmd...)
	}
	c := exec.Command(args[0], args[1:]...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	r := recording{Cmd: cmd, Stdout: stdout.String(), Stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("..", "testdata", "vpn", name+".json"), append(b, '\n'), 0o644))
	t.Logf("%s: exit %d\n%s%s", name, r.Exit, r.Stdout, r.Stderr)
	return r
}

// calicoConflist renders Calico's manifest template as install-cni does
// (cni-plugin/pkg/install/install.go: the placeholders replaced by the node's values).
func calicoConflist(t *testing.T, template string) string {
	t.Helper()
	return strings.NewReplacer(
		"__KUBERNETES_NODE_NAME__", "node-1",
		"__CNI_MTU__", "0", // calico.yaml's veth_mtu "0": auto-detected
		"__KUBECONFIG_FILEPATH__", "/etc/cni/net.d/calico-kubeconfig",
	).Replace(template)
}

// confDir writes files into a fresh CNI configuration directory under /tmp/vpnrec and returns
// it; the node-side fixtures mount it at the same path.
func confDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := "/tmp/vpnrec/host/etc/cni/net.d"
	require.NoError(t, os.RemoveAll("/tmp/vpnrec"))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll("/tmp/vpnrec") })
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

// flannelConflist is kube-flannel.yml's cni-conf.json, as flannel's DaemonSet installs it.
const flannelConflist = `{
  "name": "cbr0",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}
`

// nodeNS is a node: eth0 with its LAN address and the default route, forwarding on, and the
// given extra routes (`ip route add` arguments).
func nodeNS(t *testing.T, addr string, routes ...[]string) string {
	t.Helper()
	ns := netns(t, "node")
	for _, c := range [][]string{
		{"sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer"},
		{"ip", "addr", "add", addr + "/24", "dev", "eth0"},
		{"ip", "link", "set", "eth0", "up"},
		{"ip", "link", "set", "eth0-peer", "up"},
		{"ip", "route", "add", "default", "via", "10.0.10.1"},
	} {
		inNS(t, ns, c...)
	}
	for _, r := range routes {
		inNS(t, ns, append([]string{"ip", "route", "add"}, r...)...)
	}
	return ns
}

func TestRecordNodeReads(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join("..", "testdata", "vpn", "calico-config-template.txt"))
	require.NoError(t, err)
	allowing, err := CalicoTemplateAllowingForwarding(string(tmpl))
	require.NoError(t, err)

	t.Run("calico writes 0, the node has 1", func(t *testing.T) {
		ns := nodeNS(t, "10.0.10.11")
		dir := confDir(t, map[string]string{"10-calico.conflist": calicoConflist(t, string(tmpl)), "calico-kubeconfig": "# not a CNI configuration\n"})
		record(t, "node-calico-off", ns, "sh", "-c", nodeScript(dir))
	})
	t.Run("calico with the fix applied", func(t *testing.T) {
		ns := nodeNS(t, "10.0.10.11")
		dir := confDir(t, map[string]string{"10-calico.conflist": calicoConflist(t, allowing)})
		record(t, "node-calico-on", ns, "sh", "-c", nodeScript(dir))
	})
	t.Run("flannel, read from the initial namespace", func(t *testing.T) {
		dir := confDir(t, map[string]string{"10-flannel.conflist": flannelConflist})
		record(t, "node-flannel-initns", "", "sh", "-c", nodeScript(dir))
	})
	t.Run("flannel, read from a node that is not the initial namespace", func(t *testing.T) {
		ns := nodeNS(t, "10.0.10.11")
		dir := confDir(t, map[string]string{"10-flannel.conflist": flannelConflist})
		record(t, "node-flannel-childns", ns, "sh", "-c", nodeScript(dir))
	})
	t.Run("a container without the CNI directory", func(t *testing.T) {
		record(t, "node-no-confdir", nodeNS(t, "10.0.10.11"), "sh", "-c", nodeScript(""))
	})
	// The VPN pod (10.244.1.5) is on node-1 (10.0.10.11); the ladder's pod on node-2
	// (10.0.10.12). BGP (bird) advertised the pool from node-1, which routes it to the pod.
	t.Run("the pool routed back: the VPN pod's node", func(t *testing.T) {
		ns := nodeNS(t, "10.0.10.11", []string{"10.244.1.5", "dev", "eth0", "scope", "link"}, []string{"10.8.0.0/24", "via", "10.244.1.5", "dev", "eth0"})
		dir := confDir(t, map[string]string{"10-calico.conflist": calicoConflist(t, string(tmpl))})
		record(t, "node-pool-to-pod", ns, "sh", "-c", nodeScript(dir))
	})
	t.Run("the pool routed back: another node, by BGP", func(t *testing.T) {
		ns := nodeNS(t, "10.0.10.12", []string{"10.8.0.0/24", "via", "10.0.10.11", "dev", "eth0", "proto", "bird"})
		dir := confDir(t, map[string]string{"10-calico.conflist": calicoConflist(t, string(tmpl))})
		record(t, "node-pool-bgp", ns, "sh", "-c", nodeScript(dir))
	})
	t.Run("another node without a route to the pool", func(t *testing.T) {
		ns := nodeNS(t, "10.0.10.12")
		dir := confDir(t, map[string]string{"10-calico.conflist": calicoConflist(t, string(tmpl))})
		record(t, "node-pool-default-only", ns, "sh", "-c", nodeScript(dir))
	})
	t.Run("another node without a route to the pool nor a default route", func(t *testing.T) {
		ns := nodeNS(t, "10.0.10.12")
		inNS(t, ns, "ip", "route", "del", "default")
		dir := confDir(t, map[string]string{"10-calico.conflist": calicoConflist(t, string(tmpl))})
		record(t, "node-pool-no-route", ns, "sh", "-c", nodeScript(dir))
	})
}

// clientNS is a VPN client: eth0 192.168.1.20/24 with the default route via 192.168.1.1, and
// tun0 10.8.0.6/24 in the server's pool (topology subnet), as OpenVPN's client sets it up.
func clientNS(t *testing.T) string {
	t.Helper()
	ns := netns(t, "cli")
	for _, c := range [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer"},
		{"ip", "addr", "add", "192.168.1.20/24", "dev", "eth0"},
		{"ip", "link", "set", "eth0", "up"},
		{"ip", "link", "set", "eth0-peer", "up"},
		{"ip", "route", "add", "default", "via", "192.168.1.1"},
		{"ip", "tuntap", "add", "dev", "tun0", "mode", "tun"},
		{"ip", "addr", "add", "10.8.0.6/24", "dev", "tun0"},
		{"ip", "link", "set", "tun0", "up"},
	} {
		inNS(t, ns, c...)
	}
	return ns
}

func TestRecordClientRoutes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		routes [][]string
	}{
		{"client-routes-pushed", [][]string{
			{"ip", "route", "add", "10.244.0.0/16", "via", "10.8.0.1", "dev", "tun0"},
			{"ip", "route", "add", "10.96.0.0/12", "via", "10.8.0.1", "dev", "tun0"},
		}},
		{"client-routes-none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := clientNS(t)
			for _, r := range tc.routes {
				inNS(t, ns, r...)
			}
			record(t, tc.name, ns, "cat", "/proc/net/route")
			for _, dest := range []string{"10.8.0.1", "10.244.1.7", "10.96.0.10"} {
				record(t, tc.name+"-get-"+dest, ns, "ip", "-o", "route", "get", dest)
			}
		})
	}
}

// TestRecordNAT records the nat script in a VPN pod's namespace: eth0 up, the pool's
// masquerade written with iptables (nft backend), with nft directly, or not at all; run as
// nobody; and in an image with nft alone (PATH holding only sh and nft).
func TestRecordNAT(t *testing.T) {
	script := []string{"sh", "-c", natScript}
	setup := func(t *testing.T) string {
		ns := netns(t, "srv")
		inNS(t, ns, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer")
		return ns
	}
	nftMasq := func(t *testing.T, ns string) {
		c := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
		c.Stdin = strings.NewReader("table ip nat {\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\tip saddr 10.8.0.0/24 oifname \"eth0\" masquerade\n\t}\n}\n")
		out, err := c.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	t.Run("nothing masquerades the pool", func(t *testing.T) {
		record(t, "nat-empty", setup(t), script...)
	})
	t.Run("iptables masquerades the pool", func(t *testing.T) {
		ns := setup(t)
		inNS(t, ns, "iptables", "-t", "nat", "-A", "POSTROUTING", "-s", "10.8.0.0/24", "-o", "eth0", "-j", "MASQUERADE")
		record(t, "nat-masq", ns, script...)
	})
	t.Run("nft masquerades the pool", func(t *testing.T) {
		ns := setup(t)
		nftMasq(t, ns)
		record(t, "nat-nft-masq", ns, script...)
	})
	t.Run("an image with nft alone", func(t *testing.T) {
		ns := setup(t)
		nftMasq(t, ns)
		bin := filepath.Join(t.TempDir(), "bin")
		require.NoError(t, os.MkdirAll(bin, 0o755))
		for _, tool := range []string{"/bin/sh", "/usr/sbin/nft"} {
			require.NoError(t, os.Symlink(tool, filepath.Join(bin, filepath.Base(tool))))
		}
		r := record(t, "nat-nft-only", ns, "env", "PATH="+bin, "sh", "-c", natScript)
		require.NotContains(t, r.Stdout, "iptables")
	})
	t.Run("not root", func(t *testing.T) {
		ns := setup(t)
		nftMasq(t, ns)
		record(t, "nat-denied", ns, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", natScript)
	})
}

// TestRecordTools records which of the trace's tools a namespace of this machine has.
func TestRecordTools(t *testing.T) {
	record(t, "tools", netns(t, "srv"), toolsCommand()...)
}

// tunnelPath builds an OpenVPN 2.6 static-key tunnel (the "vpnrec-msrv" side 10.8.0.1, the
// "vpnrec-mcli" side 10.8.0.2) over two routers; with narrow, the link between the routers
// has MTU 1400 and both routers drop the ICMP "fragmentation needed" they would send: the
// encapsulated packets between 1400 and 1500 bytes, which carry Don't Fragment, vanish.
func tunnelPath(t *testing.T, narrow bool) (srv, cli string) {
	t.Helper()
	key := filepath.Join(t.TempDir(), "static.key")
	inNS(t, "", "openvpn", "--genkey", "secret", key)
	srv, cli = netns(t, "msrv"), netns(t, "mcli")
	ra, rb := netns(t, "mra"), netns(t, "mrb")
	link := func(a, aif, aaddr, b, bif, baddr string, mtu string) {
		inNS(t, "", "ip", "link", "add", aif, "netns", a, "type", "veth", "peer", "name", bif, "netns", b)
		inNS(t, a, "ip", "addr", "add", aaddr, "dev", aif)
		inNS(t, b, "ip", "addr", "add", baddr, "dev", bif)
		for _, e := range [][2]string{{a, aif}, {b, bif}} {
			inNS(t, e[0], "ip", "link", "set", e[1], "mtu", mtu, "up")
		}
	}
	mid := "1500"
	if narrow {
		mid = "1400"
	}
	link(srv, "vrm0", "192.168.77.1/24", ra, "vrm1", "192.168.77.254/24", "1500")
	link(ra, "vrm2", "192.168.76.1/24", rb, "vrm3", "192.168.76.2/24", mid)
	link(rb, "vrm4", "192.168.78.254/24", cli, "vrm5", "192.168.78.2/24", "1500")
	for _, c := range [][]string{
		{srv, "ip", "route", "add", "default", "via", "192.168.77.254"},
		{cli, "ip", "route", "add", "default", "via", "192.168.78.254"},
		{ra, "ip", "route", "add", "192.168.78.0/24", "via", "192.168.76.2"},
		{rb, "ip", "route", "add", "192.168.77.0/24", "via", "192.168.76.1"},
		{ra, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{rb, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{ra, "iptables", "-A", "OUTPUT", "-p", "icmp", "--icmp-type", "fragmentation-needed", "-j", "DROP"},
		{rb, "iptables", "-A", "OUTPUT", "-p", "icmp", "--icmp-type", "fragmentation-needed", "-j", "DROP"},
	} {
		inNS(t, c[0], c[1:]...)
	}
	for _, side := range []struct{ ns, local, remote, ifc string }{
		{srv, "192.168.77.1", "192.168.78.2", "10.8.0.1 10.8.0.2"},
		{cli, "192.168.78.2", "192.168.77.1", "10.8.0.2 10.8.0.1"},
	} {
		ifc := strings.Fields(side.ifc)
		c := exec.Command("ip", "netns", "exec", side.ns, "openvpn", "--dev", "tun0", "--local", side.local, "--lport", "1194",
			"--remote", side.remote, "--rport", "1194", "--secret", key, "--cipher", "AES-256-CBC", "--auth", "SHA256",
			"--ifconfig", ifc[0], ifc[1], "--verb", "1")
		require.NoError(t, c.Start())
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	for i := 0; i < 50; i++ { // bounded: 10 s for the tunnel to come up
		if exec.Command("ip", "netns", "exec", srv, "ping", "-c", "1", "-W", "1", "10.8.0.2").Run() == nil {
			return srv, cli
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the tunnel did not come up")
	return "", ""
}

// TestRecordMTU records the pod side's sweep of the peer through the tunnel, as the trace runs
// it (one script: the interface MTU, then every size at once; a black hole's refining sizes in
// a second), and the client side's sweep of a DNS server behind the tunnel (the lab's CoreDNS
// on 10.8.0.1:53), by this package's own prober run inside the client namespace.
func TestRecordMTU(t *testing.T) {
	peer := netip.MustParseAddr("10.8.0.2")
	for name, narrow := range map[string]bool{"mtu-blackhole": true, "mtu-ok": false} {
		t.Run(name, func(t *testing.T) {
			srv, cli := tunnelPath(t, narrow)
			r := record(t, name+"-sweep", srv, "sh", "-c", pingSweepScript("tun0", peer, nil))
			first := parsePingSweep(r.Stdout, nil)
			require.True(t, first.ended, r.Stdout)
			sweep := finishSweep(first.mtu, first.results(sweepSizes(first.mtu)), func(sizes []int) []SizeResult {
				r := record(t, name+"-refine", srv, "sh", "-c", pingSweepScript("", peer, sizes))
				return parsePingSweep(r.Stdout, sizes).results(sizes)
			})
			t.Logf("pod side: %+v", sweep.Sizes)
			recordClientSweep(t, name, srv, cli)
		})
	}
}

// recordClientSweep runs CoreDNS on the server side and this package's SendDF sweep from the
// client namespace, and saves the sizes' outcomes as NAME-client.json.
func recordClientSweep(t *testing.T, name, srv, cli string) {
	t.Helper()
	coredns, err := filepath.Glob(filepath.Join(os.Getenv("HOME"), ".cache", "kubectl-lanaccess", "lab", "coredns-*", "coredns"))
	require.NoError(t, err)
	require.NotEmpty(t, coredns, "the lab's CoreDNS (lab/build.sh) answers the client's probes")
	conf := filepath.Join(t.TempDir(), "Corefile")
	require.NoError(t, os.WriteFile(conf, []byte(".:53 {\n    bind 10.8.0.1\n    template IN A cluster.local {\n        answer \"{{ .Name }} 60 IN A 10.96.0.1\"\n    }\n}\n"), 0o644))
	c := exec.Command("ip", "netns", "exec", srv, coredns[0], "-conf", conf)
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	time.Sleep(time.Second)

	runtime.LockOSThread() // this thread enters the client's namespace and never leaves it
	f, err := os.Open("/run/netns/" + cli)
	require.NoError(t, err)
	require.NoError(t, unix.Setns(int(f.Fd()), unix.CLONE_NEWNET))
	var p NetProber
	mtu, err := p.InterfaceMTU(netip.MustParseAddr("10.8.0.2"))
	require.NoError(t, err)
	results := map[int]SizeResult{}
	var mu sync.Mutex
	sweep := sweepMTU(mtu, oneAtATime(func(size int) SizeResult {
		ctx, cancel := context.WithTimeout(context.Background(), mtuProbeLimit)
		defer cancel()
		r, err := p.SendDF(ctx, netip.MustParseAddrPort("10.8.0.1:53"), size)
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		results[size] = r
		return r
	}))
	t.Logf("client side (tun0 MTU %d): %+v", mtu, sweep.Sizes)
	b, err := json.MarshalIndent(map[string]any{"interfaceMTU": mtu, "sizes": results}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join("..", "testdata", "vpn", name+"-client.json"), append(b, '\n'), 0o644))
}
