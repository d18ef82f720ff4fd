package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := version.Get()
			switch output {
			case "json":
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			case "yaml":
				out, err := yaml.Marshal(v)
				if err != nil {
					return err
				}
				_, err = streams.Out.Write(out)
				return err
			case "", "text":
				_, err := fmt.Fprintf(streams.Out, "kubectl-lanaccess %s (commit %s, built %s)\n", v.Version, v.Commit, v.Date)
				return err
			}
			return usageErr("invalid --output %q for version: use text, json or yaml", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}
