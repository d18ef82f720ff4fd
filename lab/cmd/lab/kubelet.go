package main

import (
	"log"
	"os"

	"github.com/spf13/cobra"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/kubeletshim"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// newKubeletShimCommand is how `up` starts a node's kubelet shim (labctl.KubeletShimSpec).
func newKubeletShimCommand(lay func() layout.Layout) *cobra.Command {
	var c kubeletshim.Config
	var node string
	cmd := &cobra.Command{
		Use:    "kubelet-shim",
		Short:  "Serve a node's kubelet port: exec in the pods' namespaces, the rest from kwok (started by up)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Layout = lay()
			n, err := c.Layout.Node(node)
			if err != nil {
				return err
			}
			c.Node = n
			c.Log = log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
			return kubeletshim.Run(cmd.Context(), c)
		},
	}
	f := cmd.Flags()
	f.StringVar(&node, "node", "", "the lab node")
	f.StringVar(&c.Listen, "listen", "", "the kubelet address (node address:port)")
	f.StringVar(&c.Upstream, "upstream", "", "kwok's address (http://127.0.0.1:PORT)")
	f.StringVar(&c.CertFile, "tls-cert-file", "", "kubelet serving certificate")
	f.StringVar(&c.KeyFile, "tls-private-key-file", "", "its key")
	f.StringVar(&c.ClientCAFile, "client-ca-file", "", "CA of the API server's kubelet client certificate")
	f.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig to read pods with")
	return cmd
}

// newContainerExecCommand runs a command in a container's root (kubeletshim.ContainerExec):
// the shim runs it under `ip netns exec`, in that command's own mount namespace.
func newContainerExecCommand() *cobra.Command {
	var root string
	var binds []string
	cmd := &cobra.Command{
		Use:    kubeletshim.ContainerExecCommand + " --root DIR [--bind SRC:DST]... -- COMMAND...",
		Short:  "Run a command with a pod's volumes at their mount paths",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var bs []kubeletshim.Bind
			for _, s := range binds {
				b, err := kubeletshim.ParseBind(s)
				if err != nil {
					return err
				}
				bs = append(bs, b)
			}
			return kubeletshim.ContainerExec(root, bs, args)
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "scratch directory for the container's root")
	cmd.Flags().StringArrayVar(&binds, "bind", nil, "SOURCE:TARGET, a volume")
	return cmd
}
