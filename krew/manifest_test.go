// Package krew_test keeps the krew manifest in step with the release: the platforms it lists
// are the archives goreleaser builds, and krew/render.sh fills version and checksums from
// goreleaser's output without changing anything else. krew's own validator runs on the
// template and on the rendered manifest in `make release-check` (krew/validate.sh).
package krew_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// plugin is the part of krew's index.Plugin this test reads.
type plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string     `json:"version"`
		Homepage         string     `json:"homepage"`
		ShortDescription string     `json:"shortDescription"`
		Description      string     `json:"description"`
		Caveats          string     `json:"caveats"`
		Platforms        []platform `json:"platforms"`
	} `json:"spec"`
}

type platform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	Sha256 string `json:"sha256"`
	Bin    string `json:"bin"`
}

func readPlugin(t *testing.T, path string) plugin {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var p plugin
	require.NoError(t, yaml.UnmarshalStrict(raw, &p), path)
	return p
}

// goreleaser is the part of .goreleaser.yaml that decides the archives.
type goreleaser struct {
	Builds []struct {
		Binary string   `json:"binary"`
		Goos   []string `json:"goos"`
		Goarch []string `json:"goarch"`
	} `json:"builds"`
	Archives []struct {
		NameTemplate    string   `json:"name_template"`
		Formats         []string `json:"formats"`
		FormatOverrides []struct {
			Goos    string   `json:"goos"`
			Formats []string `json:"formats"`
		} `json:"format_overrides"`
	} `json:"archives"`
}

// archives returns "os/arch" -> archive file name, as goreleaser names them.
func archives(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../.goreleaser.yaml")
	require.NoError(t, err)
	var g goreleaser
	require.NoError(t, yaml.Unmarshal(raw, &g))
	require.Len(t, g.Builds, 1)
	require.Len(t, g.Archives, 1)
	a := g.Archives[0]
	require.Equal(t, "kubectl-lanaccess_{{ .Os }}_{{ .Arch }}", a.NameTemplate)
	out := map[string]string{}
	for _, goos := range g.Builds[0].Goos {
		for _, goarch := range g.Builds[0].Goarch {
			format := a.Formats[0]
			for _, o := range a.FormatOverrides {
				if o.Goos == goos {
					format = o.Formats[0]
				}
			}
			out[goos+"/"+goarch] = fmt.Sprintf("kubectl-lanaccess_%s_%s.%s", goos, goarch, format)
		}
	}
	return out
}

func TestTheManifestListsExactlyTheArchivesGoreleaserBuilds(t *testing.T) {
	want := archives(t)
	require.Len(t, want, 6, "linux, darwin and windows on amd64 and arm64")
	p := readPlugin(t, "lanaccess.yaml")
	assert.Equal(t, "lanaccess", p.Metadata.Name, "krew requires the file to be named after the plugin")
	got := map[string]string{}
	for _, pl := range p.Spec.Platforms {
		key := pl.Selector.MatchLabels["os"] + "/" + pl.Selector.MatchLabels["arch"]
		_, dup := got[key]
		require.False(t, dup, "two platforms for %s", key)
		got[key] = filepath.Base(pl.URI)
		bin := "kubectl-lanaccess"
		if pl.Selector.MatchLabels["os"] == "windows" {
			bin += ".exe"
		}
		assert.Equal(t, bin, pl.Bin, key)
		assert.Contains(t, pl.URI, "/releases/download/"+p.Spec.Version+"/", "%s points at the manifest's version", key)
	}
	assert.Equal(t, want, got)
}

// fakeDist writes what goreleaser leaves in dist: checksums.txt and metadata.json.
func fakeDist(t *testing.T, version string, skip string) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	sums := map[string]string{}
	var lines []string
	for _, name := range archives(t) {
		if name == skip {
			continue
		}
		h := sha256.Sum256([]byte(name + version))
		sums[name] = hex.EncodeToString(h[:])
		lines = append(lines, sums[name]+"  "+name)
	}
	sort.Strings(lines)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	meta := fmt.Sprintf(`{"project_name":"kubectl-lanaccess","tag":"v0.1.0","previous_tag":"","version":%q,"commit":"6391ac6","date":"2026-11-30T00:00:00Z","runtime":{"goos":"linux","goarch":"amd64"}}`, version)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metadata.json"), []byte(meta), 0o644))
	return dir, sums
}

func render(t *testing.T, dist string) ([]byte, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "lanaccess.yaml")
	cmd := exec.Command("bash", "render.sh", dist, out)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		return msg, err
	}
	return os.ReadFile(out)
}

func TestRenderFillsVersionAndChecksumsAndKeepsTheShape(t *testing.T) {
	dist, sums := fakeDist(t, "0.2.0", "")
	rendered, err := render(t, dist)
	require.NoError(t, err, "%s", rendered)

	var got plugin
	require.NoError(t, yaml.UnmarshalStrict(rendered, &got))
	assert.Equal(t, "v0.2.0", got.Spec.Version)
	for _, pl := range got.Spec.Platforms {
		name := filepath.Base(pl.URI)
		assert.Equal(t, "https://github.com/lanaccess/kubectl-lanaccess/releases/download/v0.2.0/"+name, pl.URI)
		assert.Equal(t, sums[name], pl.Sha256, name)
	}

	// Everything but version, uri and sha256 is the template's, comments included.
	template, err := os.ReadFile("lanaccess.yaml")
	require.NoError(t, err)
	normalize := func(b []byte) string {
		var keep []string
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "sha256:") || strings.HasPrefix(trimmed, "uri:") || strings.HasPrefix(line, "  version:") {
				continue
			}
			keep = append(keep, line)
		}
		return strings.Join(keep, "\n")
	}
	assert.Equal(t, normalize(template), normalize(rendered))
}

func TestRenderAcceptsASnapshotVersion(t *testing.T) {
	dist, _ := fakeDist(t, "0.1.1-snapshot+6391ac6", "")
	rendered, err := render(t, dist)
	require.NoError(t, err, "%s", rendered)
	var got plugin
	require.NoError(t, yaml.UnmarshalStrict(rendered, &got))
	assert.Equal(t, "v0.1.1-snapshot+6391ac6", got.Spec.Version)
}

func TestRenderFailsOnAnArchiveWithoutChecksum(t *testing.T) {
	dist, _ := fakeDist(t, "0.2.0", "kubectl-lanaccess_darwin_arm64.tar.gz")
	msg, err := render(t, dist)
	require.Error(t, err)
	assert.Contains(t, string(msg), "no checksum for kubectl-lanaccess_darwin_arm64.tar.gz")
}
