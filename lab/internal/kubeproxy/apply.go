package kubeproxy

import (
	"context"
	"fmt"
	"log"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// hooks jump from the built-in chains to the lab's chains.
var hooks = [][]string{
	{"PREROUTING", "-j", ServicesChain},
	{"OUTPUT", "-j", ServicesChain},
	{"POSTROUTING", "-j", PostroutingChain},
}

// Proxy programs the nodes; it remembers what each node got to skip no-op updates.
type Proxy struct {
	Nodes    []string
	Services func() ([]*corev1.Service, error)
	Slices   func() ([]*discoveryv1.EndpointSlice, error)
	Log      *log.Logger

	applied map[string]string
}

// Sync computes and applies the rules of every node.
func (p *Proxy) Sync(ctx context.Context) error {
	if p.applied == nil {
		p.applied = map[string]string{}
	}
	svcs, err := p.Services()
	if err != nil {
		return err
	}
	slices, err := p.Slices()
	if err != nil {
		return err
	}
	for _, node := range p.Nodes {
		input := RestoreInput(Rules(node, svcs, slices))
		if p.applied[node] == input {
			continue
		}
		if err := Apply(ctx, node, input); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
		p.applied[node] = input
		p.Log.Printf("kube-proxy: programmed %s", node)
	}
	return nil
}

// Apply installs the chains and their hooks in ns.
func Apply(ctx context.Context, ns, input string) error {
	if _, err := netns.RunInput(ctx, ns, input, "iptables-restore", "--noflush"); err != nil {
		return err
	}
	for _, h := range hooks {
		check := append([]string{"iptables", "-t", "nat", "-C"}, h...)
		if _, err := netns.Run(ctx, ns, check...); err == nil {
			continue
		}
		// Insert first: the lab's Services must win over anything appended later, like
		// kube-proxy's KUBE-SERVICES jump.
		insert := append([]string{"iptables", "-t", "nat", "-I", h[0], "1"}, h[1:]...)
		if _, err := netns.Run(ctx, ns, insert...); err != nil {
			return err
		}
	}
	return nil
}
