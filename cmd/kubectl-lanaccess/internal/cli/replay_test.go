package cli

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/internal/workstationtest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/replay"
	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// replaysDir holds the replay cases: <case>/bundle.gz, written by --record (the lab's
// TestReplayGivesTheLiveVerdicts writes its variants there with LANACCESS_REPLAY_SAVE, a
// user's bundle attached to a bug report is one more directory), and <case>/expect, the
// verdicts of the recorded run (replay.Verdicts).
const replaysDir = "../../../../testdata/replays"

// neverConnect fails the test if a replay asks for real cluster clients.
func neverConnect(t *testing.T) clientFactory {
	t.Helper()
	return func(*kubeFlags, time.Duration) (*clients, error) {
		t.Errorf("a replay asked for cluster clients")
		return nil, usageErr("no cluster in this test")
	}
}

// runRoot runs the root command with args as main does and returns stdout, stderr and the
// exit code.
func runRoot(t *testing.T, connect clientFactory, args ...string) (string, string, int) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := newRoot(streams, connect)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), errOut.String(), exitCodeOf(err)
}

func exitCodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	return exitCodeOfError(err)
}

func replayCases(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(replaysDir, "*", "bundle.gz"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "no replay case under %s", replaysDir)
	return dirs
}

// TestReplaysGiveTheirExpectedVerdicts judges every bundle under testdata/replays with no
// cluster and no network, and compares with the recorded run's verdicts.
func TestReplaysGiveTheirExpectedVerdicts(t *testing.T) {
	for _, bundle := range replayCases(t) {
		dir := filepath.Dir(bundle)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := replay.ReadFile(bundle)
			require.NoError(t, err)
			want, err := os.ReadFile(filepath.Join(dir, "expect"))
			require.True(t, err == nil || *updateDocs, "%s: %v", dir, err)
			start := time.Now()
			stdout, stderr, _ := runRoot(t, neverConnect(t), b.Command, "-o", "json", "--replay", bundle)
			got, err := replay.Verdicts([]byte(stdout))
			require.NoError(t, err, "stdout %s\nstderr %s", stdout, stderr)
			if *updateDocs {
				// A new case (a user's bundle): its expect is the replay's verdicts, to be
				// checked against the recorded run's report before it is committed.
				require.NoError(t, os.WriteFile(filepath.Join(dir, "expect"), []byte(got), 0o600))
				return
			}
			assert.Equal(t, string(want), got)
			t.Logf("%s replayed in %s", filepath.Base(dir), time.Since(start).Round(time.Millisecond))
		})
	}
}

// statusesAndCodes is the shape of verdicts without the objects and fixes, which name what
// anonymizing renames.
var objectsAndFixes = regexp.MustCompile(`(?m)^(  \S+ \S+) .*$|^    \|.*\n`)

// TestAnonymizedBundlesHoldNoOriginalNameAndJudgeTheSame anonymizes every bundle: none of
// its names (namespaces, objects, nodes), hosts or addresses remains, and the replay gives the
// same statuses and finding codes on the stand-ins.
func TestAnonymizedBundlesHoldNoOriginalNameAndJudgeTheSame(t *testing.T) {
	for _, bundle := range replayCases(t) {
		dir := filepath.Dir(bundle)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := replay.ReadFile(bundle)
			require.NoError(t, err)
			anon := filepath.Join(t.TempDir(), "anon.gz")
			require.NoError(t, replay.Anonymize(b).WriteFile(anon))
			plain := gunzip(t, anon)
			for _, original := range originalNames(t, b) {
				assert.NotRegexp(t, `(^|[^a-z0-9-])`+regexp.QuoteMeta(original)+`($|[^a-z0-9-])`, plain, "%s remains", original)
			}
			// The certificates are base64 in the JSON: they are re-issued stand-ins, whose DER
			// holds none of the names either.
			ab, err := replay.ReadFile(anon)
			require.NoError(t, err)
			require.Len(t, ab.Certificates, len(b.Certificates), "every certificate has its stand-in")
			for i, der := range ab.Certificates {
				assert.NotEqual(t, b.Certificates[i], der)
				for _, original := range originalNames(t, b) {
					assert.NotContains(t, string(der), original, "certificate %d holds %s", i, original)
				}
			}
			want, err := os.ReadFile(filepath.Join(dir, "expect"))
			require.NoError(t, err)
			stdout, stderr, _ := runRoot(t, neverConnect(t), b.Command, "-o", "json", "--replay", anon)
			got, err := replay.Verdicts([]byte(stdout))
			require.NoError(t, err, "stderr %s", stderr)
			assert.Equal(t, objectsAndFixes.ReplaceAllString(string(want), "$1"), objectsAndFixes.ReplaceAllString(got, "$1"))
		})
	}
}

// originalNames are the lab's own names, hosts and addresses: its namespaces and objects
// (but the software names anonymizing keeps, traefik here), its nodes, its zone and its LAN.
func originalNames(t *testing.T, b *replay.Bundle) []string {
	t.Helper()
	names := []string{"node-1", "node-2", "node-3", "node-vpn", "lan-dns", "grafana", "prometheus", "apps.example.com",
		"example.com", "10.0.10.11", "10.0.10.12", "10.0.10.13", "10.0.10.10", "lanaccess-lab", "0B0A000A", "0C0A000A",
		"wrong.example.net", "example.net"}
	raw := gunzipRaw(t, b)
	// What each command reads for sure: doctor, the proxy's side; vpn-trace, the nodes and the
	// VPN pod's (which other workloads it sees depends on what runs in the lab then);
	// client-check, the zone and the addresses on the laptop.
	held := names[:6]
	switch b.Command {
	case "vpn-trace":
		held = []string{"node-1", "node-vpn", "openvpn", "10.0.10.11"}
	case "client-check": // the laptop's side: the zone and the node addresses it asks
		held = []string{"apps.example.com", "10.0.10.11", "10.0.10.12", "10.0.10.13"}
	}
	for _, n := range held {
		require.Contains(t, raw, n, "the original bundle names %s: the test would prove nothing", n)
	}
	return names
}

