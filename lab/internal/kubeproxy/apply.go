package kubeproxy

import (
	"context"
	"fmt"
	"log"
	"sort"
	"strconv"
	"strings"

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
	rules   map[string][]Rule
}

// Sync computes and applies the rules of every node.
func (p *Proxy) Sync(ctx context.Context) error {
	if p.applied == nil {
		p.applied, p.rules = map[string]string{}, map[string][]Rule{}
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
		rules := Rules(node, svcs, slices)
		input := RestoreInput(rules)
		if p.applied[node] == input {
			continue
		}
		if err := Apply(ctx, node, input); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
		for _, fe := range StaleUDP(p.rules[node], rules) {
			if err := FlushUDP(ctx, node, fe); err != nil {
				return fmt.Errorf("node %s: %w", node, err)
			}
		}
		p.applied[node], p.rules[node] = input, rules
		p.Log.Printf("kube-proxy: programmed %s (%d rules)", node, len(rules))
	}
	return nil
}

// Frontend is a Service address and port.
type Frontend struct {
	IP   string
	Port int32
}

// StaleUDP lists the UDP frontends whose endpoint changed, vanished or appeared. Like
// kube-proxy, the lab must delete their conntrack entries: a UDP client that keeps its source
// port (an OpenVPN client, a resolver) would otherwise stay pinned to the old endpoint, or, if
// it sent while the Service had none, to the node itself, where nothing listens.
func StaleUDP(old, cur []Rule) []Frontend {
	udp := func(rules []Rule) map[Frontend]Endpoint {
		m := map[Frontend]Endpoint{}
		for _, r := range rules {
			if r.Protocol == corev1.ProtocolUDP {
				m[Frontend{r.Frontend, r.Port}] = r.Endpoint
			}
		}
		return m
	}
	before, now := udp(old), udp(cur)
	var stale []Frontend
	for fe, ep := range before {
		if cur, ok := now[fe]; !ok || cur != ep {
			stale = append(stale, fe)
		}
	}
	for fe := range now {
		if _, ok := before[fe]; !ok {
			stale = append(stale, fe)
		}
	}
	sort.Slice(stale, func(i, j int) bool {
		if stale[i].IP != stale[j].IP {
			return stale[i].IP < stale[j].IP
		}
		return stale[i].Port < stale[j].Port
	})
	return stale
}

// FlushUDP deletes the conntrack entries of a UDP frontend in ns.
func FlushUDP(ctx context.Context, ns string, fe Frontend) error {
	_, err := netns.Run(ctx, ns, "conntrack", "-D", "-p", "udp", "--orig-dst", fe.IP, "--orig-port-dst", strconv.Itoa(int(fe.Port)))
	if err != nil && strings.Contains(err.Error(), "0 flow entries have been deleted") {
		return nil // nothing to delete is fine (conntrack exits 1 then)
	}
	return err
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
