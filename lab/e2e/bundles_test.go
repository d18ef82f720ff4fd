//go:build lab

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// installBundles applies shipped RBAC bundles (as a cluster admin would) and removes them at
// cleanup, waiting for their namespaces to be gone so that the next test starts clean. A
// namespace another test left terminating is waited for first: apply would fail on it.
func installBundles(t *testing.T, names ...string) {
	t.Helper()
	namespaces := []string{"lanaccess", podexec.DefaultHelperNamespace}
	waitNamespacesGone(t, namespaces, true)
	var raw []byte
	for _, n := range names {
		b, err := manifests.Get(n)
		require.NoError(t, err)
		raw = append(append(raw, b...), []byte("---\n")...)
	}
	run := func(verb string, extra ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := lab.KubectlCmd(ctx, append([]string{verb, "-f", "-"}, extra...)...)
		cmd.Stdin = bytes.NewReader(raw)
		return cmd.CombinedOutput()
	}
	out, err := run("apply")
	require.NoError(t, err, "kubectl apply %v: %s", names, out)
	t.Cleanup(func() {
		if out, err := run("delete", "--ignore-not-found", "--wait=true", "--timeout=90s"); err != nil {
			t.Errorf("kubectl delete %v: %v: %s", names, err, out)
		}
		waitNamespacesGone(t, namespaces, false)
	})
	// The ServiceAccount admission plugin refuses every pod of a namespace until the controller
	// manager has made its default ServiceAccount.
	eventually(t, time.Minute, func() error {
		for _, n := range namespaces {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, nsErr := lab.Client.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{})
			_, saErr := lab.Client.CoreV1().ServiceAccounts(n).Get(ctx, "default", metav1.GetOptions{})
			cancel()
			if nsErr == nil && saErr != nil {
				return fmt.Errorf("no default ServiceAccount in %s yet: %w", n, saErr)
			}
		}
		return nil
	})
	if slices.Contains(names, "rbac-helpers") {
		waitHelperPolicy(t)
	}
}

// waitNamespacesGone waits until none of namespaces is terminating (onlyTerminating), or until
// they are all gone.
func waitNamespacesGone(t *testing.T, namespaces []string, onlyTerminating bool) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		for _, n := range namespaces {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ns, err := lab.Client.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{})
			cancel()
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return err
			case ns.DeletionTimestamp != nil:
				return fmt.Errorf("namespace %s is terminating", n)
			case !onlyTerminating:
				return fmt.Errorf("namespace %s is still there", n)
			}
		}
		return nil
	})
}
