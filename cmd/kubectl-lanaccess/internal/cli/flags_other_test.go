package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// outProof shows a flag changing what a command does by running it (against the healthy
// fixture cluster when it reads one): the output, or the error, differs from the Base run.
type outProof struct {
	Base, Args []string
	// Read, when set, compares what the command reads of its options instead (commands with
	// a Flags/Options pair whose Run needs a live cluster or never returns).
	Read func(o any) any
	Test string
}

// otherCommandProofs: every local flag of the commands that are not check commands.
func otherCommandProofs() map[string]map[string]outProof {
	mon := func(o any) *monitorOptions { return o.(*monitorOptions) }
	cl := func(o any) *CleanupOptions { return o.(*CleanupOptions) }
	offline := []string{"--addresses", "10.0.10.11", "--zone", "apps.example.com", "--host", "a.apps.example.com"}
	off := func(extra ...string) []string { return append(append([]string{}, offline...), extra...) }
	cc := []string{"--os", "linux", "--zone", "apps.example.com", "--dns-server", "10.0.10.11"}
	ccWith := func(extra ...string) []string { return append(append([]string{}, cc...), extra...) }
	fromCluster := []string{"--os", "macos"}
	clusterWith := func(extra ...string) []string { return append(append([]string{}, fromCluster...), extra...) }
	return map[string]map[string]outProof{
		"monitor": {
			"addresses":       {Args: off(), Read: func(o any) any { return mon(o).doctor.Offline }},
			"zone":            {Args: []string{"--zone", "apps.example.com"}, Read: func(o any) any { return mon(o).doctor.Selection.Zone }},
			"host":            {Args: []string{"--host", "a.apps.example.com"}, Read: func(o any) any { return mon(o).doctor.Selection.Host }},
			"outside-name":    {Args: []string{"--outside-name", "example.net"}, Read: func(o any) any { return mon(o).doctor.Path.OutsideName }},
			"expect-status":   {Args: []string{"--expect-status", "200"}, Read: func(o any) any { return mon(o).doctor.Path.ExpectStatus }},
			"expect-location": {Args: []string{"--expect-location", "idp.example.com"}, Read: func(o any) any { return mon(o).doctor.Path.ExpectLocation }},
			"insecure":        {Args: []string{"--insecure"}, Read: func(o any) any { return mon(o).doctor.Path.Insecure }},
			"ca-file":         {Test: "TestDoctorCAFile (doctor's flag; the monitor hands doctor's Probes to every run)"},
			"timeout":         {Args: []string{"--timeout", "7s"}, Read: func(o any) any { return mon(o).cfg.Probes.Timeout }},
			"config":          {Test: "TestConfigFileSetsFlagsThatTheCommandLineDoesNot (doctor's --config)"},
			"proxy-service":   {Args: []string{"--proxy-service", "a/b"}, Read: func(o any) any { return mon(o).doctor.Selection.ProxyService }},
			"dns-service":     {Args: []string{"--dns-service", "a/b"}, Read: func(o any) any { return mon(o).doctor.Selection.DNSService }},
			"configmap":       {Args: []string{"--configmap", "a/b"}, Read: func(o any) any { return mon(o).doctor.Selection.ConfigMap }},
			"all-namespaces":  {Base: []string{"-n", "a"}, Args: []string{"-n", "a", "-A"}, Read: func(o any) any { return mon(o).doctor.Selection.Scope() }},
			"only":            {Args: []string{"--only", "LA3"}, Read: func(o any) any { return mon(o).cfg.Only }},
			"skip":            {Args: []string{"--skip", "LA3"}, Read: func(o any) any { return mon(o).cfg.Skip }},
			"interval":        {Args: []string{"--interval", "1m"}, Read: func(o any) any { return mon(o).cfg.Interval }},
			"run-timeout":     {Args: []string{"--run-timeout", "1m"}, Read: func(o any) any { return mon(o).cfg.RunTimeout }},
			"listen":          {Args: []string{"--listen", ":9999"}, Read: func(o any) any { return mon(o).listen }},
			"workstation":     {Args: []string{"--workstation"}, Read: func(o any) any { return mon(o).workstation }},
			"web-config-file": {Test: "TestServeTakesTLSAndBasicAuthFromTheWebConfig (needs TLS files)"},
			"max-addresses":   {Args: []string{"--max-addresses", "7"}, Read: func(o any) any { return mon(o).cfg.MaxAddresses }},
		},
		"cleanup": {
			"all":            {Args: []string{"--all"}, Read: func(o any) any { return cl(o).Policy.All }},
			"all-namespaces": {Base: []string{"-n", "a"}, Args: []string{"-n", "a", "-A"}, Read: func(o any) any { return cl(o).Policy.Namespace }},
			"dry-run":        {Args: []string{"--dry-run"}, Read: func(o any) any { return cl(o).DryRun }},
			"run-id":         {Args: []string{"--run-id", "abc123"}, Read: func(o any) any { return cl(o).Policy.RunIDs }},
		},
		"client-config": {
			"os":         {Base: cc, Args: []string{"--os", "windows", "--zone", "apps.example.com", "--dns-server", "10.0.10.11"}},
			"connection": {Base: cc, Args: ccWith("--connection", "Wired connection 1")},
			"device":     {Base: cc, Args: ccWith("--device", "eth0")},
			"host":       {Base: cc, Args: ccWith("--host", "grafana.apps.example.com")},
			"output":     {Base: cc, Args: ccWith("-o", "json")},
			"zone":       {Base: []string{"--os", "linux", "--dns-server", "10.0.10.11"}, Args: cc},
			"dns-server": {Base: []string{"--os", "linux", "--zone", "apps.example.com"}, Args: cc},
			"answer":     {Base: cc, Args: ccWith("--answer", "10.0.10.12")},
			// Read from the cluster (the healthy fixture): a name that is not there is an error.
			"proxy-service":  {Base: fromCluster, Args: clusterWith("--proxy-service", "traefik/nope")},
			"dns-service":    {Base: fromCluster, Args: clusterWith("--dns-service", "lan-dns/nope")},
			"configmap":      {Base: fromCluster, Args: clusterWith("--configmap", "lan-dns/nope")},
			"all-namespaces": {Base: clusterWith("-n", "traefik"), Args: clusterWith("-n", "traefik", "-A")},
		},
		// migrate reads the cluster (the healthy fixture): a name that is not there is an error.
		"migrate": {
			"to":             {Args: []string{"--to", "metallb"}},
			"output":         {Args: []string{"-o", "yaml"}},
			"zone":           {Args: []string{"--zone", "other.example.com"}},
			"proxy-service":  {Args: []string{"--proxy-service", "traefik/nope"}},
			"dns-service":    {Args: []string{"--dns-service", "lan-dns/nope"}},
			"configmap":      {Args: []string{"--configmap", "lan-dns/nope"}},
			"all-namespaces": {Base: []string{"-n", "traefik"}, Args: []string{"-n", "traefik", "-A"}},
		},
		"manifests": {
			"image":        {Base: []string{"job"}, Args: []string{"job", "--image", "registry.lan/kubectl-lanaccess:v9"}},
			"ca-configmap": {Base: []string{"job"}, Args: []string{"job", "--ca-configmap", "proxy-ca"}},
		},
		"version": {
			"output": {Args: []string{"-o", "json"}},
		},
	}
}

