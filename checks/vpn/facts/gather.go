package facts

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// defaultHopTimeout bounds each hop of the ladders (Options.HopTimeout overrides).
const defaultHopTimeout = 2 * time.Second

// defaultExecTimeout bounds one read-only command in a VPN pod (Options.ExecTimeout overrides).
const defaultExecTimeout = 15 * time.Second

// Seams are how the gatherer reads the world; tests replace them.
type Seams struct {
	Client client.Interface
	// Dynamic reads custom resources (Calico's Installation); nil: they are not read.
	Dynamic dynamic.Interface
	Exec    podexec.Executor
	// Configz reads a node's kubelet configuration (default: GET
	// /api/v1/nodes/N/proxy/configz through Client).
	Configz func(ctx context.Context, node string) ([]byte, error)
	// Prober sends the client-side ladder's packets from this machine (default: its sockets
	// and resolver).
	Prober ClientProber
}

// Gatherer reads a run's facts through its seams, each at most once: vpn-trace's checks run
// concurrently and ask for overlapping facts, and the first to ask reads for all.
type Gatherer struct {
	seams Seams
	opts  Options

	pods     memo[podList]
	targets  memo[Targets]
	client   memo[ClientLadder]
	policies memo[[]networkingv1.NetworkPolicy]
	cni      memo[CNI]

	cniPolicies memo[[]PolicyKind]

	nodesMu sync.Mutex
	nodes   map[string]*memo[NodeRead]
	// trust tells the system DaemonSets whose pods may answer for a node.
	trust *podexec.ReaderTrust
}

// New returns the gatherer of one run.
func New(seams Seams, opts Options) *Gatherer {
	if seams.Configz == nil {
		seams.Configz = RESTConfigz(seams.Client)
	}
	if seams.Prober == nil {
		seams.Prober = NetProber{}
	}
	return &Gatherer{seams: seams, opts: opts, nodes: map[string]*memo[NodeRead]{}, trust: podexec.NewReaderTrust(seams.Client)}
}

// Gather returns the facts needs names (and those they depend on), reading what no earlier
// call read. The error is the pods' own (none found, the API failed): every other fact
// carries its error next to it.
func (g *Gatherer) Gather(ctx context.Context, needs Need) (*Run, error) {
	pl, err := g.pods.get(ctx, g.findPods)
	if err != nil {
		return nil, err
	}
	run := &Run{NotRunning: pl.notRunning, How: pl.how}
	if needs&(NeedPodLadder|NeedClientLadder|NeedTargets|NeedNAT) != 0 {
		run.Targets, run.TargetsErr = g.targets.get(ctx, g.chooseTargets)
	}
	if needs.Has(NeedNAT) {
		run.Policies, run.PoliciesErr = g.policies.get(ctx, g.listPolicies)
		run.CNIPolicies, _ = g.cniPolicies.get(ctx, func(ctx context.Context) ([]PolicyKind, error) { return g.listCNIPolicies(ctx), nil })
		if run.Targets.PodNode != "" {
			run.TargetNode = g.nodeRead(ctx, run.Targets.PodNode)
		}
	}
	if needs.Has(NeedOrigin) {
		run.CNI, _ = g.cni.get(ctx, func(ctx context.Context) (CNI, error) { return g.readCNI(ctx), nil })
	}
	var wg sync.WaitGroup
	if needs.Has(NeedClientLadder) {
		wg.Go(func() {
			run.Client, run.ClientErr = g.client.get(ctx, g.walkClientLadder)
		})
	}
	run.Pods = forEachPod(ctx, pl.running, func(ctx context.Context, m *podMemos) *Pod { return g.podFacts(ctx, m, needs) })
	wg.Wait()
	return run, nil
}

// podMemos is one replica and its facts, each read once.
type podMemos struct {
	pod       *corev1.Pod
	ref       podexec.PodRef
	container string

	owner      memo[Workload]
	nsLabels   memo[map[string]string]
	tools      memo[toolbox]
	forwarding memo[Forwarding]
	durability memo[Durability]
	tunnel     memo[Tunnel]
	nat        memo[NAT]
	ladder     memo[Ladder]
}

func (m *podMemos) object() string { return "Pod " + m.ref.String() }

