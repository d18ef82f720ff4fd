package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// CheckFlags are the flags every check command shares (doctor, vpn-trace).
type CheckFlags struct {
	Output     string
	Only, Skip []string
	FailOn     string
	Timeout    time.Duration
	// ExecTimeout bounds every command run in a pod or on a node.
	ExecTimeout time.Duration
	Wait        time.Duration
	Interval    time.Duration
	// Deadline bounds one whole run (reading the cluster, every check, the helpers' start):
	// when it comes, what finished is reported and the rest is ERROR naming it (exit 3).
	Deadline   time.Duration
	JUnitFile  string
	JSONFile   string
	ConfigFile string
	Color      string
	Verbose    bool
	// NoWrap keeps each finding on one line (default: wrapped to the terminal, 80 columns when
	// the output is not a terminal).
	NoWrap bool
	// Record writes a replay bundle of the run (Anonymize: with names, hosts and addresses
	// replaced); Replay judges a bundle instead of a cluster (tape.go, docs/replay.md).
	Record    string
	Replay    string
	Anonymize bool
	tape      *tape
	// LogFile takes what the run writes on stderr (--wait's attempts, warnings, the final
	// error), so that stdout holds the report alone (run.go, runChecks).
	LogFile string
}

// NewCheckFlags returns the defaults.
func NewCheckFlags() *CheckFlags {
	return &CheckFlags{Output: "text", FailOn: "fail", Timeout: 2 * time.Second, ExecTimeout: 20 * time.Second, Interval: 5 * time.Second, Deadline: DefaultDeadline, Color: "auto"}
}

// DefaultDeadline bounds a whole run of doctor, vpn-trace or client-check. A healthy run
// takes seconds (doctor about 2 s with its helper pods, vpn-trace about one hop timeout plus
// a second, make bench); the bound is for the run that hangs on an API server or a node that
// does not answer, and leaves room for one command at --exec-timeout's default (20 s) behind a
// helper pod's start: a CI job gets one number that it can rely on.
const DefaultDeadline = 2 * time.Minute

// selectionExamples are the --only and --skip examples of each check command's help: IDs and a
// finding code of that command's own catalogue (TestSelectionExamplesAreValid runs them).
var selectionExamples = map[string][2]string{
	catalogue.Doctor:      {"LA1,LA301", "LA106-ADMISSION"},
	catalogue.VPNTraceCmd: {"VPN002,VPN006", "VPN003-SET-LIVE-UNREAD"},
	catalogue.ClientCheck: {"WS001,WS002", "WS002"},
}

