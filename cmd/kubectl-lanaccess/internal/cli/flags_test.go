package cli

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// proof is how a flag is shown to change what a command does: args that set it to a value
// other than the default, and what the command reads of its options (the value that differs).
// An empty Args with a Test names the test that proves it end to end instead.
type proof struct {
	// Base are the args of the run compared against (default: none).
	Base []string
	Args []string
	Read func(o any) any
	Test string
}

// runLevel are the CheckFlags that runChecks (run.go) and Complete read for every check
// command; the value the runner reads is the CheckFlags field itself.
func runLevel(command string) map[string]proof {
	ex := selectionExamples[command]
	c := func(o any) *CheckFlags {
		switch o := o.(type) {
		case *DoctorOptions:
			return o.Checks
		case *VPNTraceOptions:
			return o.Checks
		case *clientCheckOptions:
			return o.Checks
		}
		panic(fmt.Sprintf("%T", o))
	}
	return map[string]proof{
		"output":        {Args: []string{"-o", "json"}, Read: func(o any) any { return c(o).Output }},
		"only":          {Args: []string{"--only", ex[0]}, Read: func(o any) any { return c(o).Only }},
		"skip":          {Args: []string{"--skip", ex[1]}, Read: func(o any) any { return c(o).Skip }},
		"fail-on":       {Args: []string{"--fail-on", "warn"}, Read: func(o any) any { return c(o).FailOn }},
		"wait":          {Args: []string{"--wait", "1m"}, Read: func(o any) any { return c(o).Wait }},
		"wait-interval": {Args: []string{"--wait-interval", "1m"}, Read: func(o any) any { return c(o).Interval }},
		// runOnce bounds the run with it (TestTheDeadlineReportsWhatFinishedAndErrorsTheRest).
		"deadline":   {Args: []string{"--deadline", "7s"}, Read: func(o any) any { return c(o).Deadline }},
		"junit-file": {Args: []string{"--junit-file", "x.xml"}, Read: func(o any) any { return c(o).JUnitFile }},
		"json-file":  {Args: []string{"--json-file", "x.json"}, Read: func(o any) any { return c(o).JSONFile }},
		// runChecks writes stderr there (TestTheLogFileLeavesStdoutTheReportAlone).
		"log-file": {Args: []string{"--log-file", "x.log"}, Read: func(o any) any { return c(o).LogFile }},
		"config":   {Test: "TestConfigFileSetsFlagsThatTheCommandLineDoesNot"},
		"color":    {Args: []string{"--color", "always"}, Read: func(o any) any { return c(o).Color }},
		"verbose":  {Args: []string{"--verbose"}, Read: func(o any) any { return c(o).Verbose }},
		"no-wrap":  {Args: []string{"--no-wrap"}, Read: func(o any) any { return c(o).NoWrap }},
		// The tape records the run's boundaries and runChecks writes it (tape.go).
		"record":    {Args: []string{"--record", "x.gz"}, Read: func(o any) any { return c(o).tape != nil && c(o).tape.path == "x.gz" }},
		"anonymize": {Base: []string{"--record", "x.gz"}, Args: []string{"--record", "x.gz", "--anonymize"}, Read: func(o any) any { return c(o).tape.anonymize }},
		"replay":    {Test: "TestReplaysGiveTheirExpectedVerdicts (needs a bundle)"},
	}
}

