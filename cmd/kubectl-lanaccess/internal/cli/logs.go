package cli

import (
	goflag "flag"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// addLogFlags gives the plugin kubectl's log verbosity: -v=6 shows the API requests, as with
// kubectl. Without -v, client-go's own log lines (an exec stream the plugin ends on purpose
// logs an error) stay out of the report's way.
func addLogFlags(root *cobra.Command, errOut io.Writer) {
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	root.PersistentFlags().AddGoFlag(fs.Lookup("v"))
	root.PersistentFlags().Lookup("v").Shorthand = "v"
	root.PersistentFlags().AddGoFlag(fs.Lookup("vmodule"))
	configure := func(cmd *cobra.Command) {
		if !cmd.Flags().Changed("v") {
			_ = fs.Set("v", "0")
			klog.SetOutput(io.Discard)
			_ = fs.Set("logtostderr", "false")
			_ = fs.Set("alsologtostderr", "false")
			_ = fs.Set("stderrthreshold", "FATAL")
			return
		}
		klog.SetOutput(errOut)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
	}
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		configure(cmd)
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}
