//go:build lab

package e2e

import (
	"bytes"
	"context"
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
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/workstation"
	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
	"github.com/lanaccess/kubectl-lanaccess/pkg/replay"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// The laptop is a real Linux workstation: Debian's NetworkManager and systemd-resolved, its
// LAN interface on DHCP from the organisation's router (lab/internal/labctl/workstation.go).
// These tests run the plugin's client-config commands on it as printed, judge the result with
// client-check, and reproduce the seed's failover with the lab's real lan-dns pods.

const (
	wsZone      = "apps.example.com"
	wsProbeName = "grafana." + wsZone
	// The lab's public DNS answers the zone with the VPN-only address (lab/internal/labctl/internet.go).
	wsPublicAddr = "198.51.100.80"
)

// wsSession drives the laptop's workstation in one test.
type wsSession struct {
	t      *testing.T
	w      *workstation.Workstation
	plugin string
	rec    string // pkg/workstation/testdata/real when WORKSTATION_RECORD=1
}

func newWSSession(t *testing.T) *wsSession {
	t.Helper()
	plugin, err := lanaccessBinary()
	require.NoError(t, err)
	s := &wsSession{t: t, w: lab.LaptopWorkstation(t), plugin: plugin}
	if os.Getenv("WORKSTATION_RECORD") == "1" {
		s.rec = filepath.Join(filepath.Dir(lab.LabDir), "pkg", "workstation", "testdata", "real")
	}
	return s
}

// run runs argv inside the workstation; it must succeed.
func (s *wsSession) run(argv ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := s.w.Run(ctx, argv[0], argv[1:]...)
	require.NoError(s.t, err)
	return string(out)
}

// typed runs a command line the plugin printed, as typed at a shell prompt: the line is read by
// a shell parser (mvdan.cc/sh), each simple command becomes its argv (quotes removed as the
// shell does), commands joined by && run in order while they succeed, and `sudo` is dropped
// (everything in the lab runs as root). A line with anything else (a pipe, a variable, a
// substitution) fails the test: the printed command would then depend on more than its words.
func (s *wsSession) typed(line string) string {
	s.t.Helper()
	cmds, err := typedCommands(line)
	require.NoError(s.t, err, "%s", line)
	var out strings.Builder
	for _, argv := range cmds {
		if argv[0] == "kubectl" && len(argv) > 1 && argv[1] == "lanaccess" {
			argv = append([]string{s.plugin}, argv[2:]...)
		}
		out.WriteString(s.run(argv...))
	}
	s.t.Logf("$ %s\n%s", line, out.String())
	return out.String()
}

// typedCommands splits a printed command line into the argv of each command.
func typedCommands(line string) ([][]string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, err
	}
	var cmds [][]string
	var walk func(syntax.Command) error
	walk = func(c syntax.Command) error {
		switch c := c.(type) {
		case *syntax.CallExpr:
			var argv []string
			for _, w := range c.Args {
				lit, err := expand.Literal(nil, w)
				if err != nil {
					return err
				}
				argv = append(argv, lit)
			}
			if len(argv) > 0 && argv[0] == "sudo" {
				argv = argv[1:]
			}
			if len(argv) == 0 {
				return errors.New("an empty command")
			}
			cmds = append(cmds, argv)
			return nil
		case *syntax.BinaryCmd:
			if c.Op != syntax.AndStmt {
				return fmt.Errorf("operator %s", c.Op)
			}
			if err := walk(c.X.Cmd); err != nil {
				return err
			}
			return walk(c.Y.Cmd)
		}
		return fmt.Errorf("a %T", c)
	}
	for _, st := range f.Stmts {
		if len(st.Redirs) > 0 || st.Background || st.Negated {
			return nil, errors.New("redirections, & or ! in a printed command")
		}
		if err := walk(st.Cmd); err != nil {
			return nil, err
		}
	}
	return cmds, nil
}

// link is the laptop interface's state, read by the plugin's own parser.
func (s *wsSession) link() ws.ResolvedLink {
	s.t.Helper()
	links := ws.ParseResolvectlStatus([]byte(s.run("resolvectl", "status", "--no-pager", labkit.LaptopInterface)))
	require.Len(s.t, links, 1)
	return links[0]
}

