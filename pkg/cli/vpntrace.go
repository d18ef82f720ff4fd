package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/checks"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// VPNTraceFlags is the raw input of `vpn-trace`.
type VPNTraceFlags struct {
	Checks     *CheckFlags
	Selector   string
	Public     string
	FromClient bool
	HopTimeout time.Duration
	ClusterDNS string
	PodTarget  string
}

func newVPNTraceCommand(kubeFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	f := &VPNTraceFlags{Checks: NewCheckFlags(), HopTimeout: 2 * time.Second}
	cmd := &cobra.Command{
		Use:   "vpn-trace",
		Short: "Why an OpenVPN pod forwards nothing: ip_forward, durability, tunnel, return path, first silent hop",
		Example: `  # every OpenVPN pod of the namespace, hop ladder from inside each pod
  kubectl lanaccess vpn-trace -n vpn

  # pick the pods, add a public hop, and walk the same ladder from this laptop through the tunnel
  kubectl lanaccess vpn-trace -n vpn -l app=openvpn --public 203.0.113.80:80 --from-client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.Checks.Complete(cmd); err != nil {
				return err
			}
			if f.HopTimeout <= 0 {
				return usageErr("--hop-timeout must be positive, got %s", f.HopTimeout)
			}
			return runChecks(cmd.Context(), streams, f.Checks, "vpn-trace", f.prepare(kubeFlags, namespaceGiven(cmd), connect))
		},
	}
	fs := cmd.Flags()
	f.Checks.AddFlags(fs)
	fs.StringVarP(&f.Selector, "selector", "l", "", "label selector of the VPN pods (default: pods running an OpenVPN image or container)")
	fs.StringVar(&f.Public, "public", "", "a public address (IP or IP:port) for the last hop of the ladder")
	fs.BoolVar(&f.FromClient, "from-client", false, "also walk the ladder from this machine through the tunnel (it must be connected)")
	fs.DurationVar(&f.HopTimeout, "hop-timeout", f.HopTimeout, "deadline of each hop of the ladder")
	fs.StringVar(&f.ClusterDNS, "cluster-dns", "", "cluster DNS Service VIP for the VIP hop (default: kube-system/kube-dns)")
	fs.StringVar(&f.PodTarget, "pod-target", "", "pod IP[:port] for the pod hop (default: a ready pod of another workload)")
	return cmd
}

func (f *VPNTraceFlags) prepare(kubeFlags *genericclioptions.ConfigFlags, namespace string, connect clientFactory) attemptFunc {
	return func(ctx context.Context, progress *report.Progress) ([]engine.Check, report.Report, func(), error) {
		c, err := connect(kubeFlags, 10*time.Second)
		if err != nil {
			return nil, report.Report{}, nil, err
		}
		header := report.Report{Cluster: c.cluster}
		exec, err := kube.NewRemoteExecutor(c.config)
		if err != nil {
			return nil, header, nil, err
		}
		env := &checks.Env{
			Client: c.typed, Dynamic: c.dynamic, Exec: exec, Facts: &checks.Facts{},
			Options: checks.Options{
				ProbeTimeout: f.Checks.Timeout, Selector: f.Selector, Namespace: namespace,
				Public: f.Public, FromClient: f.FromClient, HopTimeout: f.HopTimeout,
				ClusterDNS: f.ClusterDNS, PodTarget: f.PodTarget,
			},
		}
		scope := "all namespaces"
		if namespace != "" {
			scope = "namespace " + namespace
		}
		header.Subject = []report.KV{{Key: "scope", Value: scope}}
		if f.Selector != "" {
			header.Subject = append(header.Subject, report.KV{Key: "selector", Value: f.Selector})
		}
		return checks.VPNTraceSuite(env), header, nil, nil
	}
}
