//go:build lab

package workstation

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

const zone = "apps.example.com"

// session is one workstation under test and what it takes to drive it.
type session struct {
	t      *testing.T
	w      *Workstation
	plugin string
	rec    recorder
}

func (s *session) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// run runs argv in the workstation; it must succeed.
func (s *session) run(argv ...string) string {
	s.t.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	out, err := s.w.Run(ctx, argv[0], argv[1:]...)
	require.NoError(s.t, err)
	return string(out)
}

// shell runs a command line exactly as the plugin prints it; it must succeed.
func (s *session) shell(line string) string {
	s.t.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	out, err := s.w.Shell(ctx, line)
	require.NoError(s.t, err, "%s", line)
	s.t.Logf("$ %s\n%s", line, out)
	return string(out)
}

// link is the workstation interface's state as `resolvectl status IFACE` prints it, read by
// the plugin's own parser.
func (s *session) link() ws.ResolvedLink {
	s.t.Helper()
	links := ws.ParseResolvectlStatus([]byte(s.run("resolvectl", "status", "--no-pager", wsIface)))
	require.Len(s.t, links, 1)
	return links[0]
}

// query asks systemd-resolved for name's A records (resolvectl query) and returns the
// addresses, sorted.
func (s *session) query(name string) []string {
	s.t.Helper()
	return QueryAddrs(s.run("resolvectl", "query", "-t", "A", name))
}

// freshName is a name in the zone no cache has seen.
func freshName(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "ws-" + hex.EncodeToString(b) + "." + zone
}

// clientReport is the part of client-check's JSON report the test reads.
type clientReport struct {
	Checks []struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Findings []struct {
			Code        string `json:"code"`
			Message     string `json:"message"`
			Remediation string `json:"remediation"`
		} `json:"findings"`
	} `json:"checks"`
}

func (r clientReport) status(id string) string {
	for _, c := range r.Checks {
		if c.ID == id {
			return c.Status
		}
	}
	return ""
}

func (r clientReport) finding(id, code string) (msg, remediation string, ok bool) {
	for _, c := range r.Checks {
		for _, f := range c.Findings {
			if c.ID == id && f.Code == code {
				return f.Message, f.Remediation, true
			}
		}
	}
	return "", "", false
}

// clientCheck runs the plugin's client-check inside the workstation, as a user of it would:
// its resolver is the machine's (/etc/resolv.conf: resolved's stub), its WS004 reads
// `resolvectl status`.
func (s *session) clientCheck() clientReport {
	s.t.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	cmd := s.w.Command(ctx, s.plugin, "client-check", "--zone", zone, "--dns-server", strings.Join(zoneServers, ","),
		"--outside-name", "example.org", "-o", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		s.t.Fatalf("client-check: %v: %s", err, stderr.String())
	}
	var r clientReport
	require.NoError(s.t, json.Unmarshal(stdout.Bytes(), &r), "%s", stdout.String())
	return r
}

// recorder writes real outputs to pkg/workstation/testdata/real when WORKSTATION_RECORD=1.
type recorder struct {
	dir      string
	versions string
}

func (r recorder) save(t *testing.T, name, scenario, command, out string) {
	t.Helper()
	if r.dir == "" {
		return
	}
	header := fmt.Sprintf("## Recorded from a real workstation: %s\n## (lab/internal/workstation, go test -tags lab -run TestRealWorkstation, WORKSTATION_RECORD=1).\n## Scenario: %s\n## Command: %s\n",
		r.versions, scenario, command)
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, name+".txt"), []byte(header+out), 0o644))
}

// record runs argv and saves its output.
func (s *session) record(name, scenario string, argv ...string) string {
	s.t.Helper()
	out := s.run(argv...)
	s.rec.save(s.t, name, scenario, strings.Join(argv, " "), out)
	return out
}

func buildPlugin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-lanaccess")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kubectl-lanaccess")
	cmd.Dir = filepath.Dir(labDir(t))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/kubectl-lanaccess: %s", out)
	return bin
}

func startWorkstation(t *testing.T, pkgs Packages, ipv4 IPv4, logDir string) *Workstation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	w, err := Start(ctx, Config{Packages: pkgs, NetNS: nsWS, Interface: wsIface, Profile: "Wired connection 1",
		IPv4: ipv4, StateDir: filepath.Join(t.TempDir(), "state"), LogDir: logDir, Debug: true})
	require.NoError(t, err)
	t.Logf("workstation started in %s (%s)", time.Since(start).Round(time.Millisecond), pkgs.Describe())
	return w
}

