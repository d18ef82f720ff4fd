package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// newFaultCommand exposes the fault injectors for demos by hand. Each has its inverse on the
// command line (the tests use labkit, which restores automatically).
func newFaultCommand(lay func() layout.Layout) *cobra.Command {
	root := &cobra.Command{
		Use:   "fault",
		Short: "Inject or revert a fault in the running lab",
		Example: `  lab fault ip-forward vpn-pod on         # the VPN pod's namespace; or a shared node
  lab fault link node-2 down
  lab fault latency node-3 300ms        # 0 removes it
  lab fault listener node-2 53 udp      # --stop to end it
  lab fault masquerade drop             # restore
  lab fault return-route drop           # restore
  lab fault cert wrong-host             # good|expired|unknown-ca
  lab fault dns-policy ClusterFirst     # Default
  lab fault lan-dns import              # dot-block|import-twice; seed restores
  lab fault dual-stack on               # no-aaaa; off restores
  lab fault auth-location http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/start   # idp restores
  lab fault ipvs on                     # off
  lab fault kube-proxy-mode nftables    # iptables restores`,
	}
	inLab := func(run faultFunc) func(*cobra.Command, []string) error { return withLab(lay, run) }
	root.AddCommand(
		&cobra.Command{Use: "ip-forward vpn-pod|NODE on|off", Short: "Write net.ipv4.ip_forward in the VPN pod's namespace or a shared node's", Args: cobra.ExactArgs(2),
			RunE: inLab(ipForwardFault)},
		&cobra.Command{Use: "link HOST down|up", Short: "Unplug or plug a namespace's LAN link", Args: cobra.ExactArgs(2),
			RunE: inLab(linkFault)},
		&cobra.Command{Use: "latency HOST DURATION", Short: "Delay a namespace's LAN egress (0 removes)", Args: cobra.ExactArgs(2),
			RunE: inLab(latencyFault)},
		newListenerFault(lay),
		&cobra.Command{Use: "masquerade drop|restore", Short: "Remove or restore the VPN pool's masquerade", Args: cobra.ExactArgs(1),
			RunE: inLab(masqueradeFault)},
		&cobra.Command{Use: "return-route drop|restore", Short: "Remove or restore the routes back to the VPN pool", Args: cobra.ExactArgs(1),
			RunE: inLab(returnRouteFault)},
		&cobra.Command{Use: "cert good|wrong-host|expired|unknown-ca", Short: "Put a certificate in the apps TLS Secret", Args: cobra.ExactArgs(1),
			RunE: inLab(func(ctx context.Context, f faults.Lab, a []string) error {
				return f.ServeCertificate(ctx, faults.CertKind(a[0]))
			})},
		&cobra.Command{Use: "lan-dns " + strings.Join(faults.LanDNSVariants(), "|"), Short: "Put traefik/lan-dns in a real-world shape (seed restores)", Args: cobra.ExactArgs(1),
			RunE: inLab(func(ctx context.Context, f faults.Lab, a []string) error { return f.ApplyLanDNSVariant(ctx, a[0]) })},
		&cobra.Command{Use: "dual-stack " + strings.Join(faults.DualStackModes(), "|"), Short: "IPv6 on the LAN, the nodes and the Services' externalIPs (no-aaaa: the zone keeps NODATA)", Args: cobra.ExactArgs(1),
			RunE: inLab(func(ctx context.Context, f faults.Lab, a []string) error { return f.SetDualStack(ctx, a[0]) })},
		&cobra.Command{Use: "ipvs on|off", Short: "Bind every peer's externalIPs on kube-ipvs0 in each node, as kube-proxy's IPVS mode does", Args: cobra.ExactArgs(1),
			RunE: inLab(ipvsFault)},
		&cobra.Command{Use: "kube-proxy-mode iptables|nftables", Short: "Restart every node's kube-proxy in another mode", Args: cobra.ExactArgs(1),
			RunE: inLab(kubeProxyModeFault)},
		&cobra.Command{Use: "dns-policy Default|ClusterFirst", Short: "Set the dnsPolicy of traefik/lan-dns", Args: cobra.ExactArgs(1),
			RunE: inLab(func(ctx context.Context, f faults.Lab, a []string) error {
				_, err := f.SetDNSPolicy(ctx, "traefik", "lan-dns", corev1.DNSPolicy(a[0]))
				return err
			})},
		&cobra.Command{Use: "auth-location URL|idp", Short: "Make the auth server answer grafana's forward-auth with a redirect to URL (idp: the identity provider)", Args: cobra.ExactArgs(1),
			RunE: inLab(authLocationFault)},
	)
	return root
}

