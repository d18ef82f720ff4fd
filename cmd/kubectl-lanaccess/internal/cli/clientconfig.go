package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/pkg/workstation"
)

// clientConfigOptions is everything `client-config` needs once flags are read.
type clientConfigOptions struct {
	OS     workstation.OS
	Output string
	Config workstation.ConfigOptions
	Target targetFunc
}

func newClientConfigCommand(kubeFlags *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	var (
		osName string
		output string
		cfg    workstation.ConfigOptions
		target targetFlags
	)
	cmd := &cobra.Command{
		Use:   "client-config",
		Short: "Print a workstation's commands that send the zone to the nodes",
		Long: `client-config prints, for Linux (NetworkManager + systemd-resolved), Windows (NRPT) or macOS
(/etc/resolver), the commands that send the zone, and only the zone, to the LAN DNS on the node
addresses, the commands that undo it, and what to know before relying on it. The zone and the
addresses are read from the cluster, or given with --zone and --dns-server.`,
		Example: `  # this workstation's OS, from the cluster
  kubectl lanaccess client-config
  # a Linux workstation whose LAN profile is "Wired connection 1"
  kubectl lanaccess client-config --os linux --connection "Wired connection 1"
  # without cluster access
  kubectl lanaccess client-config --os windows --zone apps.example.com \
    --dns-server 10.0.10.11,10.0.10.12,10.0.10.13`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := clientConfigOptions{Output: output, Config: cfg}
			var err error
			if o.OS, err = osFlag(osName); err != nil {
				return err
			}
			if output != "text" && output != "json" && output != "yaml" {
				return usageErr("invalid --output %q for client-config: use text, json or yaml", output)
			}
			if o.Target, err = target.source(kubeFlags, connect); err != nil {
				return err
			}
			return o.Run(cmd.Context(), streams.Out)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&osName, "os", "", "linux, windows or macos (default: this machine's)")
	fs.StringVar(&cfg.Connection, "connection", "", "Linux: the NetworkManager profile of the LAN connection (default: a placeholder, and the command that lists them)")
	fs.StringVar(&cfg.Device, "device", "", "Linux: the network interface of that connection, for the transient setup")
	fs.StringVar(&cfg.ProbeName, "host", "", "a name in the zone for the verification commands (default: the zone itself)")
	fs.StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	target.AddFlags(fs)
	_ = cmd.RegisterFlagCompletionFunc("os", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"linux", "windows", "macos"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// osFlag parses --os; empty means the OS the plugin runs on.
func osFlag(name string) (workstation.OS, error) {
	if name == "" {
		name = runtime.GOOS
	}
	sys, err := workstation.ParseOS(name)
	if err != nil {
		return "", usageErr("--os: %v", err)
	}
	return sys, nil
}

// Run reads the target and prints the instructions.
func (o clientConfigOptions) Run(ctx context.Context, out io.Writer) error {
	t, err := o.Target(ctx)
	if err != nil {
		return exitFor(err)
	}
	ins, err := workstation.Generate(o.OS, t.Target, o.Config)
	if err != nil {
		return usageErr("%v", err)
	}
	switch o.Output {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(ins)
	case "yaml":
		b, err := yaml.Marshal(ins)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	return writeInstructions(out, ins, t.Source)
}

func osTitle(sys workstation.OS) string {
	switch sys {
	case workstation.Linux:
		return "Linux (NetworkManager + systemd-resolved)"
	case workstation.Windows:
		return "Windows (Name Resolution Policy Table)"
	case workstation.MacOS:
		return "macOS (/etc/resolver)"
	}
	return string(sys)
}

// writeInstructions prints the steps so that each section can be pasted as is: explanations
// are comments (# in sh and in PowerShell), commands are plain lines.
func writeInstructions(w io.Writer, ins workstation.Instructions, source string) error {
	p := &errWriter{w: w}
	p.printf("# Send %s, and only %s, to %s on %s.\n", ins.Zone, ins.Zone, strings.Join(ins.Servers, ", "), osTitle(ins.OS))
	p.printf("# From %s. Run in %s.\n", source, ins.Shell)
	section := func(title string, steps []workstation.Step) {
		if len(steps) == 0 {
			return
		}
		p.printf("\n# == %s ==\n", title)
		for _, s := range steps {
			p.printf("%s\n%s\n", comment(s.Comment), s.Command)
		}
	}
	section("Apply", ins.Apply)
	section("Verify", ins.Verify)
	section("Remove", ins.Remove)
	section("Or try it without saving anything", ins.Transient)
	section("and undo that", ins.TransientRemove)
	p.printf("\n# == Know before relying on it ==\n")
	for _, c := range ins.Caveats {
		p.printf("%s\n", comment("- "+c))
	}
	return p.err
}

// comment wraps text into "# " lines of at most 100 characters.
func comment(text string) string {
	const width = 100
	var lines []string
	line := "#"
	for word := range strings.FieldsSeq(text) {
		if len(line)+1+len(word) > width && line != "#" {
			lines = append(lines, line)
			line = "#  "
		}
		line += " " + word
	}
	return strings.Join(append(lines, line), "\n")
}

// errWriter keeps the first write error so that printing code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}
