//go:build lab

package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// LA201 reads the nodes' sockets through helper pods (kwok runs their exec in the node's
// namespace), so these are real sockets of real processes. The helper bundle (its namespace
// and admission policy) is installed as a cluster admin would.

func TestLA201NamesAListenerOnNode2ItsPortAndProcessAndPassesOnceItIsGone(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	t.Run("listener on node-2:80", func(t *testing.T) {
		lab.StartListener(t, "node-2", 80, "tcp")
		// The default helper reads sockets only: the conflict, and why its owner is not named.
		r := runLanaccess(t, "", 4*time.Minute, "doctor", "--only", "LA201")
		status, _, fs := r.check(t, "LA201")
		require.Equal(t, "fail", status, findingText(fs))
		for _, f := range fs {
			if f.Severity == engine.SeverityFail {
				assert.Equal(t, "10.0.10.12:80", f.Evidence["socket"])
				assert.NotContains(t, f.Evidence, "pid")
				assert.Contains(t, f.Message, "--name-owners")
			}
		}
		// Naming it is node root: admitted once an administrator labels the namespace.
		labelHelperNamespace(t, `"`+podexec.HelperOwnersAllowed+`"`)
		t.Cleanup(func() { labelHelperNamespace(t, "null") })
		r = runLanaccess(t, "", 4*time.Minute, "doctor", "--only", "LA201", "--name-owners")
		status, _, fs = r.check(t, "LA201")
		require.Equal(t, "fail", status, findingText(fs))
		assert.Equal(t, 1, r.Exit)
		var fails []engine.Finding
		for _, f := range fs {
			if f.Severity == engine.SeverityFail {
				fails = append(fails, f)
			}
		}
		require.Len(t, fails, 1, findingText(fs))
		f := fails[0]
		assert.Equal(t, "node-2 (10.0.10.12)", f.Object)
		assert.Equal(t, float64(80), f.Evidence["port"])
		assert.Equal(t, "10.0.10.12:80", f.Evidence["socket"])
		assert.Contains(t, fmt.Sprint(f.Evidence["owners"]), "listen --addr 10.0.10.12:80", "the owning process is named")
		assert.NotEmpty(t, f.Evidence["pid"])
		assert.Contains(t, f.Message, "traefik/traefik")
		assert.Contains(t, f.Remediation, fmt.Sprintf("systemctl status %v", f.Evidence["pid"]))
	})
	// The subtest's cleanup stopped the listener.
	r := runLanaccess(t, "", 4*time.Minute, "doctor", "--only", "LA201")
	status, _, fs := r.check(t, "LA201")
	assert.Equal(t, "pass", status, findingText(fs))
	assert.Equal(t, 0, r.Exit)
	assert.Empty(t, ourPodsLeft(t), "every helper pod was deleted")
}

func TestLA201WithNoHelpersWritesNothing(t *testing.T) {
	pw := watchOurPods(t)
	r := runLanaccess(t, "", 2*time.Minute, "doctor", "--only", "LA201", "--no-helpers")
	status, reason, _ := r.check(t, "LA201")
	assert.Equal(t, "skip", status)
	assert.Contains(t, reason, "--no-helpers")
	time.Sleep(time.Second) // let any late event arrive
	pw.stop()
	assert.Empty(t, pw.added(), "no pod was created")
}

// A run interrupted while its helper pods exist leaves none behind: Ctrl-C cancels the run and
// the helpers are deleted with a fresh deadline on the way out.
func TestLA201InterruptedWhileHelpersExistLeavesNone(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	// Slow node-3's answers so that its helper pod is still there when the signal comes.
	lab.AddLatency(t, "node-3", 3*time.Second)
	pw := watchOurPods(t)
	cmd := lanaccessCmd(t, t.Context(), "", "doctor", "--only", "LA201")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	eventually(t, 90*time.Second, func() error {
		if len(pw.added()) == 0 {
			return fmt.Errorf("no helper pod created yet")
		}
		return nil
	})
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		// A completed run would pass LA201 and exit 0: a non-zero exit says the run was cut.
		require.Error(t, err, "the run finished before the signal; stderr: %s", stderr.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the plugin did not stop within 60 s of SIGINT; stderr: %s", stderr.String())
	}
	assert.NotEmpty(t, pw.added())
	eventually(t, 30*time.Second, func() error {
		if left := ourPodsLeft(t); len(left) > 0 {
			return fmt.Errorf("helper pods left after SIGINT: %v", left)
		}
		return nil
	})
}

// The shipped helper bundle is enough for LA201 and no more: doctor run as a ServiceAccount
// holding exactly its grants (with the read-only role) reads every node through helpers the
// admission policy admits, and leaves none; the owner-naming helper is refused until an
// administrator allows it, and LA201 says how.
func TestLA201RunsUnderTheShippedHelperBundle(t *testing.T) {
	installBundles(t, "rbac-doctor", "rbac-helpers")
	kubeconfig := lab.SwapRBAC(t, "shipped-helpers", shippedGrants(t, "", "rbac-doctor", "rbac-helpers")...)
	r := runLanaccess(t, "", 4*time.Minute, "doctor", "--only", "LA201", "--kubeconfig", kubeconfig)
	status, reason, fs := r.check(t, "LA201")
	require.Equal(t, "pass", status, "%s\n%s\n%s", reason, findingText(fs), r.Stderr)
	assert.Empty(t, ourPodsLeft(t))

	r = runLanaccess(t, "", 4*time.Minute, "doctor", "--only", "LA201", "--name-owners", "--kubeconfig", kubeconfig)
	status, reason, _ = r.check(t, "LA201")
	assert.Equal(t, "skip", status)
	assert.Contains(t, reason, "kubectl label namespace "+podexec.DefaultHelperNamespace+" "+podexec.HelperOwnersLabel+"="+podexec.HelperOwnersAllowed)
	assert.Empty(t, ourPodsLeft(t))
}
