//go:build release

package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
)

// The image `make release-check` built from goreleaser's binaries ($DIST/image; DIST defaults to
// dist): what a release pushes.
func TestTheReleaseImage(t *testing.T) {
	dist := os.Getenv("DIST")
	if dist == "" {
		dist = filepath.Join(releasetest.ModuleRoot(t), "dist")
	}
	var meta struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}
	b, err := os.ReadFile(filepath.Join(dist, "metadata.json"))
	require.NoError(t, err, "run goreleaser first (make release-check)")
	require.NoError(t, json.Unmarshal(b, &meta))
	checkLayout(t, filepath.Join(dist, "image"), "v"+meta.Version, meta.Commit)
}
