package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/netpath"
	"github.com/lanaccess/kubectl-lanaccess/checks/workstation"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/replay"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
	ws "github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// ClientCheckFlags is the raw input of `client-check`.
type ClientCheckFlags struct {
	Checks      *CheckFlags
	Target      targetFlags
	Host        string
	OutsideName string
	DNSPort     uint16
	Connection  string
}

// AddFlags registers client-check's flags.
func (f *ClientCheckFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.Checks.AddFlags(fs, catalogue.ClientCheck)
	f.Target.AddFlags(fs)
	fs.StringVar(&f.Host, "host", "", "the name in the zone to resolve (default: a random label, which no cache on the way can answer)")
	fs.StringVar(&f.OutsideName, "outside-name", netpath.DefaultOutsideName, "a name outside the zone that must keep resolving")
	fs.Uint16Var(&f.DNSPort, "dns-port", 53, "the port of the zone's DNS servers")
	fs.StringVar(&f.Connection, "connection", "", "Linux: the NetworkManager profile of the LAN connection, for the remediations (default: asked of nmcli)")
}

// clientCheckOptions is everything `client-check` needs once flags are read. The seams of the
// workstation checks are fields so that tests aim them at loopback servers and fakes.
type clientCheckOptions struct {
	Checks      *CheckFlags
	Target      targetFunc
	OS          ws.OS
	ProbeName   string
	OutsideName string
	DNSPort     uint16
	Connection  string

	Resolver ws.Resolver
	DNS      probe.DNS
	Commands ws.CommandRunner
	ReadFile func(string) ([]byte, error)
}

// ToOptions completes the flags and validates every value.
func (f *ClientCheckFlags) ToOptions(cmd *cobra.Command, kubeFlags *kubeFlags, connect clientFactory) (*clientCheckOptions, error) {
	if err := f.Checks.Complete(cmd, catalogue.ClientCheck); err != nil {
		return nil, err
	}
	if _, ok := dns.IsDomainName(f.OutsideName); !ok || f.OutsideName == "" {
		return nil, usageErr("invalid --outside-name %q: a DNS name", f.OutsideName)
	}
	o := &clientCheckOptions{
		Checks: f.Checks, OutsideName: f.OutsideName, DNSPort: f.DNSPort, Connection: f.Connection,
		Resolver: net.DefaultResolver, DNS: &probe.DNSClient{Timeout: f.Checks.Timeout},
		Commands: ws.ExecRunner{Timeout: f.Checks.ExecTimeout}, ReadFile: os.ReadFile,
	}
	var err error
	if o.Target, err = f.Target.source(kubeFlags, f.Checks.tape.connect(connect)); err != nil {
		return nil, err
	}
	if o.OS, err = ws.ParseOS(goruntime.GOOS); err != nil {
		// Another Unix: the resolver checks still apply; remediations stay generic.
		o.OS = ws.OS(goruntime.GOOS)
	}
	if o.ProbeName, err = probeNameFlag(f.Host); err != nil {
		return nil, err
	}
	return o, nil
}

func newClientCheckCommand(kubeFlags *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	return newRunCommand(runCommand{
		Use:   "client-check",
		Short: "Check that this workstation resolves the zone to the nodes",
		Long: `client-check runs on a workstation of the LAN. It asks this machine's resolver, as any program
does, for a name in the zone (it must give the node addresses) and for a name outside it (it must
still resolve), asks each of the zone's DNS servers directly, and on Linux reads systemd-resolved's
state: which server each link asks now (it keeps one until that one fails) and which link wins
the zone's names. The zone and addresses come from the cluster, or from --zone and --dns-server
on a workstation without cluster access.`,
		Example: `  kubectl lanaccess client-check --zone apps.example.com \
    --dns-server 10.0.10.11,10.0.10.12,10.0.10.13
  kubectl lanaccess client-check -o json`,
		Catalogue: catalogue.ClientCheck,
	}, &ClientCheckFlags{Checks: NewCheckFlags()}, kubeFlags, streams, connect)
}

// probeNameFlag: a name given with --host, or a random label that is resolved under the zone
// once it is known ("{zone}" is replaced in Run).
func probeNameFlag(host string) (string, error) {
	if host != "" {
		if _, ok := dns.IsDomainName(host); !ok {
			return "", usageErr("--host %q is not a DNS name", host)
		}
		return strings.TrimSuffix(strings.ToLower(host), "."), nil
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random probe name: %w", err)
	}
	return "lanaccess-" + hex.EncodeToString(b) + ".{zone}", nil
}

// Run runs the workstation catalogue through the shared runner (progress, --wait, reports,
// exit codes).
func (o *clientCheckOptions) Run(ctx context.Context, streams genericiooptions.IOStreams) error {
	return runChecks(ctx, streams, o.Checks, catalogue.ClientCheck, o)
}

// Prepare reads the target (once per attempt) and builds the workstation checks.
func (o *clientCheckOptions) Prepare(ctx context.Context, _ *report.Progress) (attempt, error) {
	{
		// Recording: the flags-only target reads no cluster, a cluster target starts the
		// recording again with the cluster's name when it connects.
		o.Checks.tape.begin(replay.Cluster{})
		t, err := o.Target(ctx)
		if err != nil {
			return attempt{}, err
		}
		o := o.Checks.tape.workstation(o)
		name := strings.ReplaceAll(o.ProbeName, "{zone}", t.Zone.String())
		if !t.Zone.Contains(name) {
			return attempt{}, &kube.UsageError{Message: fmt.Sprintf("--host %s is not in the zone %s", name, t.Zone.String()), Fix: "give a name that ends in ." + t.Zone.String()}
		}
		env := workstation.Env{
			Target: t.Target, OS: o.OS, ProbeName: name, OutsideName: o.OutsideName,
			DNSPort: o.DNSPort, Timeout: o.Checks.Timeout, Connection: o.Connection,
			Resolver: o.Resolver, DNS: o.DNS, Commands: o.Commands, ReadFile: o.ReadFile,
		}
		header := report.Report{Cluster: t.Cluster, Subject: []report.KV{
			{Key: "zone", Value: t.Zone.String()},
			{Key: "DNS servers", Value: addrList(t.Target, false)},
			{Key: "answers", Value: addrList(t.Target, true)},
			{Key: "probe name", Value: name},
			{Key: "this machine", Value: string(o.OS) + "/" + goruntime.GOARCH},
			{Key: "from", Value: t.Source},
		}}
		if o.DNSPort != 53 {
			header.Subject = append(header.Subject, report.KV{Key: "DNS port", Value: strconv.Itoa(int(o.DNSPort))})
		}
		return attempt{Checks: checks.ClientCheck(env), Header: header}, nil
	}
}
