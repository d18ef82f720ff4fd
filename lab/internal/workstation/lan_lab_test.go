//go:build lab

package workstation

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// The test's own LAN: namespaces named wsdev-*, a bridge inside wsdev-sw (nothing is added to
// the machine's root namespace, and nothing here has a route out), the zone's three DNS
// servers at the seed's node addresses, and the organisation's router (DHCP and DNS). It never
// touches the shared lab (lanlab0, node-*, laptop).
const (
	nsSwitch = "wsdev-sw"
	nsWS     = "wsdev-ws"
	nsOrg    = "wsdev-org"
	wsIface  = "eth0"
)

var (
	zoneServers = []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}
	orgAddr     = "10.0.10.254"
	// publicAddr is what the organisation's DNS answers for the zone: the VPN-only address.
	publicAddr = "198.51.100.10"
	outsideIP  = "198.51.100.7"
	// vpnServer is the DNS server a VPN gives its tunnel.
	vpnServer = "10.8.0.1"
)

func zoneNS(i int) string { return fmt.Sprintf("wsdev-dns%d", i+1) }

// requireRoot fails (never skips) with what the test needs: make test-lab runs it as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this lab test needs root: it creates network namespaces (wsdev-*), mounts and starts " +
			"Debian's systemd-resolved and NetworkManager; run it with `make test-lab` or " +
			"`sudo go test -tags lab ./lab/internal/workstation/`")
	}
}

// labDir is the repository's lab/ directory.
func labDir(t *testing.T) string {
	t.Helper()
	dir, err := binaries.LabDir()
	require.NoError(t, err)
	return dir
}

// lanPackages fetches (first time) or finds the extracted packages.
func lanPackages(t *testing.T) Packages {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p, err := BuildPackages(ctx, labDir(t), testWriter{t})
	require.NoError(t, err, "the workstation needs Debian's packages (lab/build.sh workstation: apt-get download, dpkg-deb -x)")
	return p
}

// coreDNSBinary is the lab's CoreDNS (lab/build.sh coredns), built the first time.
func coreDNSBinary(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(labDir(t), "build.sh"), "coredns")
	cmd.Stderr = testWriter{t}
	out, err := cmd.Output()
	require.NoError(t, err, "the zone's DNS servers are the lab's CoreDNS (lab/build.sh coredns)")
	for line := range strings.SplitSeq(string(out), "\n") {
		if dir, ok := strings.CutPrefix(line, "coredns="); ok {
			return filepath.Join(dir, "coredns")
		}
	}
	t.Fatalf("lab/build.sh coredns printed no directory: %q", out)
	return ""
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// lan is the running test network.
type lan struct {
	t       *testing.T
	dir     string
	coredns string
	procs   procs.Manager
	pids    map[string]int
	done    map[string]<-chan struct{}
}

// removeStaleNamespaces deletes wsdev-* namespaces a crashed run left, ending their processes
// by pid first.
func removeStaleNamespaces(ctx context.Context, t *testing.T) {
	t.Helper()
	names, err := netns.List(ctx)
	require.NoError(t, err)
	for _, ns := range names {
		if !strings.HasPrefix(ns, "wsdev-") {
			continue
		}
		pids, _ := netns.Pids(ctx, ns)
		for _, pid := range pids {
			t.Logf("ending pid %d left in %s by an earlier run", pid, ns)
			_ = procs.Terminate(ctx, pid)
		}
		require.NoError(t, netns.Delete(ctx, ns))
	}
}

