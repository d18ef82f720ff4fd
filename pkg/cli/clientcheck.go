package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// clientCheckOptions is everything `client-check` needs once flags are read. The seams of the
// workstation checks are fields so that tests aim them at loopback servers and fakes.
type clientCheckOptions struct {
	Checks      *CheckFlags
	Target      targetFunc
	OS          workstation.OS
	ProbeName   string
	OutsideName string
	DNSPort     uint16
	Connection  string

	Resolver workstation.Resolver
	DNS      probe.DNS
	Commands workstation.CommandRunner
	ReadFile func(string) ([]byte, error)
}

func newClientCheckCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	f := NewCheckFlags()
	var (
		target      targetFlags
		host        string
		outsideName string
		dnsPort     uint16
		connection  string
	)
	cmd := &cobra.Command{
		Use:   "client-check",
		Short: "Check that this workstation sends the zone to the node addresses, and everything else as before",
		Long: `client-check runs on a workstation of the LAN. It asks this machine's resolver, as any program
does, for a name in the zone (it must give the node addresses) and for a name outside it (it must
still resolve), asks each of the zone's DNS servers directly, and on Linux reads systemd-resolved's
state: which server each link asks now (it keeps one until that one fails) and which link wins
the zone's names. The zone and addresses come from the cluster, or from --zone and --dns-server
on a workstation without cluster access.`,
		Example: `  kubectl lanaccess client-check --zone apps.example.com --dns-server 10.0.10.11,10.0.10.12,10.0.10.13
  kubectl lanaccess client-check -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.Complete(cmd); err != nil {
				return err
			}
			o := clientCheckOptions{
				Checks: f, OutsideName: outsideName, DNSPort: dnsPort, Connection: connection,
				Resolver: net.DefaultResolver, DNS: &probe.DNSClient{Timeout: f.Timeout},
				Commands: workstation.ExecRunner{}, ReadFile: os.ReadFile,
			}
			var err error
			if o.Target, err = target.source(kubeFlags, connect); err != nil {
				return err
			}
			if o.OS, err = workstation.ParseOS(runtime.GOOS); err != nil {
				// Another Unix: the resolver checks still apply; remediations stay generic.
				o.OS = workstation.OS(runtime.GOOS)
			}
			if o.ProbeName, err = probeNameFlag(host); err != nil {
				return err
			}
			return o.Run(cmd.Context(), streams)
		},
	}
	f.AddFlags(cmd.Flags())
	target.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&host, "host", "", "the name in the zone to resolve (default: a random label, which no cache on the way can answer)")
	cmd.Flags().StringVar(&outsideName, "outside-name", checks.DefaultOutsideName, "a name outside the zone that must keep resolving")
	cmd.Flags().Uint16Var(&dnsPort, "dns-port", 53, "the port of the zone's DNS servers")
	cmd.Flags().StringVar(&connection, "connection", "", "Linux: the NetworkManager profile of the LAN connection, for the remediations (default: asked of nmcli)")
	return cmd
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

// Run reads the target once per attempt and runs the workstation catalogue through the shared
// runner (progress, --wait, reports, exit codes).
func (o clientCheckOptions) Run(ctx context.Context, streams genericiooptions.IOStreams) error {
	prepare := func(ctx context.Context, _ *report.Progress) ([]engine.Check, report.Report, func(), error) {
		t, err := o.Target(ctx)
		if err != nil {
			return nil, report.Report{}, nil, err
		}
		name := strings.ReplaceAll(o.ProbeName, "{zone}", t.Zone)
		if !dns.IsSubDomain(dns.Fqdn(t.Zone), dns.Fqdn(name)) {
			return nil, report.Report{}, nil, &kube.UsageError{Message: fmt.Sprintf("--host %s is not in the zone %s", name, t.Zone), Fix: "give a name that ends in ." + t.Zone}
		}
		env := workstation.CheckEnv{
			Target: t.Target, OS: o.OS, ProbeName: name, OutsideName: o.OutsideName,
			DNSPort: o.DNSPort, Timeout: o.Checks.Timeout, Connection: o.Connection,
			Resolver: o.Resolver, DNS: o.DNS, Commands: o.Commands, ReadFile: o.ReadFile,
		}
		header := report.Report{Cluster: t.Cluster, Subject: []report.KV{
			{Key: "zone", Value: t.Zone},
			{Key: "DNS servers", Value: addrList(t.Target, false)},
			{Key: "answers", Value: addrList(t.Target, true)},
			{Key: "probe name", Value: name},
			{Key: "this machine", Value: string(o.OS) + "/" + runtime.GOARCH},
			{Key: "from", Value: t.Source},
		}}
		if o.DNSPort != 53 {
			header.Subject = append(header.Subject, report.KV{Key: "DNS port", Value: strconv.Itoa(int(o.DNSPort))})
		}
		return workstation.Checks(env), header, nil, nil
	}
	return runChecks(ctx, streams, o.Checks, "client-check", prepare)
}
