//go:build release

package attest_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/release/image"
)

// run runs a release tool (two minutes at most) and returns its combined output.
func run(t *testing.T, env []string, tool string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The image as `make release` publishes it: pushed (here to a registry in the test), its SBOM
// written by syft from the OCI layout, the index signed by cosign and the SBOM attested on it.
// A release signs keyless; here the snapshot's key, no transparency log. cosign then verifies
// the signature and the attestation with the public key, and refuses them with another key.
func TestTheImageIsSignedAndItsSBOMAttested(t *testing.T) {
	d := releasetest.Dist(t, "checksums.txt")
	syft, cosign := tool(t, "SYFT"), tool(t, "COSIGN")
	key, pub := tool(t, "COSIGN_PRIVATE_KEY"), tool(t, "COSIGN_PUBLIC_KEY")
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: the test registry needs none
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()

	idx, tag, err := image.ReadIndex(filepath.Join(d, "image"))
	require.NoError(t, err)
	repo := strings.TrimPrefix(srv.URL, "http://") + "/lanaccess/kubectl-lanaccess"
	_, err = image.Push(context.Background(), idx, repo, tag)
	require.NoError(t, err)
	digest, err := idx.Digest()
	require.NoError(t, err)
	ref := repo + "@" + digest.String()

	sbom := filepath.Join(t.TempDir(), "image.spdx.json")
	out, err := run(t, []string{"SYFT_CHECK_FOR_APP_UPDATE=false"}, syft, "scan", "oci-dir:"+filepath.Join(d, "image"), "--platform", "linux/amd64", "-o", "spdx-json="+sbom)
	require.NoError(t, err, "%s", out)
	raw, err := os.ReadFile(sbom)
	require.NoError(t, err)
	var s spdx
	require.NoError(t, json.Unmarshal(raw, &s))
	assert.Equal(t, "SPDX-2.3", s.SPDXVersion)
	names := map[string]bool{}
	for _, p := range s.Packages {
		names[p.Name] = true
	}
	assert.True(t, names["k8s.io/client-go"], "the image's binary's modules: %d packages", len(s.Packages))

	env := []string{"COSIGN_PASSWORD=", "SIGSTORE_NO_CACHE=1"}
	noTlog := []string{"--tlog-upload=false", "--allow-http-registry"}
	out, err = run(t, env, cosign, append([]string{"sign", "--yes", "--key", key, ref}, noTlog...)...)
	require.NoError(t, err, "%s", out)
	out, err = run(t, env, cosign, append([]string{"attest", "--yes", "--key", key, "--type", "spdxjson", "--predicate", sbom, ref}, noTlog...)...)
	require.NoError(t, err, "%s", out)

	verify := []string{"--insecure-ignore-tlog=true", "--allow-http-registry"}
	out, err = run(t, env, cosign, append([]string{"verify", "--key", pub, ref}, verify...)...)
	require.NoError(t, err, "%s", out)
	out, err = run(t, env, cosign, append([]string{"verify-attestation", "--key", pub, "--type", "spdxjson", ref}, verify...)...)
	require.NoError(t, err, "%s", out)

	// Another key pair: neither verifies.
	other := t.TempDir()
	cmd := exec.Command(cosign, "generate-key-pair")
	cmd.Dir, cmd.Env = other, append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	_, err = run(t, env, cosign, append([]string{"verify", "--key", filepath.Join(other, "cosign.pub"), ref}, verify...)...)
	require.Error(t, err, "a signature verifies with a key that did not make it")
	_, err = run(t, env, cosign, append([]string{"verify-attestation", "--key", filepath.Join(other, "cosign.pub"), "--type", "spdxjson", ref}, verify...)...)
	require.Error(t, err, "an attestation verifies with a key that did not make it")
}
