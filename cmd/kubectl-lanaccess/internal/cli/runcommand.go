package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// runner is a command's validated options: what runs once the flags have been read.
type runner interface {
	Run(ctx context.Context, streams genericiooptions.IOStreams) error
}

// runFlags are the flags of a command that runs (doctor, vpn-trace, client-check...): added to the
// command, then turned into options (and validated) before anything runs.
type runFlags[O runner] interface {
	AddFlags(cmd *cobra.Command)
	ToOptions(cmd *cobra.Command, kubeFlags *kubeFlags, connect clientFactory) (O, error)
}

// runCommand is the one shape of the commands that run (doctor, vpn-trace, client-check,
// monitor, cleanup): flags parsed and validated into options (a bad value exits 2 before
// anything runs), then Run; --only/--skip complete from the command's part of the catalogue
// when it has one.
type runCommand struct {
	Use, Short, Long, Example string
	Catalogue                 string
}

func newRunCommand[O runner](c runCommand, f runFlags[O], kubeFlags *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     c.Use,
		Short:   c.Short,
		Long:    c.Long,
		Example: c.Example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.ToOptions(cmd, kubeFlags, connect)
			if err != nil {
				return usageReport(streams, f, c.Catalogue, err)
			}
			return o.Run(cmd.Context(), streams)
		},
	}
	f.AddFlags(cmd)
	if c.Catalogue != "" {
		registerCheckCompletions(cmd, c.Catalogue)
		cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
			if cf, ok := any(f).(checkFlagsHolder); ok {
				cf.checkFlags().reportPathsFromArgs(os.Args[1:])
			}
			return usageReport(streams, f, c.Catalogue, &ExitError{Code: ExitUsage, Err: err})
		})
	}
	return cmd
}

// checkFlagsHolder is the flags of a check command (doctor, vpn-trace, client-check).
type checkFlagsHolder interface{ checkFlags() *CheckFlags }

func (f *DoctorFlags) checkFlags() *CheckFlags      { return f.Checks }
func (f *VPNTraceFlags) checkFlags() *CheckFlags    { return f.Checks }
func (f *ClientCheckFlags) checkFlags() *CheckFlags { return f.Checks }

// usageReport ends a check command whose flags or values were refused (exit 2) the way a run
// that could not start ends: the not-started result (LA000, VPN000, WS000) in --json-file,
// --junit-file and -o json/yaml/junit, so that a CI job with a mistyped --skip still has a
// report saying why.
func usageReport(streams genericiooptions.IOStreams, f any, command string, cause error) error {
	cf, ok := f.(checkFlagsHolder)
	if !ok || command == "" {
		return cause
	}
	return notStarted(streams, cf.checkFlags(), command, report.Report{}, cause)
}