// stopWorkstation stops it and proves nothing is left: no process in its mount namespace or
// in its network namespace, no state directory, nothing written to the machine's /var/lib.
func stopWorkstation(t *testing.T, w *Workstation, hadVarLibNM bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mnt, pids := w.MountNS(), w.Pids()
	require.NoError(t, w.Stop(ctx))
	left, err := PidsInMountNS(mnt)
	require.NoError(t, err)
	assert.Empty(t, left, "processes left in the workstation's mount namespace")
	for name, pid := range pids {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		assert.True(t, os.IsNotExist(err), "%s (pid %d) still exists", name, pid)
	}
	assertNothingIn(t, nsWS, w.Config().StateDir)
	if !hadVarLibNM {
		_, err = os.Stat("/var/lib/NetworkManager")
		assert.True(t, os.IsNotExist(err), "NetworkManager wrote to the machine's /var/lib")
	}
}

// TestRealWorkstation runs the seed's Linux client configuration and its failover on Debian's
// own NetworkManager and systemd-resolved, with the plugin's commands run exactly as printed.
// The parts run in order on one workstation: each starts from the state the last one left.
func TestRealWorkstation(t *testing.T) {
	requireRoot(t)
	r := &realRun{pkgs: lanPackages(t), plugin: buildPlugin(t), lan: newLAN(t)}
	r.dhcp = r.lan.startDHCP(context.Background(), r.pkgs)
	t.Cleanup(func() { _ = r.dhcp.Stop(context.Background()) })
	r.rec = recorder{versions: r.pkgs.Describe()}
	if os.Getenv("WORKSTATION_RECORD") == "1" {
		r.rec.dir = filepath.Join(filepath.Dir(labDir(t)), "pkg", "workstation", "testdata", "real")
		require.NoError(t, os.MkdirAll(r.rec.dir, 0o755))
	}
	_, err := os.Stat("/var/lib/NetworkManager")
	r.hadVarLibNM = err == nil
	r.logDir = filepath.Join(r.lan.dir, "logs")
	r.s = &session{t: t, w: startWorkstation(t, r.pkgs, IPv4{}, r.logDir), plugin: r.plugin, rec: r.rec}
	t.Cleanup(func() {
		if !r.stopped {
			_ = r.s.w.Stop(context.Background())
		}
		if t.Failed() {
			for _, name := range []string{procResolved, procNM} {
				t.Log(logTail(filepath.Join(r.logDir, name+".log"), 60))
			}
		}
	})
	r.target, err = ws.NewTarget(zone, zoneServers, nil)
	require.NoError(t, err)

	t.Run("DHCP alone: the network's DNS answers the zone with the public address", r.dhcpAlone)
	t.Run("client-config's Linux commands, run as printed, take effect", r.clientConfig)
	t.Run("a zone server stops: resolved moves to the next one and stays there", r.nextZoneServer)
	t.Run("the zone servers stop: resolved moves to the network's DNS and stays there", r.networksDNS)
	t.Run("the recovery: resolvectl flush-caches does not bring the link back, nmcli connection up does", r.recovery)
	t.Run("without the '.' block, one name outside the zone moves the link to the network's DNS", r.withoutDotBlock)
	t.Run("the transient setting replaces the link's servers, and its undo restores the profile's", r.transient)
	t.Run("a VPN link that claims names: the best routing domain wins", r.vpnRouting)
	t.Run("many servers, IPv6, a port and a server name: how resolvectl prints them", r.wideList)
	t.Run("global servers: a foreign /etc/resolv.conf is imported", r.globalServers)
	t.Run("client-config's removal takes the servers and the routing domain out", r.removal)
	t.Run("stop leaves nothing", r.stop)
	t.Run("a Start that times out, and Cleanup after a crash, leave nothing", r.failedStartAndCleanup)
	t.Run("a profile with a static DNS server keeps it first: the zone's servers are asked only when it fails", r.staticProfile)
	t.Run("CleanupDHCP ends the DHCP server by its pidfile", r.cleanupDHCP)
}

