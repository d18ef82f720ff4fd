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
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
