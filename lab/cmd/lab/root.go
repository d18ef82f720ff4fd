package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

func newRootCommand() *cobra.Command {
	var stateDir string
	root := &cobra.Command{
		Use:           "lab",
		Short:         "A real Kubernetes lab on this machine: control plane, namespace nodes, CoreDNS, Traefik, OpenVPN",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&stateDir, "state-dir", "", "lab state directory (default $LAB_STATE_DIR or "+layout.DefaultStateDir+")")
	lay := func() layout.Layout {
		l := layout.Default()
		if stateDir != "" {
			l.StateDir = stateDir
		}
		return l
	}
	root.AddCommand(newUpCommand(lay), newDownCommand(lay), newStatusCommand(lay), newDaemonCommand(lay), newSuperviseCommand(),
		newServeHTTPCommand(), newServeAuthCommand(), newDelayCommand(), newListenCommand(), newFaultCommand(lay),
		newKubeletShimCommand(lay), newContainerExecCommand())
	return root
}

func newUpCommand(lay func() layout.Layout) *cobra.Command {
	var timeout time.Duration
	up := &cobra.Command{
		Use:   "up",
		Short: "Bring the lab up (idempotent: a healthy lab is left as it is)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			labDir, err := binaries.LabDir()
			if err != nil {
				return err
			}
			l := lay()
			start := time.Now()
			if os.Getenv(labctl.LockHeldEnv) == "" {
				// Two ups at once would build the same namespaces; tests in progress must not
				// see their lab rebuilt.
				unlock, err := labctl.LockLab(l, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer unlock()
			}
			if err := labctl.Up(cmd.Context(), l, labctl.Options{LabDir: labDir, Out: cmd.ErrOrStderr(), Timeout: timeout}); err != nil {
				return err
			}
			return printReady(cmd.OutOrStdout(), l, time.Since(start))
		},
	}
	up.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "bound on the whole bring-up (binaries already built)")
	return up
}

// printReady tells how to use the lab that is up.
func printReady(out io.Writer, l layout.Layout, took time.Duration) error {
	st, _ := labctl.LoadState(l)
	_, err := fmt.Fprintf(out, `lab ready (this command: %s)
kubeconfig: %[2]s
CA file:    %[3]s
kubectl:    %[4]s

Run the plugin from the lab's LAN laptop, so that every packet (the system resolver's too)
stays in the lab:
  make build
  ip netns exec laptop bin/kubectl-lanaccess doctor --kubeconfig %[2]s --ca-file %[3]s
  ip netns exec laptop bin/kubectl-lanaccess vpn-trace -n vpn --from-client --kubeconfig %[2]s

nodes: %[5]s; workstation 10.0.10.1 on bridge %[6]s; `+"`go run ./lab/cmd/lab down`"+` removes it all
`, took.Round(100*time.Millisecond), l.AdminKubeconfig(), l.CAFile(), st.Binaries.KubectlBin(), nodeList(l), l.Bridge)
	return err
}

func newDownCommand(lay func() layout.Layout) *cobra.Command {
	var force bool
	down := &cobra.Command{
		Use:   "down",
		Short: "Remove every namespace, process, rule, bridge and file the lab made",
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := lay()
			if !force {
				// Wait for running lab tests rather than pull the lab from under them.
				unlock, err := labctl.LockLab(l, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer unlock()
			}
			return labctl.Down(cmd.Context(), l, cmd.OutOrStdout())
		},
	}
	down.Flags().BoolVar(&force, "force", false, "do not wait for lab tests that are running")
	return down
}

func newStatusCommand(lay func() layout.Layout) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the lab's processes, namespaces, nodes and pods; exit 1 if not healthy",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return labctl.Status(cmd.Context(), lay(), cmd.OutOrStdout())
		},
	}
}

// newDaemonCommand is how `up` starts the daemon (daemon.Spec): it gives the daemon the binaries
// the lab state records, and nothing else of bring-up.
func newDaemonCommand(lay func() layout.Layout) *cobra.Command {
	return &cobra.Command{
		Use:    "daemon",
		Short:  "Run the lab's sync loops (started by up)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := lay()
			st, err := labctl.LoadState(l)
			if err != nil {
				return err
			}
			logger := log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
			return daemon.Run(cmd.Context(), daemon.Config{Layout: l, Binaries: st.Binaries, Log: logger})
		},
	}
}

func nodeList(l layout.Layout) string {
	nodes := make([]string, 0, len(l.Nodes))
	for _, n := range l.Nodes {
		nodes = append(nodes, n.NS+" "+n.LANIP)
	}
	return strings.Join(nodes, ", ")
}