// realRun is what the parts of TestRealWorkstation share.
type realRun struct {
	s           *session
	lan         *lan
	pkgs        Packages
	plugin      string
	rec         recorder
	dhcp        *DHCPServer
	logDir      string
	hadVarLibNM bool
	stopped     bool
	target      ws.Target
	// ins is client-config's output for the profile, once clientConfig ran.
	ins ws.Instructions
}

// at points the session at the running (sub)test.
func (r *realRun) at(t *testing.T) *session {
	t.Helper()
	r.s.t = t
	return r.s
}

func (r *realRun) dhcpAlone(t *testing.T) {
	s := r.at(t)
	s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 1 })
	l := s.link()
	assert.Equal(t, []netip.Addr{netip.MustParseAddr(orgAddr)}, l.Servers)
	assert.Equal(t, []string{"lan"}, l.Domains, "DHCP's domain name is the link's search domain")
	assert.Contains(t, s.run("ip", "-4", "route", "show", "198.51.100.0/24"), "via "+orgAddr, "DHCP's classless static route")
	assert.Equal(t, []string{publicAddr}, s.query("grafana."+zone))
	s.record("dhcp-status", "DHCP only (the network's DNS 10.0.10.254, domain lan); before client-config", "resolvectl", "status", "--no-pager")
	rep := s.clientCheck()
	assert.Equal(t, "fail", rep.status("WS001"))
	_, _, ok := rep.finding("WS004", "WS004-NOT-CONFIGURED")
	assert.True(t, ok, "WS004 says the machine is not set up: %+v", rep)
}

func (r *realRun) clientConfig(t *testing.T) {
	s := r.at(t)
	first, err := ws.Generate(ws.Linux, r.target, ws.ConfigOptions{})
	require.NoError(t, err)
	active := s.shell(first.Apply[0].Command)
	s.rec.save(t, "nmcli-active", "DHCP only, the profile active on eth0", first.Apply[0].Command, active)
	profile, err := ProfileOn(active, wsIface)
	require.NoError(t, err)
	assert.Equal(t, "Wired connection 1", profile)

	r.ins, err = ws.Generate(ws.Linux, r.target, ws.ConfigOptions{Connection: profile, Device: wsIface, ProbeName: "grafana." + zone})
	require.NoError(t, err)
	for _, step := range r.ins.Apply {
		s.shell(step.Command)
	}
	s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	l := s.link()
	assert.Equal(t, addrs(append(slices.Clone(zoneServers), orgAddr)...), l.Servers,
		"the profile's servers come before the DHCP one, in the order given")
	assert.Equal(t, []string{"~" + zone}, l.Domains, "the routing domain; a profile with ipv4.dns-search drops DHCP's domain")
	require.NotNil(t, l.DefaultRoute)
	assert.True(t, *l.DefaultRoute)

	for _, step := range r.ins.Verify[:2] {
		s.shell(step.Command)
	}
	assert.Equal(t, zoneServers, s.query("grafana."+zone), "the zone resolves to the node addresses")
	assert.Equal(t, []string{outsideIP}, s.query("example.org"), "other names still resolve (through the zone server's forward)")
	assert.Equal(t, zoneServers[0], s.link().CurrentServer.String(), "resolved asks the first server")

	s.record("configured-status", "after client-config's commands; a query went to the first zone server", "resolvectl", "status", "--no-pager")
	s.record("configured-status-link", "after client-config's commands", "resolvectl", "status", "--no-pager", wsIface)
	s.record("configured-dns", "after client-config's commands", "resolvectl", "dns", wsIface)
	s.record("configured-domain", "after client-config's commands", "resolvectl", "domain", wsIface)
	s.record("configured-query", "after client-config's commands", "resolvectl", "query", "grafana."+zone)
	s.record("configured-nmcli-device", "after client-config's commands (what WS004 asks for the profile name)", "nmcli", "-g", "GENERAL.CONNECTION", "device", "show", wsIface)
	s.record("configured-resolv-conf", "after client-config's commands: resolved's list of upstream servers", "cat", "/run/systemd/resolve/resolv.conf")
	s.record("configured-stub-resolv-conf", "after client-config's commands: resolved's stub file", "cat", "/run/systemd/resolve/stub-resolv.conf")

	rep := s.clientCheck()
	for _, id := range []string{"WS001", "WS002", "WS003", "WS004"} {
		assert.Equal(t, "pass", rep.status(id), "%s: %+v", id, rep)
	}
}

