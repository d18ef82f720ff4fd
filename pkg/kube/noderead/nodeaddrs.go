package noderead

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
)

// MaxNodesSearched bounds how many nodes are read to find an address that no node's
// status.addresses lists (one shell per node): past it, the address is "not found among the
// nodes read", never "carried by no node".
const MaxNodesSearched = 64

// AddrPlacement is where an address lives among the nodes: what the API says (status.addresses)
// and, where the nodes were read, which node's stack carries it and on which interface.
type AddrPlacement struct {
	Addr netip.Addr
	// Listed are the nodes whose status.addresses give it (InternalIP or ExternalIP).
	Listed []ListedAddr
	// Owners are the nodes whose own stack carries it, kube-ipvs0 left out (see IPVSDevice).
	Owners []AddrOwner
	// OnIPVS are the nodes where it sits on kube-ipvs0.
	OnIPVS []string
}

// ListedAddr is a node whose status.addresses list an address, with the type.
type ListedAddr struct {
	Node *corev1.Node
	Type corev1.NodeAddressType
}

// NodeAddrs is the placement of a set of addresses, with what was read to place them.
type NodeAddrs struct {
	Places map[netip.Addr]*AddrPlacement
	// Read are the nodes read, by name; Unread says why the others asked for were not.
	Read   map[string]NodeNet
	Unread map[string]error
	// Searched is true when every Ready Linux node was read (within MaxNodesSearched), so an
	// address no node carries is known to be carried by none.
	Searched bool
	// NotRead is why nodes were not read at all ("" when the reader could read them).
	NotRead string
}

// PlaceAddrs places addrs among nodes: first by status.addresses; then, when the reader may
// read nodes, by what the nodes carrying them say, and for an address no node lists, by
// reading the other Ready Linux nodes (at most MaxNodesSearched in all).
func PlaceAddrs(ctx context.Context, r *NodeNetReader, nodes []corev1.Node, addrs []netip.Addr) NodeAddrs {
	out := NodeAddrs{Places: map[netip.Addr]*AddrPlacement{}, Read: map[string]NodeNet{}, Unread: map[string]error{}}
	var toRead []*corev1.Node
	unlisted := false
	for _, a := range addrs {
		a = a.Unmap()
		p := &AddrPlacement{Addr: a}
		for i := range nodes {
			n := &nodes[i]
			for _, na := range n.Status.Addresses {
				if (na.Type == corev1.NodeInternalIP || na.Type == corev1.NodeExternalIP) && sameAddr(na.Address, a) {
					p.Listed = append(p.Listed, ListedAddr{Node: n, Type: na.Type})
					if !slices.Contains(toRead, n) {
						toRead = append(toRead, n)
					}
				}
			}
		}
		unlisted = unlisted || len(p.Listed) == 0
		out.Places[a] = p
	}
	if ok, why := r.Available(); !ok {
		out.NotRead = why
		return out
	}
	if unlisted {
		toRead, out.Searched = searchSet(nodes, toRead)
	}
	out.readAll(ctx, r, toRead)
	for _, p := range out.Places {
		for _, name := range slices.Sorted(maps.Keys(out.Read)) {
			n := out.Read[name]
			if link, ok := n.Owns(p.Addr); ok {
				p.Owners = append(p.Owners, AddrOwner{Node: name, Link: link})
			}
			if slices.Contains(n.IPVSAddrs(), p.Addr) {
				p.OnIPVS = append(p.OnIPVS, name)
			}
		}
	}
	return out
}

// searchSet adds the Ready Linux nodes to the nodes to read, up to MaxNodesSearched; complete
// is false when some were left out.
func searchSet(nodes []corev1.Node, toRead []*corev1.Node) ([]*corev1.Node, bool) {
	complete := true
	for i := range nodes {
		n := &nodes[i]
		if slices.Contains(toRead, n) || !kubeobj.NodeReady(n) || kubeobj.NodeOS(n) != "linux" {
			continue
		}
		if len(toRead) >= MaxNodesSearched {
			complete = false
			break
		}
		toRead = append(toRead, n)
	}
	return toRead, complete
}

func (a *NodeAddrs) readAll(ctx context.Context, r *NodeNetReader, nodes []*corev1.Node) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, n := range nodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			net, err := r.Read(ctx, n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				a.Unread[n.Name] = err
				return
			}
			a.Read[n.Name] = net
		})
	}
	wg.Wait()
}

// Unfound completes "no node lists this address" for an address the node reads did not
// place: what was read, so that "carried by no node" is said only when every node was.
func (a NodeAddrs) Unfound() string {
	switch {
	case a.NotRead != "":
		return " (the nodes' own addresses were not read: " + a.NotRead + ")"
	case len(a.Read) == 0:
		return fmt.Sprintf(" and no node could be read to find it (%d could not be read)", len(a.Unread))
	case a.Searched && len(a.Unread) == 0:
		return fmt.Sprintf(" and no interface of the %d Ready Linux nodes read carries it", len(a.Read))
	}
	return fmt.Sprintf(" and none of the %d nodes read carries it (%d could not be read, or were past the first %d)", len(a.Read), len(a.Unread), MaxNodesSearched)
}

func sameAddr(raw string, a netip.Addr) bool {
	ip, err := netip.ParseAddr(raw)
	return err == nil && ip.Unmap() == a
}
