package labkit

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netpol"
)

// NetworkPolicies are enforced by the real kube-network-policies, one per node namespace
// (lab/internal/netpol). It judges the first packet of each new connection from or to one of
// its node's pods (DNS: every packet), queued by the lab's hook.

// CreateNetworkPolicy creates np; cleanup deletes it. The enforcers learn of it through their
// informers, within a second or so: wait for its effect on real packets.
func (l *Lab) CreateNetworkPolicy(tb testing.TB, np *networkingv1.NetworkPolicy) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	_, err := l.Client.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{})
	must(tb, "create NetworkPolicy "+np.Namespace+"/"+np.Name, err)
	cleanup(tb, "CreateNetworkPolicy "+np.Name, func(ctx context.Context) error {
		err := l.Client.NetworkingV1().NetworkPolicies(np.Namespace).Delete(ctx, np.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// DeleteNetworkPolicy deletes a policy now (CreateNetworkPolicy's cleanup then finds it gone).
func (l *Lab) DeleteNetworkPolicy(tb testing.TB, namespace, name string) {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	must(tb, "delete NetworkPolicy "+namespace+"/"+name,
		l.Client.NetworkingV1().NetworkPolicies(namespace).Delete(ctx, name, metav1.DeleteOptions{}))
}

// EnforcerVerdicts are node's enforcer packet counts by verdict ("accept", "drop").
func (l *Lab) EnforcerVerdicts(tb testing.TB, node string) map[string]float64 {
	tb.Helper()
	ctx, cancel := opCtx()
	defer cancel()
	v, err := netpol.Verdicts(ctx, node)
	must(tb, "read the enforcer's verdicts on "+node, err)
	return v
}