func (r *realRun) nextZoneServer(t *testing.T) {
	s := r.at(t)
	r.lan.stopDNS(zoneNS(0))
	start := time.Now()
	assert.Equal(t, zoneServers, s.query(freshName(t)), "the next zone server answers")
	t.Logf("the query that found %s dead took %s", zoneServers[0], time.Since(start).Round(time.Millisecond))
	assert.Equal(t, zoneServers[1], s.link().CurrentServer.String())

	r.lan.startDNS(zoneNS(0), "zone")
	for range 3 {
		assert.Equal(t, zoneServers, s.query(freshName(t)))
	}
	assert.Equal(t, zoneServers[1], s.link().CurrentServer.String(), "resolved does not go back to the first server once it answers again")
	s.record("moved-next-status", "10.0.10.11 r.stopped, then back: resolved stays on 10.0.10.12", "resolvectl", "status", "--no-pager")
	rep := s.clientCheck()
	assert.Equal(t, "pass", rep.status("WS004"), "another zone server is fine: %+v", rep)
}

func (r *realRun) networksDNS(t *testing.T) {
	s := r.at(t)
	r.lan.stopDNS(zoneNS(1))
	r.lan.stopDNS(zoneNS(2))
	assert.Equal(t, []string{publicAddr}, s.query(freshName(t)), "the network's DNS answers the zone with the public address")
	assert.Equal(t, orgAddr, s.link().CurrentServer.String())
	r.lan.startDNS(zoneNS(1), "zone")
	r.lan.startDNS(zoneNS(2), "zone")
	for range 3 {
		assert.Equal(t, []string{publicAddr}, s.query(freshName(t)), "every zone server answers again, the link stays on the network's DNS")
	}
	assert.Equal(t, orgAddr, s.link().CurrentServer.String())
	s.record("moved-org-status", "all zone servers r.stopped, then back: resolved stays on the network's DNS 10.0.10.254", "resolvectl", "status", "--no-pager")
	s.record("moved-org-query", "stuck on the network's DNS", "resolvectl", "query", "grafana."+zone)

	rep := s.clientCheck()
	assert.Equal(t, "fail", rep.status("WS001"))
	assert.Equal(t, "pass", rep.status("WS003"), "the zone's servers answer: the workstation is the problem")
	msg, fix, ok := rep.finding("WS004", "WS004-OTHER-SERVER")
	require.True(t, ok, "WS004 names the state: %+v", rep)
	assert.Contains(t, msg, "asks "+orgAddr)
	assert.Equal(t, "resolvectl flush-caches\nsudo nmcli connection up 'Wired connection 1'", fix)
}

// Why, in systemd-stable v252.31's src/resolve: `resolvectl flush-caches` is
// manager_flush_caches (resolved-manager.c), which empties the caches and leaves every link's
// current server. `nmcli connection up` deactivates the profile first, and NetworkManager then
// sets the link's server list to nothing (resolved logs "eth0: Bus client reset DNS server
// list."): bus_link_method_set_dns_servers_internal (resolved-link-bus.c) unlinks every server,
// dns_server_unlink (resolved-dns-server.c) clears link->current_dns_server, and
// link_allocate_scopes (resolved-link.c) frees the link's DNS scope, its cache with it. Once
// the profile is up again, link_get_dns_server (resolved-link.c) picks the first server of
// the new list at the next query. The flush is therefore not needed for the link.
func (r *realRun) recovery(t *testing.T) {
	s := r.at(t)
	stuck := freshName(t)
	assert.Equal(t, []string{publicAddr}, s.query(stuck), "a wrong answer now in the cache")
	s.shell("resolvectl flush-caches")
	for range 3 {
		assert.Equal(t, []string{publicAddr}, s.query(freshName(t)))
	}
	assert.Equal(t, orgAddr, s.link().CurrentServer.String(), "flushing the caches leaves the current server (manager_flush_caches flushes caches only)")
	s.record("flushed-status", "stuck on the network's DNS, after resolvectl flush-caches alone", "resolvectl", "status", "--no-pager")
	assert.Equal(t, []string{publicAddr}, s.query(stuck), "cached again")

	s.shell("sudo nmcli connection up 'Wired connection 1'")
	s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	assert.Equal(t, zoneServers, s.query(stuck), "re-activating the profile alone drops the link's cache too")
	assert.Equal(t, zoneServers[0], s.link().CurrentServer.String(), "and starts again from the first server")
	s.record("recovered-status", "after nmcli connection up alone: back on the first zone server", "resolvectl", "status", "--no-pager")
	rep := s.clientCheck()
	assert.Equal(t, "pass", rep.status("WS004"), "%+v", rep)
	assert.Equal(t, "pass", rep.status("WS001"), "%+v", rep)
}