// faultFunc injects or reverts one fault, given the command's arguments.
type faultFunc func(ctx context.Context, f faults.Lab, args []string) error

// withLab runs a fault against the running lab, bounded by two minutes.
func withLab(lay func() layout.Layout, run faultFunc) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		l := lay()
		cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
		if err != nil {
			return fmt.Errorf("is the lab up? %w", err)
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
		defer cancel()
		return run(ctx, faults.Lab{Layout: l, Client: client}, args)
	}
}

// onOff reads a two-word switch: true for on, false for off.
func onOff(s string, on, off string) (bool, error) {
	switch s {
	case on:
		return true, nil
	case off:
		return false, nil
	}
	return false, fmt.Errorf("%q: want %s or %s", s, on, off)
}

func ipForwardFault(ctx context.Context, f faults.Lab, a []string) error {
	on, err := onOff(a[1], "on", "off")
	if err != nil {
		return err
	}
	if a[0] == "vpn-pod" {
		_, err = f.SetVPNPodIPForward(ctx, on)
		return err
	}
	_, err = f.SetIPForward(ctx, a[0], on)
	return err
}

func linkFault(ctx context.Context, f faults.Lab, a []string) error {
	up, err := onOff(a[1], "up", "down")
	if err != nil {
		return err
	}
	return f.SetLink(ctx, a[0], up)
}

func latencyFault(ctx context.Context, f faults.Lab, a []string) error {
	d, err := time.ParseDuration(a[1])
	if err != nil {
		return err
	}
	return f.SetLatency(ctx, a[0], d)
}

func newListenerFault(lay func() layout.Layout) *cobra.Command {
	var stop bool
	var addr string
	listener := &cobra.Command{
		Use: "listener NODE PORT tcp|udp", Short: "Start (or --stop) a process bound on a node port", Args: cobra.ExactArgs(3),
		RunE: withLab(lay, func(ctx context.Context, f faults.Lab, a []string) error {
			port, err := strconv.Atoi(a[1])
			if err != nil {
				return err
			}
			if stop {
				return f.StopProcess(ctx, faults.ListenerName(a[0], port, a[2]))
			}
			_, err = f.StartListener(ctx, a[0], addr, port, a[2])
			return err
		}),
	}
	listener.Flags().BoolVar(&stop, "stop", false, "stop the listener")
	listener.Flags().StringVar(&addr, "addr", "", "address to bind (default: the node's LAN address; 0.0.0.0 = wildcard)")
	return listener
}

// masqueradeFault drops the VPN pool's masquerade, keeping the removed rules in the state
// directory, or restores them from there.
func masqueradeFault(ctx context.Context, f faults.Lab, a []string) error {
	saved := f.Layout.Path("faults", "masquerade.rules")
	restore, err := onOff(a[0], "restore", "drop")
	if err != nil {
		return err
	}
	if restore {
		b, err := os.ReadFile(saved)
		if err != nil {
			return fmt.Errorf("nothing to restore: %w", err)
		}
		if err := f.RestoreNATRules(ctx, strings.Split(strings.TrimSpace(string(b)), "\n")); err != nil {
			return err
		}
		return os.Remove(saved)
	}
	removed, err := f.DropMasquerade(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.Layout.Path("faults"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(saved, []byte(strings.Join(removed, "\n")+"\n"), 0o600)
}

func returnRouteFault(ctx context.Context, f faults.Lab, a []string) error {
	restore, err := onOff(a[0], "restore", "drop")
	if err != nil {
		return err
	}
	if restore {
		return f.AddReturnRoutes(ctx, nil)
	}
	_, err = f.DropReturnRoutes(ctx)
	return err
}

// authLocationFault makes the lab's auth server answer grafana's host with a redirect to a URL
// (Traefik gives the browser what it makes of it), or ("idp") to the identity provider again.
func authLocationFault(ctx context.Context, f faults.Lab, a []string) error {
	loc := a[0]
	if loc == "idp" {
		loc = ""
	}
	_, err := f.SetForwardAuthLocation(ctx, "grafana.apps.example.com", loc)
	return err
}