func gunzipRaw(t *testing.T, b *replay.Bundle) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "b.gz")
	require.NoError(t, b.WriteFile(path))
	return gunzip(t, path)
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	out := &strings.Builder{}
	zr, err := gzipReader(f)
	require.NoError(t, err)
	_, err = copyBounded(out, zr)
	require.NoError(t, err)
	return out.String()
}

// TestClientCheckRecordsAndReplaysTheSameVerdicts: client-check's seams (the system resolver,
// the direct DNS questions, resolvectl, the files) go into the bundle, and the replay judges
// them alike with none of them reachable.
func TestClientCheckRecordsAndReplaysTheSameVerdicts(t *testing.T) {
	org := &probetest.Zone{Zone: "apps.example.com.", Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.10")}, TTL: 300,
		Outside: map[string][]netip.Addr{"example.org.": {netip.MustParseAddr("198.51.100.7")}}}
	bundle := filepath.Join(t.TempDir(), "client.gz")
	live, err := clientCheckAgainst(t, org, string(workstationtest.Output(t, "lab-moved-org-status")), "json", func(f *CheckFlags) {
		f.tape = &tape{command: catalogue.ClientCheck, path: bundle}
	})
	require.Error(t, err)
	b, err := replay.ReadFile(bundle)
	require.NoError(t, err)
	assert.Equal(t, "linux", b.OS)
	assert.NotEmpty(t, b.Commands, "resolvectl's output is in the bundle")
	assert.NotEmpty(t, b.Lookups)
	assert.NotEmpty(t, b.DNS)

	f := NewCheckFlags()
	f.Output, f.tape = "json", &tape{command: catalogue.ClientCheck, path: bundle, play: replay.NewPlayer(b)}
	o := clientCheckOptions{
		Checks: f, OS: workstation.Windows, ProbeName: "lanaccess-99999999.{zone}", OutsideName: "example.org", DNSPort: 53,
		Target: func(context.Context) (workstationTarget, error) {
			target, err := workstation.NewTarget("apps.example.com", probe.AddrStrings(seedAddrs()), probe.AddrStrings(seedAddrs()))
			return workstationTarget{Target: target, Source: "test"}, err
		},
	}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	err = o.Run(context.Background(), streams)
	require.Error(t, err)
	want, err := replay.Verdicts([]byte(live))
	require.NoError(t, err)
	got, err := replay.Verdicts(out.Bytes())
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Contains(t, got, "WS001 fail")
}

func TestReplayRefusesWhatItCannotJudge(t *testing.T) {
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.json")
	require.NoError(t, os.WriteFile(newer, []byte(`{"format":"kubectl-lanaccess-replay","version":9,"tool":"v9.9.9","command":"doctor"}`), 0o600))
	foreign := filepath.Join(dir, "foreign.json")
	require.NoError(t, os.WriteFile(foreign, []byte(`{"kind":"List"}`), 0o600))
	cases := map[string]struct {
		args []string
		want string
	}{
		"another command's": {[]string{"vpn-trace", "--replay", filepath.Join(replaysDir, "lab-healthy")}, `the bundle recorded "doctor", not "vpn-trace"`},
		"a newer format":    {[]string{"doctor", "--replay", newer}, "format version 9, this build reads up to 1 (recorded by v9.9.9"},
		"a foreign file":    {[]string{"doctor", "--replay", foreign}, "not a replay bundle"},
		"no file":           {[]string{"doctor", "--replay", filepath.Join(dir, "missing.gz")}, "no such file"},
		"with --record":     {[]string{"doctor", "--replay", newer, "--record", "x.gz"}, "exclude each other"},
		"with --wait":       {[]string{"doctor", "--replay", newer, "--wait", "1m"}, "a replayed bundle does not change"},
		"--anonymize alone": {[]string{"doctor", "--anonymize"}, "--anonymize applies to --record"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			streams, _, _, _ := genericiooptions.NewTestIOStreams()
			root := newRoot(streams, neverConnect(t))
			root.SetArgs(c.args)
			err := root.ExecuteContext(t.Context())
			require.Error(t, err)
			assert.Equal(t, ExitUsage, exitCodeOf(err))
			assert.Contains(t, err.Error(), c.want, "the error says why (main prints it)")
		})
	}
}

// TestARecordedFlagAppliesUnlessTheReplaySetsIt: the bundle's --no-helpers and --skip hold,
// the replay's own --only narrows it.
func TestARecordedFlagAppliesUnlessTheReplaySetsIt(t *testing.T) {
	bundle := filepath.Join(replaysDir, "lab-dead-node")
	stdout, stderr, code := runRoot(t, neverConnect(t), "doctor", "-o", "json", "--replay", bundle, "--only", "LA301")
	assert.Equal(t, ExitFailed, code, stderr)
	got, err := replay.Verdicts([]byte(stdout))
	require.NoError(t, err)
	assert.Regexp(t, `^doctor verdicts: [^\n]*\nLA301 fail\n  LA301-NO-ANSWER fail `, got)
	assert.NotContains(t, got, "LA402", "the recorded --skip LA402 holds")
}
