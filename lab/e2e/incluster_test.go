//go:build lab

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// applyManifest pipes a shipped manifest into the lab's kubectl; delete undoes it at cleanup.
func applyManifest(t *testing.T, name string) {
	t.Helper()
	raw, err := manifests.Get(name)
	require.NoError(t, err)
	run := func(verb string, extra ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := lab.KubectlCmd(ctx, append([]string{verb, "-f", "-"}, extra...)...)
		cmd.Stdin = bytes.NewReader(raw)
		return cmd.CombinedOutput()
	}
	out, err := run("apply")
	require.NoError(t, err, "kubectl apply %s: %s", name, out)
	t.Cleanup(func() { _, _ = run("delete", "--ignore-not-found", "--wait=false") })
}

// The shipped Job and RBAC apply to a real API server, the Job's pod is scheduled under its
// ServiceAccount, and the plugin run with that ServiceAccount's in-cluster configuration (the
// token and CA files a pod gets, the KUBERNETES_SERVICE_* variables, no kubeconfig) diagnoses
// the lab: the CI smoke test after a deploy, as it runs in a cluster.
func TestShippedJobRunsInClusterUnderItsServiceAccount(t *testing.T) {
	applyManifest(t, "rbac-doctor")
	applyManifest(t, "job")
	ctx := context.Background()
	eventually(t, time.Minute, func() error {
		pods, err := lab.Client.CoreV1().Pods("lanaccess").List(ctx, metav1.ListOptions{LabelSelector: "job-name=lanaccess-doctor"})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 || pods.Items[0].Spec.NodeName == "" {
			return errorf("the Job's pod is not scheduled yet")
		}
		assert.Equal(t, "kubectl-lanaccess", pods.Items[0].Spec.ServiceAccountName)
		return nil
	})

	tok, err := lab.Client.CoreV1().ServiceAccounts("lanaccess").CreateToken(ctx, "kubectl-lanaccess",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte(tok.Status.Token), 0o600))
	ca, err := os.ReadFile(lab.CAFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o644))
	home := t.TempDir()
	bin, err := lanaccessBinary()
	require.NoError(t, err)

	// A private mount namespace puts the pod's secret files where client-go's in-cluster
	// configuration reads them, without touching the host's /var/run/secrets.
	secrets := "/var/run/secrets/kubernetes.io/serviceaccount"
	created := false
	if _, err := os.Stat("/var/run/secrets"); os.IsNotExist(err) {
		require.NoError(t, os.MkdirAll("/var/run/secrets", 0o755))
		created = true
	}
	t.Cleanup(func() {
		if created {
			_ = os.Remove("/var/run/secrets")
		}
	})
	script := `set -e
mount -t tmpfs tmpfs /var/run/secrets
mkdir -p ` + secrets + `
cp "$SRC/token" "$SRC/ca.crt" ` + secrets + `/
exec "$BIN" doctor --no-helpers --skip LA402 -o json --ca-file "$SRC/ca.crt"`
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "ip", "netns", "exec", lab.Laptop(), "unshare", "-m", "--propagation", "private", "sh", "-c", script)
	api, err := url.Parse(lab.Config.Host)
	require.NoError(t, err)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home, "SRC=" + dir, "BIN=" + bin,
		"KUBERNETES_SERVICE_HOST=" + api.Hostname(), "KUBERNETES_SERVICE_PORT=" + api.Port()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "stdout %s\nstderr %s", stdout.String(), stderr.String())
	r := result{Stdout: stdout.String(), hasJSON: true}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &r.Doc))
	assert.Equal(t, "pass", r.check(t, "LA301").Status)
	assert.Equal(t, "pass", r.check(t, "LA101").Status)
	assert.Empty(t, permissionSkips(r), "the shipped read-only RBAC is enough in-cluster")
	assert.Contains(t, stdout.String(), `"context": "in-cluster"`)
}
