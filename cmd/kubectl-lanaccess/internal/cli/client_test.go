package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/internal/probetest"
	"github.com/lanaccess/kubectl-lanaccess/internal/workstationtest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// A distinct flag name: other test files of this package may define their own -update.
var updateClientGolden = flag.Bool("update-client-golden", false, "rewrite the client-config golden files")

func newClientConfig(t *testing.T) (*cobra.Command, *bytes.Buffer) {
	t.Helper()
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	return newClientConfigCommand(newKubeFlags(), streams, newClients), out
}

func TestClientConfigPrintsEachOSFromFlagsAlone(t *testing.T) {
	for _, tc := range []struct {
		os   string
		args []string
	}{
		{"linux", []string{"--connection", "Wired connection 1", "--device", "enp3s0", "--host", "grafana.apps.example.com"}},
		{"windows", []string{"--host", "grafana.apps.example.com"}},
		{"macos", []string{"--host", "grafana.apps.example.com"}},
	} {
		t.Run(tc.os, func(t *testing.T) {
			cmd, out := newClientConfig(t)
			args := append([]string{"--os", tc.os, "--zone=apps.example.com", "--dns-server=10.0.10.11,10.0.10.12,10.0.10.13"}, tc.args...)
			cmd.SetArgs(args)
			require.NoError(t, cmd.ExecuteContext(context.Background()))
			golden := filepath.Join("testdata", "client-config", tc.os+".txt")
			if *updateClientGolden {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "golden file missing: go test ./cmd/kubectl-lanaccess/internal/cli -run TestClientConfig -update-client-golden")
			assert.Equal(t, string(want), out.String())
		})
	}
}

func TestClientConfigJSONHasTheStepsAndCaveats(t *testing.T) {
	cmd, out := newClientConfig(t)
	cmd.SetArgs([]string{"--os", "windows", "-o", "json", "--zone=apps.example.com", "--dns-server=10.0.10.11"})
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	var ins workstation.Instructions
	require.NoError(t, json.Unmarshal(out.Bytes(), &ins))
	assert.Equal(t, workstation.Windows, ins.OS)
	assert.Equal(t, []string{"10.0.10.11"}, ins.Servers)
	assert.NotEmpty(t, ins.Apply)
	assert.NotEmpty(t, ins.Remove)
	assert.NotEmpty(t, ins.Caveats)
}

func TestClientConfigUsageErrorsExitTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown OS", []string{"--os", "plan9", "--zone=apps.example.com", "--dns-server=10.0.10.11"}, "use linux, windows or macos"},
		{"servers without a zone", []string{"--os", "linux", "--dns-server=10.0.10.11"}, "--dns-server needs --zone"},
		{"answers without servers", []string{"--os", "linux", "--answer=10.0.10.11"}, "--answer needs --dns-server"},
		{"an invalid address", []string{"--os", "linux", "--zone=apps.example.com", "--dns-server=10.0.10.311"}, `"10.0.10.311"`},
		{"a device that is no interface name", []string{"--os", "linux", "--device", "a/b", "--zone=apps.example.com", "--dns-server=10.0.10.11"}, "not a network interface name"},
		{"an unknown output", []string{"--os", "linux", "-o", "xml", "--zone=apps.example.com", "--dns-server=10.0.10.11"}, "use text, json or yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, _ := newClientConfig(t)
			cmd.SetArgs(tc.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.ExecuteContext(context.Background())
			require.Error(t, err)
			assert.Equal(t, ExitUsage, ExitCode(err))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTheTargetIsReadFromTheClustersServicesAndZone(t *testing.T) {
	objs, err := fixture.Load("../../../../testdata/fixtures/healthy")
	require.NoError(t, err)
	typed, dyn, err := fixture.Clients(objs)
	require.NoError(t, err)
	got, err := discoverTarget(context.Background(), clientgo.Wrap(typed), dyn, kube.Selection{})
	require.NoError(t, err)
	assert.Equal(t, "apps.example.com", got.Zone.String())
	want := []netip.Addr{netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.12"), netip.MustParseAddr("10.0.10.13")}
	assert.Equal(t, want, got.Servers, "the DNS Service's externalIPs")
	assert.Equal(t, want, got.Answers, "the proxy Service's externalIPs")
	assert.Contains(t, got.Source, "Service lan-dns/lan-dns")
}

func TestClientConfigReadsTheZoneAndAddressesFromTheCluster(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	cmd := newClientConfigCommand(newKubeFlags(), streams, fixtureClients(t, fixtures+"/healthy"))
	cmd.SetArgs([]string{"--os", "macos"})
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	assert.Contains(t, out.String(), "# From cluster: Service lan-dns/lan-dns, Service traefik/traefik.")
	assert.Contains(t, out.String(), `printf 'nameserver 10.0.10.11\nnameserver 10.0.10.12\nnameserver 10.0.10.13\n' | sudo tee /etc/resolver/apps.example.com >/dev/null`)
}

func TestATargetNamedInTheClusterThatDoesNotExistIsAUsageError(t *testing.T) {
	objs, err := fixture.Load("../../../../testdata/fixtures/healthy")
	require.NoError(t, err)
	typed, dyn, err := fixture.Clients(objs)
	require.NoError(t, err)
	_, err = discoverTarget(context.Background(), clientgo.Wrap(typed), dyn, kube.Selection{DNSService: "lan-dns/nope"})
	require.Error(t, err)
	assert.True(t, kube.IsUsage(err), "%v", err)
	assert.Equal(t, ExitUsage, ExitCode(exitFor(err)))
}

// clientCheckAgainst runs client-check with the system resolver and the zone's servers on
// loopback, and systemd-resolved's state as `resolvectl status` printed it on the lab's laptop
// (pkg/workstation/testdata/real/lab-*: the zone's servers are the seed's 10.0.10.11-13,
// so every query to one of them goes to the loopback stand-in).
func clientCheckAgainst(t *testing.T, system *probetest.Zone, resolvectl string, output string, setup ...func(*CheckFlags)) (string, error) {
	t.Helper()
	zoneServer := probetest.StartDNS(t, "127.0.10.11", &probetest.Zone{Zone: "apps.example.com.", Addrs: seedAddrs(), TTL: 60,
		Outside: map[string][]netip.Addr{"example.org.": {netip.MustParseAddr("198.51.100.7")}}})
	systemServer := probetest.StartDNS(t, "127.0.0.1", system)
	f := NewCheckFlags()
	f.Output, f.Timeout, f.Color, f.NoWrap = output, 500*time.Millisecond, "never", true
	for _, s := range setup {
		s(f)
	}
	target, err := workstation.NewTarget("apps.example.com", probe.AddrStrings(seedAddrs()), probe.AddrStrings(seedAddrs()))
	require.NoError(t, err)
	o := clientCheckOptions{
		Checks: f,
		Target: func(context.Context) (workstationTarget, error) {
			return workstationTarget{Target: target, Source: "test"}, nil
		},
		OS: workstation.Linux, ProbeName: "lanaccess-0a1b2c3d.{zone}", OutsideName: "example.org", DNSPort: 53,
		Resolver: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, systemServer.String())
		}},
		DNS:      toStandIn{inner: &probe.DNSClient{Timeout: 500 * time.Millisecond}, to: zoneServer},
		Commands: cannedCommands{"resolvectl": resolvectl},
		ReadFile: func(string) ([]byte, error) { return nil, os.ErrNotExist },
	}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	err = o.Run(context.Background(), streams)
	return out.String(), err
}

// toStandIn sends every direct query to one loopback server.
type toStandIn struct {
	inner probe.DNS
	to    netip.AddrPort
}

func (s toStandIn) Query(ctx context.Context, _ netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error) {
	return s.inner.Query(ctx, s.to, name, qtype, network)
}

func seedAddrs() []netip.Addr {
	return []netip.Addr{netip.MustParseAddr("10.0.10.11"), netip.MustParseAddr("10.0.10.12"), netip.MustParseAddr("10.0.10.13")}
}

type cannedCommands map[string]string

