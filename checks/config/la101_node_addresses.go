package config

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
)

// kube-proxy captures traffic to any address a node owns, not only its InternalIP (the
// iptables proxier's externalIP rules match the destination on every interface; the LAN
// reaches the node on whichever interface answers ARP for it). So an address no node lists in
// status.addresses is judged by what the nodes' own stacks carry, read through the node reader
// LA201 uses (pkg/kube NodeNetReader, PlaceAddrs).

// placeAddrs reads the nodes for the addresses no node lists; nil when the nodes may not be
// read or every address is listed.
func placeAddrs(ctx context.Context, r *noderead.NodeNetReader, s *kube.Setup, addrs []netip.Addr) *noderead.NodeAddrs {
	var unlisted []netip.Addr
	for _, a := range addrs {
		if len(kubeobj.NodesWithInternalIP(s.Nodes, a)) == 0 {
			unlisted = append(unlisted, a)
		}
	}
	if len(unlisted) == 0 {
		return nil
	}
	p := noderead.PlaceAddrs(ctx, r, s.Nodes, unlisted)
	return &p
}

// elsewhere is what the node reads say of an address no node lists: the node that carries it
// (with the finding that says on which interface), or why "no node" is all that is known.
type elsewhere struct {
	nodes   []*corev1.Node
	finding *engine.Finding
	// searched completes "is the InternalIP of no node": what the reads add.
	searched string
}

func carriedElsewhere(s *kube.Setup, all []netip.Addr, place func([]netip.Addr) *noderead.NodeAddrs) map[netip.Addr]elsewhere {
	out := map[netip.Addr]elsewhere{}
	if place == nil {
		return out
	}
	placed := place(all)
	if placed == nil {
		return out
	}
	for a, p := range placed.Places {
		if len(p.Listed) > 0 {
			continue
		}
		out[a] = placement(s, placed, p)
	}
	return out
}

func placement(s *kube.Setup, placed *noderead.NodeAddrs, p *noderead.AddrPlacement) elsewhere {
	if len(p.Owners) == 0 {
		return elsewhere{searched: placed.Unfound()}
	}
	var nodes []*corev1.Node
	var where []string
	for _, o := range p.Owners {
		for i := range s.Nodes {
			if s.Nodes[i].Name == o.Node && !slices.Contains(nodes, &s.Nodes[i]) {
				nodes = append(nodes, &s.Nodes[i])
			}
		}
		link := o.Link
		if link == "" {
			link = "an interface the reader could not name (no `ip` in its image)"
		}
		where = append(where, fmt.Sprintf("node %s on %s", o.Node, link))
	}
	via := placed.Read[p.Owners[0].Node].Via
	f := &engine.Finding{Code: "LA101-NODE-ADDRESS", Severity: engine.SeverityInfo, Object: p.Addr.String(),
		Message:  fmt.Sprintf("%s is no node's InternalIP, but %s carries it (read through %s): kube-proxy captures traffic to any address a node owns", p.Addr, strings.Join(where, ", "), via),
		Evidence: map[string]any{"address": p.Addr.String(), "carriedBy": where, "readWith": via}}
	return elsewhere{nodes: nodes, finding: f}
}