func (g *Gatherer) podFacts(ctx context.Context, m *podMemos, needs Need) *Pod {
	p := &Pod{Pod: m.pod, Ref: m.ref, Container: m.container}
	if needs&(NeedDurability|NeedNAT) != 0 {
		p.Owner, _ = m.owner.get(ctx, func(ctx context.Context) (Workload, error) { return g.findOwner(ctx, m), nil })
		p.NamespaceLabels, _ = m.nsLabels.get(ctx, func(ctx context.Context) (map[string]string, error) { return g.namespaceLabels(ctx, m), nil })
	}
	if needs.Has(NeedForwarding) {
		p.Forwarding, p.ForwardingErr = m.forwarding.get(ctx, func(ctx context.Context) (Forwarding, error) { return g.readForwarding(ctx, m) })
	}
	if needs.Has(NeedDurability) {
		p.Durability, _ = m.durability.get(ctx, func(ctx context.Context) (Durability, error) { return g.readDurability(ctx, m, p.NamespaceLabels), nil })
	}
	if needs&(NeedTunnel|NeedNAT|NeedPodLadder) != 0 {
		p.Tunnel, p.TunnelErr = g.podTunnel(ctx, m)
	}
	if needs.Has(NeedNAT) {
		p.NAT, p.NATErr = m.nat.get(ctx, func(ctx context.Context) (NAT, error) { return g.readNAT(ctx, m) })
	}
	if needs.Has(NeedPodLadder) {
		p.Ladder, p.LadderErr = m.ladder.get(ctx, func(ctx context.Context) (Ladder, error) { return g.walkPodLadder(ctx, m) })
	}
	if needs&(NeedOrigin|NeedNAT) != 0 {
		p.Node = g.nodeRead(ctx, m.pod.Spec.NodeName)
	}
	return p
}

func (g *Gatherer) podTunnel(ctx context.Context, m *podMemos) (Tunnel, error) {
	return m.tunnel.get(ctx, func(ctx context.Context) (Tunnel, error) { return g.readTunnel(ctx, m) })
}

func (g *Gatherer) execTimeout() time.Duration {
	if g.opts.ExecTimeout > 0 {
		return g.opts.ExecTimeout
	}
	return defaultExecTimeout
}

func (g *Gatherer) hopTimeout() time.Duration {
	if g.opts.HopTimeout > 0 {
		return g.opts.HopTimeout
	}
	return defaultHopTimeout
}

// exec runs a read-only command in the pod's VPN container with its own deadline.
func (g *Gatherer) exec(ctx context.Context, m *podMemos, cmd []string, timeout time.Duration) (string, string, error) {
	return g.execIn(ctx, m.ref, m.container, cmd, timeout)
}

// execIn runs a read-only command in any pod's container with its own deadline.
func (g *Gatherer) execIn(ctx context.Context, ref podexec.PodRef, container string, cmd []string, timeout time.Duration) (string, string, error) {
	if g.seams.Exec == nil {
		return "", "", errors.New("no executor in the environment (Env.Exec is nil)")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, errOut, err := g.seams.Exec.Exec(ctx, ref, container, cmd, nil)
	return string(out), string(errOut), err
}

// nodeRead reads a node once per run, whichever of its VPN pods asks first.
func (g *Gatherer) nodeRead(ctx context.Context, node string) NodeRead {
	g.nodesMu.Lock()
	m, ok := g.nodes[node]
	if !ok {
		m = &memo[NodeRead]{}
		g.nodes[node] = m
	}
	g.nodesMu.Unlock()
	r, _ := m.get(ctx, func(ctx context.Context) (NodeRead, error) {
		r := g.readNode(ctx, node)
		if r.Err != nil && ctx.Err() != nil {
			return r, ctx.Err() // cut short: read again with the next caller's deadline
		}
		return r, nil
	})
	return r
}

// memo computes a value once. A computation cut short by its caller's context is not kept:
// the next caller, with its own deadline, computes again.
type memo[T any] struct {
	mu   sync.Mutex
	done bool
	val  T
	err  error
}

func (m *memo[T]) get(ctx context.Context, compute func(context.Context) (T, error)) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return m.val, m.err
	}
	v, err := compute(ctx)
	if err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return v, err
	}
	m.done, m.val, m.err = true, v, err
	return v, err
}

// forEachPod runs fn on every running VPN pod, a few at a time, results in pod order.
func forEachPod[T any](ctx context.Context, pods []*podMemos, fn func(context.Context, *podMemos) T) []T {
	out := make([]T, len(pods))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = fn(ctx, p)
		})
	}
	wg.Wait()
	return out
}