// runOut runs `kubectl lanaccess COMMAND ARGS...` against the healthy fixture cluster and
// returns its output and error.
func runOut(t *testing.T, healthy, command string, args []string) string {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := newRoot(streams, fixtureClients(t, healthy))
	root.SetArgs(append([]string{command}, args...))
	err := root.ExecuteContext(context.Background())
	return fmt.Sprintf("%s\n%s\nerror: %v", out, errOut, err)
}

// otherOptionsOf parses args into a fresh monitor or cleanup command and returns its options.
func otherOptionsOf(t *testing.T, healthy, command string, args []string) any {
	t.Helper()
	cmd := &cobra.Command{Use: command}
	kube := newKubeFlags()
	kube.AddFlags(cmd.PersistentFlags())
	var to func() (any, error)
	switch command {
	case "monitor":
		f := NewMonitorFlags()
		f.AddFlags(cmd)
		to = func() (any, error) { return f.ToOptions(cmd, kube, fixtureClients(t, healthy)) }
	case "cleanup":
		f := &CleanupFlags{}
		f.AddFlags(cmd)
		to = func() (any, error) { return f.ToOptions(cmd, kube, nil) }
	default:
		t.Fatalf("no options for %s", command)
	}
	require.NoError(t, cmd.ParseFlags(args))
	o, err := to()
	require.NoError(t, err, "%s %v", command, args)
	return o
}

// TestEveryFlagOfTheOtherCommandsIsHonoured extends TestEveryFlagIsHonoured to every other
// command: each local flag is proven to change what the command prints or reads, or names
// the test that proves it; a command missing from both tables has no flags of its own.
func TestEveryFlagOfTheOtherCommandsIsHonoured(t *testing.T) {
	healthy, err := filepath.Abs(fixtures + "/healthy")
	require.NoError(t, err)
	t.Chdir(t.TempDir()) // no stray .lanaccess.yaml or kubeconfig of the developer's
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	require.NoError(t, os.WriteFile(os.Getenv("KUBECONFIG"), nil, 0o600))
	root := newRoot(genericiooptions.NewTestIOStreamsDiscard(), nil)
	checkProofs, proofs := checkCommandProofs(), otherCommandProofs()
	for _, cmd := range root.Commands() {
		if _, ok := checkProofs[cmd.Name()]; ok {
			continue
		}
		var local []string
		cmd.NonInheritedFlags().VisitAll(func(fl *pflag.Flag) {
			if fl.Name != "help" && !fl.Hidden {
				local = append(local, fl.Name)
			}
		})
		sort.Strings(local)
		table := proofs[cmd.Name()]
		t.Run(cmd.Name(), func(t *testing.T) {
			for name := range table {
				require.Contains(t, local, name, "%s lists --%s, which it does not have", cmd.Name(), name)
			}
			for _, name := range local {
				p, ok := table[name]
				require.True(t, ok, "%s --%s: no proof that the command honours it; remove the flag or add one", cmd.Name(), name)
				switch {
				case p.Args == nil:
					require.NotEmpty(t, p.Test, "--%s", name)
				case p.Read != nil:
					base, got := otherOptionsOf(t, healthy, cmd.Name(), p.Base), otherOptionsOf(t, healthy, cmd.Name(), p.Args)
					require.NotEqual(t, fmt.Sprint(p.Read(base)), fmt.Sprint(p.Read(got)), "%s %s changes nothing the command reads", cmd.Name(), strings.Join(p.Args, " "))
				default:
					base, got := runOut(t, healthy, cmd.Name(), p.Base), runOut(t, healthy, cmd.Name(), p.Args)
					require.NotEqual(t, base, got, "%s %s changes nothing the command does", cmd.Name(), strings.Join(p.Args, " "))
				}
			}
		})
	}
}