// waitServers waits until NetworkManager has handed n servers to resolved for the link.
func (s *wsSession) waitServers(n int) ws.ResolvedLink {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l := s.link()
		if len(l.Servers) == n {
			return l
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the link never got %d DNS servers: %+v", n, l)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// query asks resolved (resolvectl query) for name's A records; sorted addresses.
func (s *wsSession) query(name string) []string {
	s.t.Helper()
	return workstation.QueryAddrs(s.run("resolvectl", "query", "-t", "A", name))
}

// fresh is a name in the zone that no cache holds.
func (s *wsSession) fresh() string {
	return fmt.Sprintf("ws-%d.%s", time.Now().UnixNano(), wsZone)
}

func (s *wsSession) current() string {
	s.t.Helper()
	return s.link().CurrentServer.String()
}

// record saves argv's output to testdata/real (WORKSTATION_RECORD=1) and returns it.
func (s *wsSession) record(name, scenario string, argv ...string) string {
	s.t.Helper()
	out := s.run(argv...)
	if s.rec != "" {
		header := fmt.Sprintf("## Recorded from the lab's laptop: %s\n## (lab/e2e, go test -tags lab -run TestRealWorkstation, WORKSTATION_RECORD=1).\n## Scenario: %s\n## Command: %s\n",
			s.w.Config().Packages.Describe(), scenario, strings.Join(argv, " "))
		require.NoError(s.t, os.WriteFile(filepath.Join(s.rec, name+".txt"), []byte(header+out), 0o644))
	}
	return out
}

// clientCheck runs the printed verification command (kubectl lanaccess client-check ...) on the
// workstation, with -o json and the lab's outside name, and decodes the report.
func (s *wsSession) clientCheck(verify string) report {
	s.t.Helper()
	return s.clientCheckCase(verify, "")
}

// clientCheckCase is clientCheck that, when `make replays` sets LANACCESS_REPLAY_SAVE, also
// leaves its bundle and verdicts as testdata/replays/<name>: the offline replay cases of
// client-check (a real NetworkManager and systemd-resolved, which no fixture stands in for).
func (s *wsSession) clientCheckCase(verify, name string) report {
	s.t.Helper()
	save := ""
	if dir := os.Getenv(replaySaveEnv); dir != "" && name != "" {
		save = filepath.Join(dir, name)
	}
	cmds, err := typedCommands(verify)
	require.NoError(s.t, err)
	require.Len(s.t, cmds, 1)
	argv := cmds[0]
	require.Equal(s.t, []string{"kubectl", "lanaccess", "client-check"}, argv[:3], verify)
	argv = append(append([]string{s.plugin}, argv[2:]...), "--outside-name", "example.org", "-o", "json")
	bundle := ""
	if os.Getenv(replayEveryEnv) == "1" || save != "" {
		bundle = filepath.Join(s.t.TempDir(), "client-check.gz")
		argv = append(argv, "--record", bundle)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := s.w.Command(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		s.t.Fatalf("client-check: %v: %s", err, stderr.String())
	}
	var r report
	require.NoError(s.t, json.Unmarshal(stdout.Bytes(), &r), "%s", stdout.String())
	if bundle != "" {
		live := result{Stdout: stdout.String(), Stderr: stderr.String()}
		if exit != nil {
			live.Code = exit.ExitCode()
		}
		checkReplay(s.t, "client-check", bundle, live)
		if save != "" {
			want, err := replay.Verdicts(stdout.Bytes())
			require.NoError(s.t, err)
			saveCase(s.t, save, bundle, want)
		}
	}
	return r
}

func status(r report, id string) string {
	for _, c := range r.Checks {
		if c.ID == id {
			return c.Status
		}
	}
	return ""
}

func findingOf(r report, id, code string) (finding, bool) {
	for _, c := range r.Checks {
		for _, f := range c.Findings {
			if c.ID == id && f.Code == code {
				return f, true
			}
		}
	}
	return finding{}, false
}

// clientConfig runs the plugin's client-config for Linux against the lab (zone and servers
// from the cluster) and decodes its JSON.
func clientConfig(t *testing.T, extra ...string) ws.Instructions {
	t.Helper()
	r := runPlugin(t, append([]string{"client-config", "--os", "linux", "--host", wsProbeName, "-o", "json"}, extra...)...)
	require.Equal(t, 0, r.Code, r.Stderr)
	var ins ws.Instructions
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &ins), r.Stdout)
	return ins
}

// scaleLanDNS sets lan-dns's replicas and waits until the Deployment and the Services agree.
func scaleLanDNS(t *testing.T, replicas int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), labkit.OpTimeout)
	defer cancel()
	_, err := lab.Client.AppsV1().Deployments("traefik").UpdateScale(ctx, "lan-dns",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "lan-dns", Namespace: "traefik"}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}},
		metav1.UpdateOptions{})
	require.NoError(t, err)
	lab.WaitRollout(t, "traefik", "lan-dns")
}

