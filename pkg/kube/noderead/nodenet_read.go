package noderead

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/linuxnet"
)

// NodeShellOpener gives a shell in a node's network namespace (NodeShells does: a trusted
// system DaemonSet's pod, else a helper pod), closed by the caller.
type NodeShellOpener interface {
	Open(ctx context.Context, node *corev1.Node) (*podexec.NodeShell, error)
}

// NodeNetReader reads each node's NodeNet at most once per run, whichever check asks first
// (LA101 for the addresses, LA202 for kube-ipvs0, LA203 for the links), so a node costs one
// shell for all of them. Safe for concurrent use.
type NodeNetReader struct {
	Shells NodeShellOpener
	// Limit bounds each command on a node (default 20 s).
	Limit time.Duration
	// Unavailable, when set, says why nodes are not read at all (--no-helpers): Read then
	// fails with it, and checks say what they judged without the nodes.
	Unavailable string

	mu      sync.Mutex
	entries map[string]*nodeNetEntry
}

type nodeNetEntry struct {
	done chan struct{}
	net  NodeNet
	err  error
}

// ErrNodesNotRead is the error of a reader that may not read nodes (see Unavailable).
var ErrNodesNotRead = errors.New("the nodes' own network state is not read")

// Read returns the node's NodeNet, reading it on first use. A read cut by the caller's
// context is not kept: the next caller tries again.
func (r *NodeNetReader) Read(ctx context.Context, node *corev1.Node) (NodeNet, error) {
	if r == nil || r.Unavailable != "" || r.Shells == nil {
		why := "no node reader"
		if r != nil && r.Unavailable != "" {
			why = r.Unavailable
		}
		return NodeNet{Node: node.Name}, fmt.Errorf("%w: %s", ErrNodesNotRead, why)
	}
	r.mu.Lock()
	if r.entries == nil {
		r.entries = map[string]*nodeNetEntry{}
	}
	e, seen := r.entries[node.Name]
	if !seen {
		e = &nodeNetEntry{done: make(chan struct{})}
		r.entries[node.Name] = e
	}
	r.mu.Unlock()
	if seen {
		select {
		case <-e.done:
			return e.net, e.err
		case <-ctx.Done():
			return NodeNet{Node: node.Name}, ctx.Err()
		}
	}
	e.net, e.err = r.read(ctx, node)
	if e.err != nil && ctx.Err() != nil {
		r.mu.Lock()
		delete(r.entries, node.Name)
		r.mu.Unlock()
	}
	close(e.done)
	return e.net, e.err
}

// Available reports whether nodes may be read, and why not.
func (r *NodeNetReader) Available() (bool, string) {
	switch {
	case r == nil:
		return false, "no node reader"
	case r.Unavailable != "":
		return false, r.Unavailable
	case r.Shells == nil:
		return false, "no node reader"
	}
	return true, ""
}

func (r *NodeNetReader) limit() time.Duration {
	if r.Limit > 0 {
		return r.Limit
	}
	return 20 * time.Second
}

func (r *NodeNetReader) read(ctx context.Context, node *corev1.Node) (NodeNet, error) {
	n := NodeNet{Node: node.Name}
	sh, err := r.Shells.Open(ctx, node)
	if err != nil {
		return n, err
	}
	// A helper that cannot be deleted stays in the run's list: the run's cleanup deletes it
	// again and says so if it cannot.
	defer func() { _ = sh.Close() }()
	n.Via = sh.Via()
	rctx, cancel := context.WithTimeout(ctx, r.limit())
	out, _, err := sh.Exec(rctx, linuxnet.NodeAddrCommand())
	cancel()
	if err != nil {
		return n, fmt.Errorf("node %s: reading its addresses through %s: %w", node.Name, n.Via, err)
	}
	if err := ParseNodeAddrs(string(out), &n); err != nil {
		return n, fmt.Errorf("node %s: reading its addresses through %s: %w", node.Name, n.Via, err)
	}
	names := n.CarryingLinks()
	valid := names[:0]
	for _, name := range names {
		if linuxnet.ValidInterfaceName(name) {
			valid = append(valid, name)
		}
	}
	if len(valid) == 0 {
		return n, nil
	}
	rctx, cancel = context.WithTimeout(ctx, r.limit())
	out, _, err = sh.Exec(rctx, linuxnet.LinkStateCommand(valid))
	cancel()
	if err != nil {
		// The addresses stand; the links stay unread, and say why.
		n.LinksErr = fmt.Errorf("reading /sys/class/net through %s: %w", n.Via, err)
		return n, nil
	}
	ParseLinkStates(string(out), &n)
	return n, nil
}
