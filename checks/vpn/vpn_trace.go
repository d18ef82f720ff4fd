package vpn

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
)

// vpn-trace's checks share what they learn through a vpnTrace: every fact (the pods, a pod's
// tools, its ip_forward, its tunnel...) is computed once, on first use, by whichever check
// needs it first, and reused by the others. The checks therefore depend on VPN001 only: the
// runner skips a check whose dependency FAILED, and VPN003 (durability) and VPN008 (verdict)
// must still run when VPN002 finds forwarding off, which is precisely the interesting case.

// defaultHopTimeout bounds each hop of the ladders (Options.HopTimeout overrides).
const defaultHopTimeout = 2 * time.Second

// execTimeout bounds one read-only command in a VPN pod.
const execTimeout = 15 * time.Second

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

// vpnPod is one replica to trace and the facts learnt about it.
type vpnPod struct {
	Pod       *corev1.Pod
	Ref       kube.PodRef
	Container string

	owner      memo[workloadRef]
	tools      memo[toolbox]
	forwarding memo[forwardingFact]
	durability memo[durabilityFact]
	tunnel     memo[tunnelFact]
	nat        memo[natFact]
	ladder     memo[[]hopResult]
}

func (p *vpnPod) object() string { return "Pod " + p.Ref.String() }

// vpnPods is VPN001's answer.
type vpnPods struct {
	Running    []*vpnPod
	NotRunning []corev1.Pod
	// How says how they were chosen ("selector app=openvpn in namespace vpn").
	How string
}

// vpnTrace is one run's shared, lazily computed facts.
type vpnTrace struct {
	env     *Env
	pods    memo[vpnPods]
	targets memo[ladderTargets]
	client  memo[clientLadder]
	// configz reads a node's kubelet configuration (GET /api/v1/nodes/N/proxy/configz).
	configz func(ctx context.Context, node string) ([]byte, error)
	// prober sends the client-side ladder's packets from this machine.
	prober clientProber
}

// vpnTraceFor returns the run's trace, creating it on first use.
func vpnTraceFor(env *Env) *vpnTrace {
	env.traceOnce.Do(func() {
		env.trace = &vpnTrace{env: env, configz: restConfigz(env.Client), prober: netClientProber{}}
	})
	return env.trace
}

func (t *vpnTrace) hopTimeout() time.Duration {
	if t.env.Options.HopTimeout > 0 {
		return t.env.Options.HopTimeout
	}
	return defaultHopTimeout
}

// exec runs a read-only command in the pod's VPN container with its own deadline.
func (t *vpnTrace) exec(ctx context.Context, p *vpnPod, cmd []string, timeout time.Duration) (string, string, error) {
	if t.env.Exec == nil {
		return "", "", errors.New("no executor in the environment (Env.Exec is nil)")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, errOut, err := t.env.Exec.Exec(ctx, p.Ref, p.Container, cmd, nil)
	return string(out), string(errOut), err
}

// forEachPod runs fn on every running VPN pod, a few at a time, results in pod order.
func forEachPod[T any](ctx context.Context, pods []*vpnPod, fn func(context.Context, *vpnPod) T) []T {
	out := make([]T, len(pods))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = fn(ctx, p)
		}()
	}
	wg.Wait()
	return out
}
