package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/checks/vpn"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// VPNTraceFlags is the raw input of `vpn-trace`.
type VPNTraceFlags struct {
	Checks     *CheckFlags
	Raw        vpn.Flags
	FromClient bool
	HopTimeout time.Duration
	// ProveFixes dry-runs each forwarding fix (VPN003).
	ProveFixes bool
	// AllNamespaces searches every namespace, whatever -n says.
	AllNamespaces bool
}

// NewVPNTraceFlags returns the defaults.
func NewVPNTraceFlags() *VPNTraceFlags {
	return &VPNTraceFlags{Checks: NewCheckFlags(), HopTimeout: 2 * time.Second}
}

// AddFlags registers vpn-trace's flags.
func (f *VPNTraceFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.Checks.AddFlags(fs, catalogue.VPNTraceCmd)
	fs.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "search every namespace (the default unless -n is given)")
	fs.StringVarP(&f.Raw.Selector, "selector", "l", "", "label selector of the VPN pods (default: pods running an OpenVPN image or container)")
	fs.StringVar(&f.Raw.Public, "public", "", "a public address (IP or IP:port) for the last hop of the ladder")
	fs.BoolVar(&f.FromClient, "from-client", false, "also walk the ladder from this machine through the tunnel (it must be connected)")
	fs.DurationVar(&f.HopTimeout, "hop-timeout", f.HopTimeout, "deadline of each hop of the ladder")
	fs.StringVar(&f.Raw.ClusterDNS, "cluster-dns", "", "cluster DNS Service VIP for the VIP hop (default: kube-system/kube-dns)")
	fs.StringVar(&f.Raw.PodTarget, "pod-target", "", "pod IP[:port] for the pod hop (default: a ready pod of another workload)")
	fs.BoolVar(&f.ProveFixes, "prove-fixes", false, "ask the API server whether a VPN pod carrying each forwarding fix is admitted (a dry-run create: nothing is stored; needs rbac-vpn-dryrun)")
}

// VPNTraceOptions is vpn-trace's validated input.
type VPNTraceOptions struct {
	Checks *CheckFlags
	VPN    vpn.Options

	kubeFlags *kubeFlags
	connect   clientFactory
}

// ToOptions completes the flags (--config) and parses every value before anything runs.
func (f *VPNTraceFlags) ToOptions(cmd *cobra.Command, kubeFlags *kubeFlags, connect clientFactory) (*VPNTraceOptions, error) {
	if err := f.Checks.Complete(cmd, catalogue.VPNTraceCmd); err != nil {
		return nil, err
	}
	if f.HopTimeout <= 0 {
		return nil, usageErr("--hop-timeout must be positive, got %s", f.HopTimeout)
	}
	ns := namespaceGiven(cmd)
	if f.AllNamespaces {
		ns = ""
	}
	if ns != "" {
		if err := kube.ValidateNamespace(ns); err != nil {
			return nil, usageErr("invalid --namespace: %v", err)
		}
	}
	opts, err := vpn.ParseOptions(f.Raw, vpn.Options{Namespace: ns, FromClient: f.FromClient, HopTimeout: f.HopTimeout, ExecTimeout: f.Checks.ExecTimeout, ProveFixes: f.ProveFixes})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return &VPNTraceOptions{Checks: f.Checks, VPN: opts, kubeFlags: kubeFlags, connect: f.Checks.tape.connect(connect)}, nil
}

// Run runs vpn-trace.
func (o *VPNTraceOptions) Run(ctx context.Context, streams genericiooptions.IOStreams) error {
	return runChecks(ctx, streams, o.Checks, catalogue.VPNTraceCmd, o)
}

// Prepare connects and builds vpn-trace's environment for one attempt.
func (o *VPNTraceOptions) Prepare(context.Context, *report.Progress) (attempt, error) {
	c, err := o.connect(o.kubeFlags, 10*time.Second)
	if err != nil {
		return attempt{}, err
	}
	a := attempt{Header: report.Report{Cluster: c.cluster}}
	remote, err := podexec.NewRemoteExecutor(c.config)
	if err != nil {
		return a, err
	}
	exec := c.tape.executor(remote)
	scope := "all namespaces"
	if o.VPN.Namespace != "" {
		scope = "namespace " + o.VPN.Namespace
	}
	a.Header.Subject = []report.KV{{Key: "scope", Value: scope}}
	if o.VPN.Selector != nil {
		a.Header.Subject = append(a.Header.Subject, report.KV{Key: "selector", Value: o.VPN.Selector.String()})
	}
	a.Checks = checks.VPNTrace(&vpn.Env{Client: c.typed, Dynamic: c.dynamic, Exec: exec, Options: o.VPN, Prober: c.tape.prober()})
	return a, nil
}

func newVPNTraceCommand(kubeFlags *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	return newRunCommand(runCommand{
		Use:   "vpn-trace",
		Short: "Why an OpenVPN pod forwards nothing, and the fix",
		Example: `  # every OpenVPN pod of the namespace, hop ladder from inside each pod
  kubectl lanaccess vpn-trace -n vpn

  # pick the pods, add a public hop, and walk the same ladder from this laptop
  # through the tunnel
  kubectl lanaccess vpn-trace -n vpn -l app=openvpn --public 198.51.100.80:80 \
    --from-client`,
		Catalogue: catalogue.VPNTraceCmd,
	}, NewVPNTraceFlags(), kubeFlags, streams, connect)
}
