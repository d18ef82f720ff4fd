//go:build release

package attest_test

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
)

// tool is the path of a release tool the Makefile built ($COSIGN).
func tool(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	require.NotEmpty(t, p, "$%s: the tool's path (make release-check sets it)", env)
	return p
}

// checksums reads checksums.txt: file name -> sha256.
func checksums(t *testing.T, d string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(d, "checksums.txt"))
	require.NoError(t, err)
	defer f.Close()
	sums := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		sum, name, ok := strings.Cut(s.Text(), "  ")
		require.True(t, ok, "%q", s.Text())
		sums[name] = sum
	}
	require.NoError(t, s.Err())
	return sums
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// binaryOf returns the plugin's binary inside a release archive (tar.gz or zip).
func binaryOf(t *testing.T, archive string) []byte {
	t.Helper()
	if strings.HasSuffix(archive, ".zip") {
		z, err := zip.OpenReader(archive)
		require.NoError(t, err)
		defer z.Close()
		for _, f := range z.File {
			if f.Name == "kubectl-lanaccess.exe" {
				r, err := f.Open()
				require.NoError(t, err)
				defer r.Close()
				b, err := io.ReadAll(r)
				require.NoError(t, err)
				return b
			}
		}
		t.Fatalf("%s holds no kubectl-lanaccess.exe", archive)
	}
	f, err := os.Open(archive)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		require.NoError(t, err, "%s holds no kubectl-lanaccess", archive)
		if h.Name == "kubectl-lanaccess" {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			return b
		}
	}
}

// spdx is the part of an SPDX 2.3 JSON document this test reads.
type spdx struct {
	SPDXVersion string `json:"spdxVersion"`
	Name        string `json:"name"`
	Packages    []struct {
		Name        string `json:"name"`
		VersionInfo string `json:"versionInfo"`
	} `json:"packages"`
}

// Every archive has its SBOM, an SPDX 2.3 JSON document written by syft, that lists every
// module the archive's binary was linked with (the binary's own build information, at the
// version built); checksums.txt covers the archives and the SBOMs.
func TestEveryArchiveHasAnSBOMOfItsBinarysModules(t *testing.T) {
	d := releasetest.Dist(t, "checksums.txt")
	sums := checksums(t, d)
	archives, err := filepath.Glob(filepath.Join(d, "kubectl-lanaccess_*_*.*"))
	require.NoError(t, err)
	var n int
	for _, archive := range archives {
		if !strings.HasSuffix(archive, ".tar.gz") && !strings.HasSuffix(archive, ".zip") {
			continue
		}
		n++
		t.Run(filepath.Base(archive), func(t *testing.T) {
			doc := archive + ".spdx.json"
			raw, err := os.ReadFile(doc)
			require.NoError(t, err, "the archive's SBOM")
			var s spdx
			require.NoError(t, json.Unmarshal(raw, &s))
			assert.Equal(t, "SPDX-2.3", s.SPDXVersion)
			listed := map[string]bool{}
			for _, p := range s.Packages {
				listed[p.Name+"@"+p.VersionInfo] = true
			}
			info, err := buildinfo.Read(bytes.NewReader(binaryOf(t, archive)))
			require.NoError(t, err)
			require.NotEmpty(t, info.Deps)
			for _, dep := range info.Deps {
				m := dep
				if dep.Replace != nil {
					m = dep.Replace
				}
				assert.True(t, listed[m.Path+"@"+m.Version], "%s@%s is linked but not in the SBOM", m.Path, m.Version)
			}
			assert.Equal(t, sha256File(t, archive), sums[filepath.Base(archive)], "checksums.txt lists the archive")
			assert.Equal(t, sha256File(t, doc), sums[filepath.Base(doc)], "checksums.txt lists the SBOM")
			t.Logf("%s: %d packages, %d modules linked, %d bytes", filepath.Base(doc), len(s.Packages), len(info.Deps), len(raw))
		})
	}
	assert.Equal(t, 6, n, "linux, darwin and windows, amd64 and arm64")
}

// cosign verifies checksums.txt against its signature bundle with the snapshot's public key
// ($COSIGN_PUBLIC_KEY; a release's is keyless and verifies against the CI identity instead),
// and refuses a checksums.txt changed by one byte.
func TestTheChecksumsAreSignedAndASwappedByteIsRefused(t *testing.T) {
	d := releasetest.Dist(t, "checksums.txt")
	cosign := tool(t, "COSIGN")
	pub := tool(t, "COSIGN_PUBLIC_KEY")
	bundle := filepath.Join(d, "checksums.txt.sigstore.json")
	verify := func(file string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// No transparency log: the snapshot's signature was not uploaded (--tlog-upload=false).
		cmd := exec.CommandContext(ctx, cosign, "verify-blob", "--key", pub, "--bundle", bundle, "--insecure-ignore-tlog=true", file)
		cmd.Env = append(os.Environ(), "SIGSTORE_NO_CACHE=1")
		return cmd.CombinedOutput()
	}
	out, err := verify(filepath.Join(d, "checksums.txt"))
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Verified OK")

	raw, err := os.ReadFile(filepath.Join(d, "checksums.txt"))
	require.NoError(t, err)
	raw[0] ^= 1
	tampered := filepath.Join(t.TempDir(), "checksums.txt")
	require.NoError(t, os.WriteFile(tampered, raw, 0o600))
	out, err = verify(tampered)
	require.Error(t, err, "a changed checksums.txt verifies: %s", out)
}