func (r *realRun) withoutDotBlock(t *testing.T) {
	// The seed keeps the '.' block "because some clients, systemd-resolved first, may send
	// any query to any DNS server of the link": without it CoreDNS answers REFUSED, and
	// resolved switches servers on REFUSED (resolved-dns-transaction.c,
	// dns_transaction_process_reply: "Server returned REFUSED, switching servers").
	s := r.at(t)
	r.lan.restartZone("zone-only")
	s.shell("sudo nmcli connection up 'Wired connection 1'")
	s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	assert.Equal(t, zoneServers, s.query(freshName(t)))
	assert.Equal(t, zoneServers[0], s.link().CurrentServer.String())
	assert.Equal(t, []string{outsideIP}, s.query("example.org"), "the network's DNS answers it in the end")
	assert.Equal(t, orgAddr, s.link().CurrentServer.String(), "after three REFUSED answers the link asks the network's DNS")
	assert.Equal(t, []string{publicAddr}, s.query(freshName(t)), "and the zone now gets the public address")
	s.record("refused-org-status", "zone servers without the '.' block: one query for example.org (REFUSED by each) moved the link to 10.0.10.254", "resolvectl", "status", "--no-pager")
	rep := s.clientCheck()
	assert.Equal(t, "fail", rep.status("WS001"), "%+v", rep)
	assert.Equal(t, "pass", rep.status("WS002"), "the outside name resolves: the network's DNS answers it")
	_, _, ok := rep.finding("WS004", "WS004-OTHER-SERVER")
	assert.True(t, ok, "%+v", rep)
	assert.Equal(t, "fail", rep.status("WS003"), "WS003 names the cause: %+v", rep)
	msg, _, ok := rep.finding("WS003", "WS003-REFUSES-OUTSIDE")
	assert.True(t, ok, "%+v", rep)
	assert.Contains(t, msg, "REFUSED for example.org")

	r.lan.restartZone("zone")
	s.shell("sudo nmcli connection up 'Wired connection 1'")
	s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	assert.Equal(t, []string{outsideIP}, s.query("example.org"))
	assert.Equal(t, zoneServers[0], s.link().CurrentServer.String(), "with the '.' block the zone server answers every name")
}

func (r *realRun) transient(t *testing.T) {
	s := r.at(t)
	s.shell(r.ins.Transient[0].Command)
	l := s.link()
	assert.Equal(t, addrs(zoneServers...), l.Servers)
	assert.Equal(t, []string{"~" + zone}, l.Domains)
	assert.Equal(t, zoneServers, s.query(freshName(t)))
	s.record("transient-status", "after client-config's transient resolvectl domain/dns commands", "resolvectl", "status", "--no-pager")
	s.shell(r.ins.TransientRemove[0].Command)
	s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
}

func (r *realRun) vpnRouting(t *testing.T) {
	s := r.at(t)
	defer func() {
		s.shell("resolvectl revert tun0")
		s.shell("sudo nmcli connection up 'Wired connection 1'")
		s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	}()
	s.shell("resolvectl dns tun0 " + vpnServer)
	for _, tc := range []struct {
		name, ours, theirs, link string
		answer                   []string
	}{
		// resolved sends a name to the links whose routing or search domain matches it
		// with the most labels ("~." matches every name with none), the default-route
		// links when none matches (resolved-dns-scope.c, dns_scope_good_domain).
		{"vpn-all-zone-routing", "~" + zone, "~.", "eth0", zoneServers},
		{"vpn-all-no-routing", "lan", "~.", "tun0", []string{publicAddr}},
		{"vpn-parent-no-routing", "lan", "~example.com", "tun0", []string{publicAddr}},
		{"vpn-same-zone", "~" + zone, "~" + zone, "", nil},
		{"vpn-other-no-routing", "lan", "~corp.internal", "eth0", zoneServers},
	} {
		s.shell("resolvectl domain eth0 '" + tc.ours + "' && resolvectl domain tun0 '" + tc.theirs + "' && resolvectl flush-caches")
		out := s.run("resolvectl", "query", "-t", "A", freshName(t))
		if tc.link != "" {
			assert.Contains(t, out, "-- link: "+tc.link, tc.name)
			assert.Equal(t, tc.answer, QueryAddrs(out), tc.name)
		}
		s.record(tc.name+"-status", fmt.Sprintf("eth0 domain %s, tun0 (a VPN, server %s) domain %s; a query for a name in the zone went to %s", tc.ours, vpnServer, tc.theirs, orNone(tc.link)), "resolvectl", "status", "--no-pager")
		s.rec.save(t, tc.name+"-query", "as "+tc.name+"-status", "resolvectl query -t A NAME", out)
	}
}