// AddFlags registers the flags of the check command named command (a catalogue command):
// --timeout only where the command probes the network itself (vpn-trace's hops have
// --hop-timeout), and --only/--skip examples from its own catalogue.
func (f *CheckFlags) AddFlags(fs *pflag.FlagSet, command string) {
	ex := selectionExamples[command]
	fs.StringVarP(&f.Output, "output", "o", f.Output, "output format: text, json, yaml or junit")
	fs.StringSliceVar(&f.Only, "only", nil, "run only these check IDs or ID prefixes (e.g. "+ex[0]+")")
	fs.StringSliceVar(&f.Skip, "skip", nil, "skip these check IDs or ID prefixes, or silence these finding codes (e.g. "+ex[1]+")")
	fs.StringVar(&f.FailOn, "fail-on", f.FailOn, "lowest status that makes the exit code 1: fail or warn")
	if command != catalogue.VPNTraceCmd {
		fs.DurationVar(&f.Timeout, "timeout", f.Timeout, "deadline of each network probe (one DNS query, one TLS handshake and request)")
	}
	fs.DurationVar(&f.ExecTimeout, "exec-timeout", f.ExecTimeout, "deadline of each command run in a pod or on a node (a helper pod's start is bounded separately)")
	fs.DurationVar(&f.Wait, "wait", 0, "re-run until everything passes or this much time has passed (CI after a deploy), e.g. 3m")
	fs.DurationVar(&f.Interval, "wait-interval", f.Interval, "pause between --wait attempts")
	fs.DurationVar(&f.Deadline, "deadline", f.Deadline, "bound on one whole run (each --wait attempt): when it comes, what finished is reported and what did not is ERROR (exit 3)")
	fs.StringVar(&f.JUnitFile, "junit-file", "", "also write a JUnit XML report to this file")
	fs.StringVar(&f.JSONFile, "json-file", "", "also write the JSON report to this file")
	fs.StringVar(&f.LogFile, "log-file", "", "write --wait's attempts and the errors to this file instead of stderr, e.g. /dev/termination-log in a pod (its log is then the report alone)")
	fs.StringVar(&f.ConfigFile, "config", "", "YAML file of settings; keys are the long flag names (flags given on the command line win)")
	fs.StringVar(&f.Color, "color", f.Color, "colour the text output: auto (a terminal; NO_COLOR, FORCE_COLOR and CLICOLOR_FORCE as their standards say), always or never")
	fs.BoolVar(&f.Verbose, "verbose", false, "show info findings and the evidence of passing checks (-v is kubectl's log verbosity)")
	fs.BoolVar(&f.NoWrap, "no-wrap", false, "do not wrap findings to the terminal's width")
	fs.StringVar(&f.Record, "record", "", "also write a replay bundle of everything the run read to this file (no Secrets' data, no credentials)")
	fs.StringVar(&f.Replay, "replay", "", "judge a bundle written by --record instead of a cluster: no cluster, no network")
	fs.BoolVar(&f.Anonymize, "anonymize", false, "with --record: replace names, hosts and addresses in the bundle, consistently")
}

// Validate checks the values that flags alone cannot.
func (f *CheckFlags) Validate() error {
	switch f.Output {
	case "text", "json", "yaml", "junit":
	default:
		return usageErr("invalid --output %q: use text, json, yaml or junit", f.Output)
	}
	switch f.FailOn {
	case "fail", "warn":
	default:
		return usageErr("invalid --fail-on %q: use fail or warn", f.FailOn)
	}
	switch f.Color {
	case "auto", "always", "never":
	default:
		return usageErr("invalid --color %q: use auto, always or never", f.Color)
	}
	if f.ExecTimeout <= 0 {
		return usageErr("--exec-timeout must be positive, got %s", f.ExecTimeout)
	}
	if f.Timeout <= 0 {
		return usageErr("--timeout must be positive, got %s", f.Timeout)
	}
	if f.Wait < 0 || f.Interval <= 0 {
		return usageErr("--wait must be >= 0 and --wait-interval > 0")
	}
	if f.Deadline <= 0 {
		return usageErr("--deadline must be positive, got %s", f.Deadline)
	}
	return nil
}

// Complete applies --config to the flags the command line did not set, then validates them,
// --only and --skip against the command's catalogue.
func (f *CheckFlags) Complete(cmd *cobra.Command, command string) error {
	if err := applyConfigFile(cmd, f.ConfigFile); err != nil {
		return err
	}
	if err := f.completeTape(cmd, command); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return err
	}
	var cs []engine.Check
	for _, e := range catalogue.ForCommand(command) {
		cs = append(cs, engine.Check{ID: e.ID, Codes: e.CodeStrings()})
	}
	if err := (&engine.Runner{Checks: cs, Only: f.Only, Skip: f.Skip}).Validate(); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// namespaceGiven returns the namespace of -n/--namespace when the user gave it, else "" (every
// namespace): without -n the commands look cluster-wide rather than in the kubeconfig's default.
func namespaceGiven(cmd *cobra.Command) string {
	if fl := cmd.Flags().Lookup("namespace"); fl != nil && fl.Changed {
		return fl.Value.String()
	}
	return ""
}