func (c cannedCommands) Run(_ context.Context, name string, _ ...string) ([]byte, error) {
	if out, ok := c[name]; ok {
		return []byte(out), nil
	}
	return nil, &os.PathError{Op: "exec", Path: name, Err: os.ErrNotExist}
}

func TestClientCheckPassesOnAHealthyWorkstationWithTheJSONContract(t *testing.T) {
	system := &probetest.Zone{Zone: "apps.example.com.", Addrs: seedAddrs(), TTL: 60,
		Outside: map[string][]netip.Addr{"example.org.": {netip.MustParseAddr("198.51.100.7")}}}
	out, err := clientCheckAgainst(t, system, string(workstationtest.Output(t, "lab-configured-status")), "json")
	require.NoError(t, err, out)
	var doc struct {
		SchemaVersion int    `json:"schemaVersion"`
		Command       string `json:"command"`
		Summary       struct {
			Pass int `json:"pass"`
		} `json:"summary"`
		Checks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"checks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, 1, doc.SchemaVersion)
	assert.Equal(t, "client-check", doc.Command)
	assert.Equal(t, 4, doc.Summary.Pass)
	ids := make([]string, 0, len(doc.Checks))
	for _, c := range doc.Checks {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"WS001", "WS002", "WS003", "WS004"}, ids)
}

func TestClientCheckExitsOneWhenTheWorkstationAsksTheNetworksDNS(t *testing.T) {
	org := &probetest.Zone{Zone: "apps.example.com.", Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.10")}, TTL: 300,
		Outside: map[string][]netip.Addr{"example.org.": {netip.MustParseAddr("198.51.100.7")}}}
	out, err := clientCheckAgainst(t, org, string(workstationtest.Output(t, "lab-moved-org-status")), "text")
	require.Error(t, err)
	assert.Equal(t, ExitFailed, ExitCode(err))
	assert.Contains(t, out, "WS001")
	assert.Contains(t, out, "203.0.113.10")
	assert.Contains(t, out, "asks 198.51.100.53, not one of the zone's servers")
}

func TestClientCheckRefusesAHostOutsideTheZone(t *testing.T) {
	f := NewCheckFlags()
	target, err := workstation.NewTarget("apps.example.com", []string{"127.0.10.11"}, nil)
	require.NoError(t, err)
	o := clientCheckOptions{Checks: f, ProbeName: "grafana.example.org", Target: func(context.Context) (workstationTarget, error) {
		return workstationTarget{Target: target}, nil
	}}
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	err = o.Run(context.Background(), streams)
	require.Error(t, err)
	assert.Equal(t, ExitUsage, ExitCode(err))
	assert.Contains(t, err.Error(), "not in the zone apps.example.com")
}

func TestManifestsCommand(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	cmd := newManifestsCommand(streams)
	cmd.SetArgs([]string{"rbac-doctor"})
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	assert.Contains(t, out.String(), "name: kubectl-lanaccess-doctor")

	out.Reset()
	cmd = newManifestsCommand(streams)
	cmd.SetArgs(nil)
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	assert.Contains(t, out.String(), "github-actions")
	assert.Contains(t, out.String(), "helm-test")

	cmd = newManifestsCommand(streams)
	cmd.SetArgs([]string{"nope"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.ExecuteContext(context.Background())
	require.Error(t, err)
	assert.Equal(t, ExitUsage, ExitCode(err))
}

// Real connection names (an apostrophe, quotes, a dollar, spaces) round-trip: client-config
// accepts them and prints them as one shell word.
func TestClientConfigAcceptsRealConnectionNames(t *testing.T) {
	for _, name := range []string{"Bob's phone", `Wired "office"`, "Kabel $1", "Wired connection 1"} {
		out, errOut, code := runCLI(t, nil, "client-config", "--os", "linux", "--connection", name, "--zone=apps.example.com", "--dns-server=10.0.10.11")
		require.Equal(t, ExitOK, code, "%q: %s", name, errOut)
		assert.Contains(t, out, "nmcli connection up "+remedy.Quote(name), "%q", name)
	}
}