// newLAN builds the namespaces and starts the zone's servers and the organisation's DNS;
// t.Cleanup stops every process by pid and removes every namespace.
func newLAN(t *testing.T) *lan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	removeStaleNamespaces(ctx, t)
	l := &lan{t: t, dir: t.TempDir(), coredns: coreDNSBinary(t), pids: map[string]int{}, done: map[string]<-chan struct{}{}}
	l.procs = procs.Manager{PidDir: filepath.Join(l.dir, "pids"), LogDir: filepath.Join(l.dir, "logs")}
	t.Cleanup(l.teardown)

	run := func(ns string, argv ...string) {
		_, err := netns.Run(ctx, ns, argv...)
		require.NoError(t, err)
	}
	require.NoError(t, netns.Create(ctx, nsSwitch, ""))
	run(nsSwitch, "ip", "link", "add", "br0", "type", "bridge")
	run(nsSwitch, "ip", "link", "set", "br0", "up")
	type host struct{ ns, addr string }
	hosts := make([]host, 0, 2+len(zoneServers))
	hosts = append(hosts, host{nsWS, ""}, host{nsOrg, orgAddr})
	for i, a := range zoneServers {
		hosts = append(hosts, host{zoneNS(i), a})
	}
	for _, h := range hosts {
		require.NoError(t, netns.Create(ctx, h.ns, ""))
		port := "p-" + strings.TrimPrefix(h.ns, "wsdev-")
		run(nsSwitch, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
		run(nsSwitch, "ip", "link", "set", port, "master", "br0", "up")
		if h.addr != "" {
			run(h.ns, "ip", "addr", "add", h.addr+"/24", "dev", "eth0")
			run(h.ns, "ip", "link", "set", "eth0", "up")
		}
	}
	// The workstation's interface stays down: NetworkManager brings it up.

	// A VPN's tunnel: tun0 on the workstation (not managed by NetworkManager), whose DNS server is
	// the organisation's resolver, as a VPN's would be (it answers the zone with the public
	// address).
	run(nsOrg, "ip", "link", "add", "vpn0", "type", "veth", "peer", "name", "tun0", "netns", nsWS)
	run(nsOrg, "ip", "addr", "add", vpnServer+"/24", "dev", "vpn0")
	run(nsOrg, "ip", "link", "set", "vpn0", "up")
	run(nsWS, "ip", "addr", "add", "10.8.0.2/24", "dev", "tun0")
	run(nsWS, "ip", "link", "set", "tun0", "up")

	// The organisation's resolver: the zone is its public (VPN) address, example.org resolves,
	// every other name does not exist.
	l.writeCorefile("org", fmt.Sprintf(`apps.example.com:53 {
    template IN A {
        answer "{{ .Name }} 300 IN A %s"
    }
    template ANY ANY {
        rcode NOERROR
    }
}
example.org:53 {
    template IN A {
        answer "{{ .Name }} 300 IN A %s"
    }
    template ANY ANY {
        rcode NOERROR
    }
}
.:53 {
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, publicAddr, outsideIP))
	// The zone's servers: the seed's Corefile (port 53 here: no kube-proxy maps 53 to 1053), its
	// "." block forwarding to the organisation's resolver as the node's resolv.conf would.
	var answers strings.Builder
	for _, a := range zoneServers {
		fmt.Fprintf(&answers, "        answer \"{{ .Name }} 60 IN A %s\"\n", a)
	}
	l.writeCorefile("zone", fmt.Sprintf(`apps.example.com:53 {
    errors
    template IN A {
%s    }
    template ANY ANY {
        rcode NOERROR
    }
}
.:53 {
    errors
    cache 30
    forward . %s
}
`, answers.String(), orgAddr))
	// The seed's zone block alone: CoreDNS answers REFUSED for any other name.
	l.writeCorefile("zone-only", fmt.Sprintf(`apps.example.com:53 {
    errors
    template IN A {
%s    }
    template ANY ANY {
        rcode NOERROR
    }
}
`, answers.String()))
	l.startDNS(nsOrg, "org")
	for i := range zoneServers {
		l.startDNS(zoneNS(i), "zone")
	}
	return l
}

func (l *lan) writeCorefile(name, body string) {
	require.NoError(l.t, os.WriteFile(filepath.Join(l.dir, name+".Corefile"), []byte(body), 0o644))
}

// startDNS starts CoreDNS in ns with Corefile kind ("zone" or "org") and waits until it
// answers.
func (l *lan) startDNS(ns, kind string) {
	l.t.Helper()
	pid, done, err := l.procs.Start(procs.Spec{Name: ns, NS: ns, Dir: l.dir,
		Argv: []string{l.coredns, "-conf", filepath.Join(l.dir, kind+".Corefile")}})
	require.NoError(l.t, err)
	l.pids[ns], l.done[ns] = pid, done
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		if out, err := netns.Run(ctx, ns, "dig", "+short", "+time=1", "+tries=1", "@127.0.0.1", "grafana.apps.example.com"); err == nil && out != "" {
			return
		}
		select {
		case <-done:
			l.t.Fatalf("CoreDNS in %s exited: %s", ns, logTail(l.procs.LogFile(ns), 10))
		case <-ctx.Done():
			l.t.Fatalf("CoreDNS in %s does not answer: %s", ns, logTail(l.procs.LogFile(ns), 10))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stopDNS ends the CoreDNS of ns by its pid: the replica resolved uses is gone.
func (l *lan) stopDNS(ns string) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	require.NoError(l.t, procs.Terminate(ctx, l.pids[ns]))
	<-l.done[ns]
	delete(l.pids, ns)
}

// restartZone restarts every zone server with the Corefile kind.
func (l *lan) restartZone(kind string) {
	l.t.Helper()
	for i := range zoneServers {
		l.stopDNS(zoneNS(i))
		l.startDNS(zoneNS(i), kind)
	}
}

func (l *lan) startDHCP(ctx context.Context, pkgs Packages) *DHCPServer {
	l.t.Helper()
	d, err := StartDHCP(ctx, DHCPConfig{
		Packages: pkgs, NetNS: nsOrg, Interface: "eth0",
		First: netip.MustParseAddr("10.0.10.50"), Last: netip.MustParseAddr("10.0.10.59"), PrefixLen: 24,
		Router: netip.MustParseAddr(orgAddr), DNS: []netip.Addr{netip.MustParseAddr(orgAddr)}, Domain: "lan",
		Routes:   []Route{{Dst: netip.MustParsePrefix("198.51.100.0/24"), Via: netip.MustParseAddr(orgAddr)}},
		StateDir: filepath.Join(l.dir, "dhcp"), LogDir: filepath.Join(l.dir, "logs"),
	})
	require.NoError(l.t, err)
	return d
}

// teardown ends the servers by pid, checks that no process is left in a wsdev namespace, and
// removes the namespaces.
func (l *lan) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ns, pid := range l.pids {
		if err := procs.Terminate(ctx, pid); err != nil {
			l.t.Errorf("stop CoreDNS in %s: %v", ns, err)
		}
	}
	names, err := netns.List(ctx)
	if err != nil {
		l.t.Error(err)
		return
	}
	for _, ns := range names {
		if !strings.HasPrefix(ns, "wsdev-") {
			continue
		}
		if pids, _ := netns.Pids(ctx, ns); len(pids) > 0 {
			l.t.Errorf("processes left in %s: %v", ns, pids)
			for _, pid := range pids {
				_ = procs.Terminate(ctx, pid)
			}
		}
		if err := netns.Delete(ctx, ns); err != nil {
			l.t.Error(err)
		}
	}
}