func (r *realRun) wideList(t *testing.T) {
	s := r.at(t)
	defer func() {
		s.shell("sudo nmcli connection up 'Wired connection 1'")
		s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	}()
	s.shell("resolvectl dns eth0 10.0.10.11 10.0.10.12 10.0.10.13 fd00:10::11 fd00:10::12 '[fd00:10::13]:5353#dns.example' 10.0.10.254:5353 10.0.10.254")
	s.shell("resolvectl domain eth0 '~apps.example.com' lan corp.example.com '~internal.example.com'")
	s.query(freshName(t))
	out := s.record("wide-status", "resolvectl dns/domain set eight servers (IPv6, a port, a server name) and four domains on eth0", "resolvectl", "status", "--no-pager")
	links := ws.ParseResolvectlStatus([]byte(out))
	require.Len(t, links, 3)
	assert.Len(t, links[1].Servers, 8, "every server, the wrapped lines included")
}

func (r *realRun) globalServers(t *testing.T) {
	s := r.at(t)
	require.NoError(t, s.w.SetResolvConf("nameserver "+orgAddr+"\nsearch corp.example\n"))
	defer func() { require.NoError(t, s.w.SetResolvConf(stubResolvConf)) }()
	s.query(freshName(t))
	var global ws.ResolvedLink
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := s.run("resolvectl", "status", "--no-pager")
		global = ws.ParseResolvectlStatus([]byte(out))[0]
		if strings.Contains(out, orgAddr+"\n") && strings.Contains(out, "corp.example") || time.Now().After(deadline) {
			s.rec.save(t, "global-status", "/etc/resolv.conf (foreign) lists 10.0.10.254 and search corp.example: resolved's global servers", "resolvectl status --no-pager", out)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.Equal(t, "Global", global.Name)
	assert.Equal(t, addrs(orgAddr), global.Servers, "the global section's servers")
	assert.Equal(t, []string{"corp.example"}, global.Domains)
}

func (r *realRun) removal(t *testing.T) {
	s := r.at(t)
	for _, step := range r.ins.Remove {
		s.shell(step.Command)
	}
	s.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 1 })
	l := s.link()
	assert.Equal(t, addrs(orgAddr), l.Servers)
	assert.Equal(t, []string{"lan"}, l.Domains)
	assert.Equal(t, []string{publicAddr}, s.query(freshName(t)))
}

func (r *realRun) stop(t *testing.T) {
	s := r.at(t)
	r.stopped = true
	stopWorkstation(t, s.w, r.hadVarLibNM)
}

func (r *realRun) failedStartAndCleanup(t *testing.T) {
	require.True(t, r.stopped, "run the whole TestRealWorkstation: this part needs %s to itself", nsWS)
	// The subtest's name holds commas, and so does its temporary directory: a state
	// directory must work whatever its path (overlay's options are comma-separated).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	_, err := Start(ctx, Config{Packages: r.pkgs, NetNS: nsWS, Interface: wsIface, StateDir: state, LogDir: r.logDir, Timeout: 300 * time.Millisecond})
	require.Error(t, err, "no profile activates within 300 ms")
	t.Logf("the expected error: %.200s", err)
	assertNothingIn(t, nsWS, state)

	// Another process (a lab test after lab up) attaches to a running workstation.
	w := startWorkstation(t, r.pkgs, IPv4{}, r.logDir)
	attached, err := Attach(w.Config())
	require.NoError(t, err)
	assert.Equal(t, w.Pids(), attached.Pids())
	out, err := attached.Run(ctx, "nmcli", "-g", "GENERAL.CONNECTION", "device", "show", wsIface)
	require.NoError(t, err)
	assert.Equal(t, "Wired connection 1\n", string(out))
	inside, err := attached.CopyIn("kubeconfig", []byte("apiVersion: v1\n"))
	require.NoError(t, err)
	out, err = attached.Run(ctx, "cat", inside)
	require.NoError(t, err)
	assert.Equal(t, "apiVersion: v1\n", string(out), "a file copied in is readable inside")

	// A crashed caller leaves its workstation running: Cleanup finds it by its pidfiles.
	mnt := w.MountNS()
	require.NoError(t, Cleanup(ctx, w.Config().StateDir))
	left, err := PidsInMountNS(mnt)
	require.NoError(t, err)
	assert.Empty(t, left)
	assertNothingIn(t, nsWS, w.Config().StateDir)
}