// useColor decides colour for the text report (colorWanted, with this process's environment).
func (f *CheckFlags) useColor(out any) bool {
	return colorWanted(f.Color, os.Getenv, isTerminal(out))
}

// colorWanted: --color always/never win; then each variable as its standard says:
// NO_COLOR present and not empty disables colour (no-color.org: "regardless of its value";
// empty means unset); FORCE_COLOR present and not empty forces it (force-color.org), as does
// CLICOLOR_FORCE other than "0" (bixense.com/clicolors); CLICOLOR=0 and TERM=dumb disable it;
// otherwise colour only on a terminal. NO_COLOR comes before the forcing variables: an
// explicit opt-out is not overridden by a CI default.
func colorWanted(flag string, getenv func(string) string, terminal bool) bool {
	switch flag {
	case "always":
		return true
	case "never":
		return false
	}
	switch {
	case getenv("NO_COLOR") != "":
		return false
	case getenv("FORCE_COLOR") != "":
		return true
	case getenv("CLICOLOR_FORCE") != "" && getenv("CLICOLOR_FORCE") != "0":
		return true
	case getenv("CLICOLOR") == "0", getenv("TERM") == "dumb":
		return false
	}
	return terminal
}

// textWidth is the width findings wrap to: the terminal's, 80 for a pipe or a file, 0 with
// --no-wrap.
func (f *CheckFlags) textWidth(out any) int {
	if f.NoWrap {
		return 0
	}
	if w := terminalColumns(out); w > 0 {
		return w
	}
	return 80
}

// terminalColumns is the width of the terminal out writes to, 0 when it is not one.
func terminalColumns(out any) int {
	if file, ok := out.(*os.File); ok && isTerminal(out) {
		if w, _, err := term.GetSize(int(file.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

func isTerminal(out any) bool {
	file, ok := out.(*os.File)
	return ok && (isatty.IsTerminal(file.Fd()) || isatty.IsCygwinTerminal(file.Fd()))
}

// applyConfigFile sets every flag named in the YAML file that was not given on the command line.
// Keys are long flag names (kubectl's too, e.g. context); lists may be YAML lists.
func applyConfigFile(cmd *cobra.Command, path string) error {
	if path == "" {
		return nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return usageErr("--config: %v", err)
	}
	var settings map[string]any
	if err := yaml.Unmarshal(raw, &settings); err != nil {
		return usageErr("--config %s: not valid YAML: %v", path, err)
	}
	for key, value := range settings {
		flag := cmd.Flags().Lookup(key)
		if flag == nil {
			flag = cmd.InheritedFlags().Lookup(key)
		}
		if flag == nil {
			return usageErr("--config %s: unknown setting %q (settings are the long flag names of %q, e.g. only, timeout, context)", path, key, cmd.CommandPath())
		}
		if flag.Changed || key == "config" {
			continue
		}
		var text string
		switch v := value.(type) {
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			text = strings.Join(parts, ",")
		case nil:
			continue
		default:
			text = fmt.Sprint(v)
		}
		if err := flag.Value.Set(text); err != nil {
			return usageErr("--config %s: setting %s: %v", path, key, err)
		}
	}
	return nil
}

// reportPathsFromArgs fills --json-file and --junit-file from raw arguments when flag parsing
// stopped before reaching them (pflag stops at the first bad flag), so that the usage error's
// report is written wherever on the command line they were given.
func (f *CheckFlags) reportPathsFromArgs(args []string) {
	for i, arg := range args {
		if arg == "--" {
			return
		}
		for name, dst := range map[string]*string{"--json-file": &f.JSONFile, "--junit-file": &f.JUnitFile} {
			switch {
			case *dst != "":
			case strings.HasPrefix(arg, name+"="):
				*dst = strings.TrimPrefix(arg, name+"=")
			case arg == name && i+1 < len(args):
				*dst = args[i+1]
			}
		}
	}
}