// resetProfile takes the zone's servers out of the profile (a run that failed half-way) and
// re-activates it: the laptop is back on DHCP's settings alone.
func (s *wsSession) resetProfile() {
	s.t.Helper()
	s.run("nmcli", "connection", "modify", labkit.WorkstationProfile, "ipv4.dns", "", "ipv4.dns-search", "")
	s.run("nmcli", "connection", "up", labkit.WorkstationProfile)
	s.waitServers(1)
}

// TestRealWorkstation: client-config's Linux commands, run as printed on the laptop's real
// NetworkManager, make the zone resolve to the node addresses (client-check passes, where it
// failed before); when every lan-dns replica goes, systemd-resolved moves to the network's DNS
// and stays there after they are back (client-check names it), and the documented recovery
// brings it back.
func TestRealWorkstation(t *testing.T) {
	start := time.Now()
	s := newWSSession(t)
	d, err := lab.Client.AppsV1().Deployments("traefik").Get(context.Background(), "lan-dns", metav1.GetOptions{})
	require.NoError(t, err)
	replicas := *d.Spec.Replicas
	t.Cleanup(func() {
		scaleLanDNS(t, replicas)
		s.resetProfile()
	})
	dhcpDNS := lab.InternetDNS()

	// Before: DHCP's settings alone. The network's DNS answers the zone with the public address.
	l := s.waitServers(1)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr(dhcpDNS)}, l.Servers, "DHCP's DNS server")
	assert.Equal(t, []string{"lan"}, l.Domains, "DHCP's domain name")
	assert.Equal(t, []string{wsPublicAddr}, s.query(wsProbeName))
	s.record("lab-dhcp-status", "the lab's laptop on DHCP alone (the network's DNS 198.51.100.53, domain lan), before client-config", "resolvectl", "status", "--no-pager")

	// client-config without a profile: its first command lists the active ones.
	first := clientConfig(t)
	require.NotEmpty(t, first.Apply)
	active := s.typed(first.Apply[0].Command)
	profile, err := workstation.ProfileOn(active, labkit.LaptopInterface)
	require.NoError(t, err)
	assert.Equal(t, labkit.WorkstationProfile, profile)

	// What the caveat about DHCP's domain says to read first.
	dhcpDomain := strings.TrimSpace(s.run("nmcli", "-g", "IP4.DOMAIN", "device", "show", labkit.LaptopInterface))
	assert.Equal(t, "lan", dhcpDomain)

	ins := clientConfig(t, "--connection", profile, "--device", labkit.LaptopInterface)
	require.Len(t, ins.Verify, 3)
	before := s.clientCheckCase(ins.Verify[2].Command, "lab-client-check-dhcp-only")
	assert.Equal(t, "fail", status(before, "WS001"), "%+v", before)
	_, ok := findingOf(before, "WS004", "WS004-NOT-CONFIGURED")
	assert.True(t, ok, "WS004 says the profile lacks the zone's servers: %+v", before)
	// WS001's fix is the setup (re-activating the profile would change nothing here), and that
	// command, typed with this profile, prints the same commands as client-config from the cluster.
	f, ok := findingOf(before, "WS001", "WS001-OTHER-ADDRESSES")
	require.True(t, ok, "%+v", before)
	fix, err := typedCommands(f.Remediation)
	require.NoError(t, err)
	require.Len(t, fix, 1)
	require.Equal(t, []string{"kubectl", "lanaccess", "client-config"}, fix[0][:3], f.Remediation)
	fromFix := runPlugin(t, append(fix[0][2:], "--connection", profile, "--device", labkit.LaptopInterface, "--host", wsProbeName, "-o", "json")...)
	require.Equal(t, 0, fromFix.Code, fromFix.Stderr)
	var insFix ws.Instructions
	require.NoError(t, json.Unmarshal([]byte(fromFix.Stdout), &insFix))
	assert.Equal(t, ins.Apply, insFix.Apply, "WS001's fix prints the same setup")

	t.Run("client-config's commands, typed as printed, take effect", func(t *testing.T) {
		s.t = t
		for _, step := range ins.Apply {
			s.typed(step.Command)
		}
		l := s.waitServers(4)
		want := append(slices.Clone(ins.Servers), dhcpDNS)
		assert.Equal(t, want, addrStrings(l.Servers), "the profile's servers first, then DHCP's")
		assert.Contains(t, l.Domains, "~"+wsZone)
		s.typed(ins.Verify[0].Command)
		assert.Equal(t, lab.NodeIPs(), s.query(wsProbeName), "the zone resolves to the node addresses")
		assert.Contains(t, s.typed(ins.Verify[1].Command), lab.NodeIPs()[0])
		assert.Equal(t, ins.Servers[0], s.current())
		s.record("lab-configured-status", "after client-config's commands on the lab's laptop", "resolvectl", "status", "--no-pager")
		r := s.clientCheckCase(ins.Verify[2].Command, "lab-client-check-configured")
		for _, id := range []string{"WS001", "WS002", "WS003", "WS004"} {
			assert.Equal(t, "pass", status(r, id), "%s: %+v", id, r)
		}
	})

	t.Run("DHCP's search domain: dropped by the routing domain, kept by the caveat's command", func(t *testing.T) {
		s.t = t
		assert.NotContains(t, s.link().Domains, "lan", "NetworkManager prefers the profile's searches to DHCP's domains")
		var keep string
		for _, c := range ins.Caveats {
			if _, cmd, ok := strings.Cut(c, "keep it with: "); ok {
				keep = cmd
			}
		}
		require.NotEmpty(t, keep, "client-config's caveat gives the command: %q", ins.Caveats)
		s.typed(strings.Replace(keep, "DOMAIN", dhcpDomain, 1))
		s.typed(ins.Apply[len(ins.Apply)-1].Command) // nmcli connection up
		l := s.waitServers(4)
		assert.Equal(t, []string{"~" + wsZone, dhcpDomain}, l.Domains)
		assert.Equal(t, lab.NodeIPs(), s.query(wsProbeName), "the zone still goes to its servers")
	})

	t.Run("every lan-dns replica gone: resolved moves to the network's DNS and stays there", func(t *testing.T) {
		s.t = t
		failover := time.Now()
		scaleLanDNS(t, 0)
		assert.Equal(t, []string{wsPublicAddr}, s.query(s.fresh()), "the network's DNS answers the zone with the public address")
		assert.Equal(t, dhcpDNS, s.current())
		scaleLanDNS(t, replicas)
		for _, ip := range lab.NodeIPs() {
			out := lab.MustExec(t, lab.Laptop(), "dig", "+short", "+time=2", "+tries=2", "@"+ip, wsProbeName)
			assert.NotEmpty(t, strings.TrimSpace(out), "lan-dns answers again on %s", ip)
		}
		for range 3 {
			assert.Equal(t, []string{wsPublicAddr}, s.query(s.fresh()), "the zone's servers answer again; the link stays on the network's DNS")
		}
		assert.Equal(t, dhcpDNS, s.current())
		s.record("lab-moved-org-status", "lan-dns scaled to 0 and back: resolved stays on the network's DNS 198.51.100.53", "resolvectl", "status", "--no-pager")

		r := s.clientCheckCase(ins.Verify[2].Command, "lab-client-check-stuck-fallback")
		assert.Equal(t, "fail", status(r, "WS001"), "%+v", r)
		assert.Equal(t, "pass", status(r, "WS003"), "the zone's servers answer: the workstation is what is wrong")
		f, ok := findingOf(r, "WS004", "WS004-OTHER-SERVER")
		require.True(t, ok, "WS004 names the state: %+v", r)
		assert.Contains(t, f.Message, "asks "+dhcpDNS)
		assert.Equal(t, "resolvectl flush-caches\nsudo nmcli connection up 'Wired connection 1'", f.Remediation)

		// doctor on the laptop: its system resolver (resolved's stub) now gives the public address.
		doc := runPlugin(t, "doctor", "-o", "json", "--ca-file", lab.CAFile, "--no-helpers", "--timeout", "2s", "--only", "LA402")
		la402 := findings(t, doc, "LA402")
		require.NotEmpty(t, la402)
		assert.Contains(t, la402[0].Message, wsPublicAddr, "doctor's LA402 says the system resolver gives the public address")

		// The recovery. resolvectl flush-caches alone changes nothing: in systemd v252,
		// manager_flush_caches (src/resolve/resolved-manager.c) empties each scope's cache and
		// leaves link->current_dns_server as it is.
		s.typed("resolvectl flush-caches")
		assert.Equal(t, []string{wsPublicAddr}, s.query(s.fresh()))
		assert.Equal(t, dhcpDNS, s.current(), "flush-caches alone leaves the link on the network's DNS")
		s.record("lab-flushed-status", "stuck on 198.51.100.53, after resolvectl flush-caches alone", "resolvectl", "status", "--no-pager")

		// WS004's remediation as printed. `nmcli connection up` deactivates the profile first,
		// and NetworkManager sends resolved an empty server list for the link ("Bus client reset
		// DNS server list."): systemd v252's bus_link_method_set_dns_servers_internal
		// (src/resolve/resolved-link-bus.c) marks every server and dns_server_unlink_marked
		// unlinks them all; dns_server_unlink (resolved-dns-server.c) clears
		// link->current_dns_server. Once the profile is up again, link_get_dns_server
		// (resolved-link.c) starts from the first server of the new list.
		for line := range strings.SplitSeq(f.Remediation, "\n") {
			s.typed(line)
		}
		s.waitServers(4)
		assert.Equal(t, lab.NodeIPs(), s.query(s.fresh()))
		assert.Equal(t, ins.Servers[0], s.current(), "back on the first zone server")
		s.record("lab-recovered-status", "after WS004's remediation (flush-caches, nmcli connection up): back on 10.0.10.11", "resolvectl", "status", "--no-pager")
		r = s.clientCheck(ins.Verify[2].Command)
		for _, id := range []string{"WS001", "WS004"} {
			assert.Equal(t, "pass", status(r, id), "%s after the recovery: %+v", id, r)
		}
		doc = runPlugin(t, "doctor", "-o", "json", "--ca-file", lab.CAFile, "--no-helpers", "--timeout", "2s", "--only", "LA402")
		la402 = findings(t, doc, "LA402")
		require.NotEmpty(t, la402)
		assert.Contains(t, la402[0].Message, "already gives the LAN addresses", "doctor's LA402: this machine uses the LAN DNS")
		t.Logf("failover and recovery took %s", time.Since(failover).Round(100*time.Millisecond))
	})

	t.Run("client-config's removal takes the servers and the routing domain out", func(t *testing.T) {
		s.t = t
		for _, step := range ins.Remove {
			s.typed(step.Command)
		}
		l := s.waitServers(1)
		assert.Equal(t, []netip.Addr{netip.MustParseAddr(dhcpDNS)}, l.Servers)
		assert.Equal(t, []string{"lan"}, l.Domains)
		assert.Equal(t, []string{wsPublicAddr}, s.query(s.fresh()))
	})
	t.Logf("TestRealWorkstation took %s", time.Since(start).Round(100*time.Millisecond))
}

func findings(t *testing.T, r result, id string) []finding {
	t.Helper()
	require.True(t, r.hasJSON)
	for _, c := range r.Doc.Checks {
		if c.ID == id {
			return c.Findings
		}
	}
	t.Fatalf("no %s in the report: %s", id, r.Stdout)
	return nil
}

func addrStrings(a []netip.Addr) []string {
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = x.String()
	}
	return out
}