func (r *realRun) staticProfile(t *testing.T) {
	st := &session{t: t, plugin: r.plugin, rec: r.rec, w: startWorkstation(t, r.pkgs, IPv4{Method: "manual",
		Address: netip.MustParsePrefix("10.0.10.40/24"), Gateway: netip.MustParseAddr(orgAddr), DNS: addrs(orgAddr)}, r.logDir)}
	defer stopWorkstation(t, st.w, r.hadVarLibNM)
	for _, step := range r.ins.Apply {
		st.shell(step.Command)
	}
	st.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	assert.Equal(t, addrs(append([]string{orgAddr}, zoneServers...)...), st.link().Servers, "+ipv4.dns appends after the profile's own server")
	assert.Equal(t, []string{publicAddr}, st.query(freshName(t)), "the first server, the network's DNS, answers the zone")
	assert.Equal(t, orgAddr, st.link().CurrentServer.String())
	st.record("static-first-status", "a manual profile with ipv4.dns 10.0.10.254, after client-config's commands", "resolvectl", "status", "--no-pager")
	rep := st.clientCheck()
	assert.Equal(t, "fail", rep.status("WS001"), "%+v", rep)
	msg, fix, ok := rep.finding("WS004", "WS004-OTHER-SERVER")
	require.True(t, ok, "%+v", rep)
	assert.Contains(t, msg, "lists "+orgAddr+" before the zone's servers")

	// The seed's reset (flush the caches, re-activate the profile) starts from the same
	// first server again.
	st.shell("resolvectl flush-caches && sudo nmcli connection up 'Wired connection 1'")
	st.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	assert.Equal(t, []string{publicAddr}, st.query(freshName(t)))
	assert.Equal(t, orgAddr, st.link().CurrentServer.String(), "a reset does not help when the network's DNS is listed first")

	// WS004's remediation, run as printed, moves it after the zone's servers.
	for line := range strings.SplitSeq(fix, "\n") {
		st.shell(line)
	}
	st.waitLink(func(l ws.ResolvedLink) bool { return len(l.Servers) == 4 })
	assert.Equal(t, addrs(append(slices.Clone(zoneServers), orgAddr)...), st.link().Servers)
	assert.Equal(t, zoneServers, st.query(freshName(t)))
	rep = st.clientCheck()
	for _, id := range []string{"WS001", "WS004"} {
		assert.Equal(t, "pass", rep.status(id), "%s after WS004's remediation: %+v", id, rep)
	}
}

func (r *realRun) cleanupDHCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pid := r.dhcp.Pid()
	require.NoError(t, CleanupDHCP(ctx, filepath.Join(r.lan.dir, "dhcp")))
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	assert.True(t, os.IsNotExist(err), "dnsmasq (pid %d) is gone", pid)
}

// assertNothingIn: no process in ns, no state directory.
func assertNothingIn(t *testing.T, ns, state string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(string(out)), "processes left in %s", ns)
	_, err = os.Stat(state)
	assert.True(t, os.IsNotExist(err), "%s is removed", state)
}

func orNone(s string) string {
	if s == "" {
		return "both links"
	}
	return s
}

// waitLink polls `resolvectl status IFACE` until cond holds: NetworkManager hands the
// profile's settings to resolved just after the activation completes.
func (s *session) waitLink(cond func(ws.ResolvedLink) bool) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		l := s.link()
		if cond(l) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the link never reached the expected state: %+v", l)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}
