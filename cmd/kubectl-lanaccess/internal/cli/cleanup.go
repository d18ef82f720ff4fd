package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/report"
)

// CleanupFlags is the raw input of `cleanup`.
type CleanupFlags struct {
	AllNamespaces bool
	RunIDs        []string
	All           bool
	DryRun        bool
}

// AddFlags registers cleanup's flags.
func (f *CleanupFlags) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "look in every namespace (the default unless -n is given)")
	fs.StringSliceVar(&f.RunIDs, "run-id", nil, "delete the helper pods of these runs (label kubectl-lanaccess/run-id), running or not")
	fs.BoolVar(&f.All, "all", false, "delete every helper pod, those of runs still going included (another operator's doctor loses its node reads)")
	fs.BoolVar(&f.DryRun, "dry-run", false, "list what would be deleted and kept; delete nothing")
}

// CleanupOptions is cleanup's validated input.
type CleanupOptions struct {
	Policy podexec.CleanupPolicy
	DryRun bool

	kubeFlags *kubeFlags
	connect   clientFactory
}

// ToOptions validates the flags (exit 2 naming the flag).
func (f *CleanupFlags) ToOptions(cmd *cobra.Command, kubeFlags *kubeFlags, connect clientFactory) (*CleanupOptions, error) {
	p := podexec.CleanupPolicy{RunIDs: f.RunIDs, All: f.All}
	if err := p.Validate(); err != nil {
		return nil, usageErr("--run-id: %v", err)
	}
	if f.All && len(f.RunIDs) > 0 {
		return nil, usageErr("--all deletes every run's helper pods: give it or --run-id, not both")
	}
	if !f.AllNamespaces {
		p.Namespace = namespaceGiven(cmd)
	}
	return &CleanupOptions{Policy: p, DryRun: f.DryRun, kubeFlags: kubeFlags, connect: connect}, nil
}

// Run deletes what the policy selects and says what it kept and why.
func (o *CleanupOptions) Run(ctx context.Context, streams genericiooptions.IOStreams) error {
	c, err := o.connect(o.kubeFlags, 10*time.Second)
	if err != nil {
		return err
	}
	client := c.typed
	if o.DryRun {
		client = noPodDeletes{client}
	}
	res, err := podexec.Cleanup(ctx, client, o.Policy)
	if werr := writeCleanup(streams.Out, res, o.DryRun); werr != nil {
		err = errors.Join(err, fmt.Errorf("writing the output: %w", werr))
	}
	if err != nil {
		return &ExitError{Code: ExitUnevaluated, Err: err}
	}
	return nil
}

// writeCleanup prints one line per pod (names and reasons come from the cluster: escaped).
func writeCleanup(w io.Writer, res podexec.CleanupResult, dryRun bool) error {
	var err error
	line := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintln(w, report.Escape(fmt.Sprintf(format, a...)))
		}
	}
	deleted := "deleted"
	if dryRun {
		deleted = "would delete"
	}
	for _, p := range res.Deleted {
		line("%s pod %s (run %s: %s)", deleted, p.Pod, p.RunID, p.Why)
	}
	for _, p := range res.Kept {
		line("kept pod %s (run %s: %s): --run-id %s deletes it", p.Pod, p.RunID, p.Why, p.RunID)
	}
	if len(res.Deleted) == 0 && len(res.Kept) == 0 {
		line("nothing to clean up")
	}
	return err
}

func newCleanupCommand(kubeFlags *kubeFlags, streams genericiooptions.IOStreams, connect clientFactory) *cobra.Command {
	return newRunCommand(runCommand{
		Use:   "cleanup",
		Short: "Delete the helper pods that finished or killed runs left",
		Long: `cleanup deletes the helper pods that a killed run left behind: pods that ended, and pods past
their deadline (activeDeadlineSeconds), which a node that is down never enforces. A helper of a
run that may still be going is kept and listed: it could be another operator's doctor reading a
node right now. --run-id deletes the pods of the runs named, --all every helper pod.`,
		Example: `  # what killed runs left, in every namespace
  kubectl lanaccess cleanup

  # the pods of one run (its id is in the warning of the run that left them)
  kubectl lanaccess cleanup -n lanaccess-helpers --run-id 3f9a1c2e

  # what --all would delete, deleting nothing
  kubectl lanaccess cleanup --all --dry-run`,
	}, &CleanupFlags{}, kubeFlags, streams, connect)
}

// noPodDeletes is the clientset of `cleanup --dry-run`: it lists as the real one does and
// answers every pod delete as done without sending it, so that the selection (and the output)
// is exactly the real run's and nothing is deleted.
type noPodDeletes struct{ client.Interface }

func (c noPodDeletes) CoreV1() client.CoreV1Interface {
	return noPodDeletesCore{c.Interface.CoreV1()}
}

type noPodDeletesCore struct{ client.CoreV1Interface }

func (c noPodDeletesCore) Pods(namespace string) client.PodInterface {
	return noPodDeletesPods{c.CoreV1Interface.Pods(namespace)}
}

// noPodDeletesPods: client.PodInterface has Delete as its only way to delete (no
// DeleteCollection), so this is every delete cleanup could send.
type noPodDeletesPods struct{ client.PodInterface }

func (noPodDeletesPods) Delete(context.Context, string, metav1.DeleteOptions) error { return nil }
