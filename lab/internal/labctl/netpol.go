package labctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netpol"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// netpolSteps give the NetworkPolicy enforcer its identity (the ServiceAccount, ClusterRole and
// binding of its module's install.yaml, applied as they are; its DaemonSet is what the lab
// plays) and start one enforcer per node namespace, after the node's hook (netpol.HookRules).
func (b *bringUp) netpolSteps() []step {
	steps := make([]step, 0, 1+len(b.l.Nodes))
	steps = append(steps, step{name: "give the NetworkPolicy enforcer its ServiceAccount", run: b.netpolIdentity})
	for _, n := range b.l.Nodes {
		steps = append(steps, b.startLater(netpol.ProcName(n.NS), func() (procs.Spec, error) {
			if err := netpol.InstallHook(context.Background(), n.NS, n.PodCIDR); err != nil {
				return procs.Spec{}, err
			}
			return netpol.Spec(b.l, b.st.Binaries.KubeNetworkPoliciesBin(), n.NS), nil
		}))
	}
	return steps
}

// netpolIdentity applies install.yaml's RBAC and writes the token (a TokenRequest of the
// ServiceAccount, as the kubelet's projected token), the lab CA and the namespace into the
// directory every enforcer's mount namespace shows at /var/run/secrets/kubernetes.io/serviceaccount.
func (b *bringUp) netpolIdentity(ctx context.Context) error {
	if strings.HasPrefix(b.l.StateDir+"/", "/var/") {
		return fmt.Errorf("state directory %s is under /var, which the enforcer's mount namespace hides", b.l.StateDir)
	}
	objs, err := DecodeFile(b.st.Binaries.KubeNetworkPoliciesManifest())
	if err != nil {
		return err
	}
	applied := 0
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
			if err := b.applier.Apply(ctx, o); err != nil {
				return err
			}
			applied++
		}
	}
	if applied != 3 {
		return fmt.Errorf("%s: want its ServiceAccount, ClusterRole and ClusterRoleBinding, found %d of them", b.st.Binaries.KubeNetworkPoliciesManifest(), applied)
	}
	exp := tokenLifetime
	var tok *authenticationv1.TokenRequest
	// The ServiceAccount was just created: the token request can race its informer.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		tok, err = b.client.CoreV1().ServiceAccounts(netpol.Namespace).CreateToken(ctx, netpol.ServiceAccount,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil || tok == nil {
		return errors.Join(fmt.Errorf("token for %s/%s", netpol.Namespace, netpol.ServiceAccount), err)
	}
	ca, err := os.ReadFile(b.l.CAFile())
	if err != nil {
		return err
	}
	return netpol.WriteServiceAccount(b.l, tok.Status.Token, ca)
}

// netpolReady waits for every node's enforcer: caches synced, table programmed, queue bound.
func netpolReady(l layout.Layout) func(context.Context) error {
	return func(ctx context.Context) error {
		errs := make([]error, 0, len(l.Nodes))
		for _, n := range l.Nodes {
			errs = append(errs, netpol.Ready(ctx, n.NS))
		}
		return errors.Join(errs...)
	}
}