func with(base map[string]proof, extra map[string]proof) map[string]proof {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

// checkCommandProofs: every local flag of doctor, vpn-trace and client-check, and what it
// changes. --timeout and --exec-timeout must reach the command's own probes and execs, not
// only CheckFlags (that was issue 24: accepted and unused).
func checkCommandProofs() map[string]map[string]proof {
	doc := func(o any) *DoctorOptions { return o.(*DoctorOptions) }
	vpn := func(o any) *VPNTraceOptions { return o.(*VPNTraceOptions) }
	cc := func(o any) *clientCheckOptions { return o.(*clientCheckOptions) }
	return map[string]map[string]proof{
		"doctor": with(runLevel(catalogue.Doctor), map[string]proof{
			"timeout": {Args: []string{"--timeout", "7s"}, Read: func(o any) any { return doc(o).Probes.Timeout }},
			// Prepare hands o.Checks.ExecTimeout to nodes.Env and the NodeNetReader.
			"exec-timeout":     {Args: []string{"--exec-timeout", "7s"}, Read: func(o any) any { return doc(o).Checks.ExecTimeout }},
			"all-namespaces":   {Base: []string{"-n", "a"}, Args: []string{"-n", "a", "-A"}, Read: func(o any) any { return doc(o).Selection.Namespace }},
			"proxy-service":    {Args: []string{"--proxy-service", "a/b"}, Read: func(o any) any { return doc(o).Selection.ProxyService }},
			"dns-service":      {Args: []string{"--dns-service", "a/b"}, Read: func(o any) any { return doc(o).Selection.DNSService }},
			"configmap":        {Args: []string{"--configmap", "a/b"}, Read: func(o any) any { return doc(o).Selection.ConfigMap }},
			"zone":             {Args: []string{"--zone", "apps.example.com"}, Read: func(o any) any { return doc(o).Selection.Zone }},
			"host":             {Args: []string{"--host", "a.apps.example.com"}, Read: func(o any) any { return doc(o).Selection.Host }},
			"outside-name":     {Args: []string{"--outside-name", "example.net"}, Read: func(o any) any { return doc(o).Path.OutsideName }},
			"expect-status":    {Args: []string{"--expect-status", "200"}, Read: func(o any) any { return doc(o).Path.ExpectStatus }},
			"expect-location":  {Args: []string{"--expect-location", "idp.example.com"}, Read: func(o any) any { return doc(o).Path.ExpectLocation }},
			"insecure":         {Args: []string{"--insecure"}, Read: func(o any) any { return doc(o).Path.Insecure }},
			"ca-file":          {Test: "TestDoctorCAFile (needs a PEM file)"},
			"no-helpers":       {Args: []string{"--no-helpers"}, Read: func(o any) any { return doc(o).NoHelpers }},
			"name-owners":      {Args: []string{"--name-owners"}, Read: func(o any) any { return doc(o).Helpers.NameOwners }},
			"image":            {Args: []string{"--image", "busybox:1"}, Read: func(o any) any { return doc(o).Helpers.Image }},
			"helper-namespace": {Args: []string{"--helper-namespace", "x"}, Read: func(o any) any { return doc(o).Helpers.Namespace }},
			"addresses":        {Args: []string{"--addresses", "10.0.0.1", "--zone", "apps.example.com", "--host", "a.apps.example.com"}, Read: func(o any) any { return doc(o).Offline }},
		}),
		"vpn-trace": with(runLevel(catalogue.VPNTraceCmd), map[string]proof{
			"exec-timeout":   {Args: []string{"--exec-timeout", "7s"}, Read: func(o any) any { return vpn(o).VPN.ExecTimeout }},
			"all-namespaces": {Base: []string{"-n", "a"}, Args: []string{"-n", "a", "-A"}, Read: func(o any) any { return vpn(o).VPN.Namespace }},
			"selector":       {Args: []string{"-l", "app=openvpn"}, Read: func(o any) any { return vpn(o).VPN.Selector }},
			"public":         {Args: []string{"--public", "198.51.100.80:80"}, Read: func(o any) any { return vpn(o).VPN.Public }},
			"from-client":    {Args: []string{"--from-client"}, Read: func(o any) any { return vpn(o).VPN.FromClient }},
			"hop-timeout":    {Args: []string{"--hop-timeout", "7s"}, Read: func(o any) any { return vpn(o).VPN.HopTimeout }},
			"cluster-dns":    {Args: []string{"--cluster-dns", "10.96.0.10"}, Read: func(o any) any { return vpn(o).VPN.ClusterDNS }},
			"pod-target":     {Args: []string{"--pod-target", "10.244.1.5"}, Read: func(o any) any { return vpn(o).VPN.PodTarget }},
			"prove-fixes":    {Args: []string{"--prove-fixes"}, Read: func(o any) any { return vpn(o).VPN.ProveFixes }},
		}),
		"client-check": with(runLevel(catalogue.ClientCheck), map[string]proof{
			"timeout":      {Args: []string{"--timeout", "7s"}, Read: func(o any) any { return cc(o).DNS.(*probe.DNSClient).Timeout }},
			"exec-timeout": {Args: []string{"--exec-timeout", "7s"}, Read: func(o any) any { return cc(o).Commands.(ws.ExecRunner).Timeout }},
			"host":         {Args: []string{"--host", "a.apps.example.com"}, Read: func(o any) any { return cc(o).ProbeName }},
			"outside-name": {Args: []string{"--outside-name", "example.net"}, Read: func(o any) any { return cc(o).OutsideName }},
			"dns-port":     {Args: []string{"--dns-port", "5353"}, Read: func(o any) any { return cc(o).DNSPort }},
			"connection":   {Args: []string{"--connection", "lan"}, Read: func(o any) any { return cc(o).Connection }},
			// The target flags are read by the target function (clienttarget.go).
			"zone":           {Test: "TestClientCheckPassesOnAHealthyWorkstationWithTheJSONContract"},
			"dns-server":     {Test: "TestClientCheckPassesOnAHealthyWorkstationWithTheJSONContract"},
			"answer":         {Test: "TestClientCheckPassesOnAHealthyWorkstationWithTheJSONContract"},
			"proxy-service":  {Test: "TestClientConfigReadsTheZoneAndAddressesFromTheCluster (the same targetFlags)"},
			"dns-service":    {Test: "TestClientConfigReadsTheZoneAndAddressesFromTheCluster (the same targetFlags)"},
			"configmap":      {Test: "TestClientConfigReadsTheZoneAndAddressesFromTheCluster (the same targetFlags)"},
			"all-namespaces": {Test: "TestClientConfigReadsTheZoneAndAddressesFromTheCluster (the same targetFlags)"},
		}),
	}
}

// optionsOf parses args into a fresh command's flags and returns its validated options.
func optionsOf(t *testing.T, command string, args []string) any {
	t.Helper()
	cmd := &cobra.Command{Use: command}
	kube := newKubeFlags()
	kube.AddFlags(cmd.PersistentFlags())
	var to func() (any, error)
	switch command {
	case "doctor":
		f := NewDoctorFlags()
		f.AddFlags(cmd)
		to = func() (any, error) { return f.ToOptions(cmd, kube, nil) }
	case "vpn-trace":
		f := NewVPNTraceFlags()
		f.AddFlags(cmd)
		to = func() (any, error) { return f.ToOptions(cmd, kube, nil) }
	case "client-check":
		f := &ClientCheckFlags{Checks: NewCheckFlags()}
		f.AddFlags(cmd)
		to = func() (any, error) { return f.ToOptions(cmd, kube, nil) }
	}
	require.NoError(t, cmd.ParseFlags(args))
	o, err := to()
	require.NoError(t, err, "%s %v", command, args)
	return o
}

// TestEveryFlagIsHonoured walks every flag of the real commands: each is kubectl's own (the
// root's persistent flags) or listed here with what it changes; a flag that no command reads
// must not be registered. For the check commands each listed value is set and must change
// what the command reads.
func TestEveryFlagIsHonoured(t *testing.T) {
	root := newRoot(genericiooptions.NewTestIOStreamsDiscard(), nil)
	kubectl := map[string]bool{}
	root.PersistentFlags().VisitAll(func(fl *pflag.Flag) { kubectl[fl.Name] = true })
	proofs := checkCommandProofs()
	for _, cmd := range root.Commands() {
		table, ok := proofs[cmd.Name()]
		if !ok {
			continue
		}
		t.Run(cmd.Name(), func(t *testing.T) {
			var local []string
			cmd.NonInheritedFlags().VisitAll(func(fl *pflag.Flag) { local = append(local, fl.Name) })
			sort.Strings(local)
			for _, name := range local {
				require.False(t, kubectl[name], "%s redefines kubectl's --%s", cmd.Name(), name)
				_, ok := table[name]
				require.True(t, ok, "%s --%s: no proof that the command reads it; remove the flag or add one", cmd.Name(), name)
			}
			for name := range table {
				require.Contains(t, local, name, "%s lists --%s, which it does not have", cmd.Name(), name)
			}
			for _, name := range local {
				p := table[name]
				if p.Args == nil {
					require.NotEmpty(t, p.Test, "--%s", name)
					continue
				}
				base, got := optionsOf(t, cmd.Name(), p.Base), optionsOf(t, cmd.Name(), p.Args)
				require.NotEqual(t, fmt.Sprint(p.Read(base)), fmt.Sprint(p.Read(got)), "%s %s changes nothing the command reads", cmd.Name(), strings.Join(p.Args, " "))
			}
		})
	}
}

func TestVPNTraceHasNoProbeTimeout(t *testing.T) {
	root := newRoot(genericiooptions.NewTestIOStreamsDiscard(), nil)
	vpn, _, err := root.Find([]string{"vpn-trace"})
	require.NoError(t, err)
	require.Nil(t, vpn.Flags().Lookup("timeout"), "vpn-trace's hops are bounded by --hop-timeout")
	root.SetArgs([]string{"vpn-trace", "--timeout", "3s"})
	require.ErrorContains(t, root.Execute(), "unknown flag: --timeout")
}

// TestSelectionExamplesAreValid: the --only/--skip examples in each command's help name
// checks and codes of that command, and appear in no other command's help.
func TestSelectionExamplesAreValid(t *testing.T) {
	for command, ex := range selectionExamples {
		var cs []engine.Check
		for _, e := range catalogue.ForCommand(command) {
			cs = append(cs, engine.Check{ID: e.ID, Codes: e.CodeStrings()})
		}
		r := &engine.Runner{Checks: cs, Only: strings.Split(ex[0], ","), Skip: strings.Split(ex[1], ",")}
		require.NoError(t, r.Validate(), command)
		root := newRoot(genericiooptions.NewTestIOStreamsDiscard(), nil)
		for other := range selectionExamples {
			if other == command {
				continue
			}
			c, _, err := root.Find([]string{other})
			require.NoError(t, err)
			require.NotContains(t, c.Flags().Lookup("only").Usage, ex[0], "%s shows %s's example", other, command)
		}
	}
}
