package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

func newManifestsCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var opts manifests.Options
	cmd := &cobra.Command{
		Use:   "manifests [NAME]",
		Short: "Print least-privilege RBAC and CI examples",
		Long: `manifests prints YAML that goes with this version of the plugin: the RBAC that lets doctor
and vpn-trace run with the least privilege, and examples that run doctor after a deploy (the
-vpn ones run vpn-trace after the VPN's, with the opt-in exec grant).
Without a name, it lists them: ` + strings.Join(manifests.Names(), ", ") + ".",
		Example: `  kubectl lanaccess manifests rbac | kubectl apply -f -
  kubectl lanaccess manifests job | kubectl apply -f -
  kubectl lanaccess manifests job --ca-configmap proxy-ca \
    --image registry.lan/kubectl-lanaccess:v0.2.0
  kubectl lanaccess manifests github-actions > .github/workflows/lanaccess.yaml
  kubectl lanaccess manifests rbac-vpn-exec | kubectl apply -f -
  kubectl lanaccess manifests job-vpn | kubectl apply -f -`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: manifests.Names(),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
				for _, m := range manifests.All() {
					if _, err := fmt.Fprintf(tw, "%s\t%s\n", m.Name, m.Description); err != nil {
						return err
					}
				}
				return tw.Flush()
			}
			body, err := manifests.Render(args[0], opts)
			if err != nil {
				return usageErr("%v", err)
			}
			_, err = streams.Out.Write(body)
			return err
		},
	}
	cmd.Flags().StringVar(&opts.Image, "image", "", "the plugin's image in the job, helm-test and argocd examples and their -vpn variants (default: the image of this version, "+version.Image()+")")
	cmd.Flags().StringVar(&opts.CAConfigMap, "ca-configmap", "", "a ConfigMap in the lanaccess namespace whose ca.crt signs the proxy's certificate: mounted, and passed as --ca-file (doctor's examples)")
	return cmd
}
