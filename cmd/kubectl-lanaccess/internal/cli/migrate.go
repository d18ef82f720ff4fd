package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/migrate"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// migrateOptions is everything `migrate` needs once its flags are read.
type migrateOptions struct {
	Form      migrate.Form
	Output    string
	Selection kube.Selection
	// setup reads the cluster; tests inject one that needs no cluster.
	setup func(ctx context.Context) (*kube.Setup, error)
}

func newMigrateCommand(kubeFlags *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	var (
		to, output, zoneName                string
		proxyService, dnsService, configMap string
		allNamespaces                       bool
	)
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Print the changes that move the setup off externalIPs",
		Long: `migrate prints, for a cluster on externalIPs, the exact changes that move the setup to a form
that Kubernetes keeps after it removes Service.spec.externalIPs (deprecated in 1.36, KEP-5707):
with --to hostport, the proxy and the zone's DNS as DaemonSets whose pods take ports 80/443 and 53
on the nodes that carry the addresses; with --to servicelb (k3s) or --to cilium-node-ipam,
LoadBalancer Services that k3s's ServiceLB or Cilium's node IPAM serves on those nodes. The addresses, the zone, the Services and the workloads
are read from the cluster; the new objects are printed as manifests (as chart values when the
proxy is a Traefik Helm release), with the cut-over: apply beside the old objects, judge them
with doctor, remove the externalIPs, judge again, delete the old objects. Nothing is changed.
MetalLB is refused: it cannot hand out the nodes' own addresses.`,
		Example: `  kubectl lanaccess migrate --to hostport
  # only the new objects, for kubectl apply -f - or a Git repository
  kubectl lanaccess migrate --to hostport -o yaml
  kubectl lanaccess migrate --to hostport \
    --proxy-service traefik/traefik --dns-service traefik/lan-dns`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			form, err := migrate.ParseForm(to)
			if err != nil {
				return usageErr("%v", err)
			}
			if output != "text" && output != "yaml" {
				return usageErr("invalid --output %q for migrate: use text or yaml", output)
			}
			z, err := parseZoneFlag(zoneName)
			if err != nil {
				return err
			}
			for flag, ref := range map[string]string{"--proxy-service": proxyService, "--dns-service": dnsService, "--configmap": configMap} {
				if err := kube.ValidateObjectRef(ref); err != nil {
					return usageErr("invalid %s %q: %v", flag, ref, err)
				}
			}
			sel := kube.Selection{ProxyService: proxyService, DNSService: dnsService, ConfigMap: configMap, Zone: z, AllNamespaces: allNamespaces}
			if !allNamespaces {
				sel.Namespace = namespaceGiven(cmd)
			}
			o := migrateOptions{Form: form, Output: output, Selection: sel}
			o.setup = func(ctx context.Context) (*kube.Setup, error) {
				c, err := connect(kubeFlags, discoveryTimeout)
				if err != nil {
					return nil, err
				}
				return discover(ctx, c, o.Selection)
			}
			return o.Run(cmd.Context(), streams.Out)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&to, "to", string(migrate.HostPort), "the form to move to: hostport, servicelb (k3s) or cilium-node-ipam (metallb is refused: it cannot use the nodes' own addresses)")
	fs.StringVarP(&output, "output", "o", "text", "text (the cut-over, step by step) or yaml (the new objects only)")
	fs.StringVar(&zoneName, "zone", "", "the zone served to workstations (default: the block with template IN A)")
	fs.StringVar(&proxyService, "proxy-service", "", "the proxy Service, [namespace/]name (default: the Service with externalIPs exposing 443)")
	fs.StringVar(&dnsService, "dns-service", "", "the zone DNS Service, [namespace/]name (default: the Service with externalIPs exposing 53)")
	fs.StringVar(&configMap, "configmap", "", "the ConfigMap holding the Corefile, [namespace/]name (default: the one the DNS pods mount)")
	fs.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "discover across all namespaces (the default unless -n is given)")
	_ = cmd.RegisterFlagCompletionFunc("to", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		forms := make([]string, 0, len(migrate.Forms))
		for _, f := range migrate.Forms {
			forms = append(forms, string(f))
		}
		return forms, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"text", "yaml"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// Run reads the setup, builds the plan and prints it.
func (o migrateOptions) Run(ctx context.Context, out io.Writer) error {
	s, err := o.setup(ctx)
	if err != nil {
		return exitFor(err)
	}
	p, err := migrate.Generate(s, o.Form)
	if err != nil {
		if _, ok := errors.AsType[*migrate.Error](err); ok {
			return usageErr("%v", err)
		}
		return exitFor(err)
	}
	if o.Output == "yaml" {
		manifest := p.Manifest()
		if manifest == "" {
			return nil
		}
		_, err := fmt.Fprintln(out, manifest)
		return err
	}
	return writePlan(out, p)
}

// writePlan prints the plan so that each step can be pasted as is: explanations are comments,
// commands plain lines.
func writePlan(w io.Writer, p *migrate.Plan) error {
	e := &errWriter{w: w}
	e.printf("%s\n", remedy.Commentf("# Move %s off externalIPs: --to %s.", strings.TrimSuffix(p.Zone, "."), p.Form))
	e.printf("%s\n", remedy.Commentf("# From %s.", p.Source))
	e.printf("# The node addresses (the Services' externalIPs today):\n")
	for _, a := range p.Addresses {
		e.printf("%s\n", remedy.Commentf("#   %s on %s", a.Addr, a.Node))
	}
	e.printf("\n# == The zone ==\n%s\n", comment(p.ZoneAnswers))
	if len(p.Notes) > 0 {
		e.printf("\n# == Know before starting ==\n")
		for _, n := range p.Notes {
			e.printf("%s\n", comment("- "+n))
		}
	}
	for i, s := range p.Steps {
		e.printf("\n# == %d. %s ==\n", i+1, s.Title)
		for _, why := range s.Why {
			e.printf("%s\n", comment(why))
		}
		e.printf("%s\n", strings.Join(s.Commands, "\n"))
	}
	return e.err
}
