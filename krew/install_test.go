//go:build release

package krew_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// KrewVersion is the krew whose CLI installs the manifest: the newest on the Go module proxy.
const KrewVersion = "v0.5.0"

// manifest is the part of krew's index.Plugin this test reads.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// krewTool installs krew's command from the Go module proxy (cmd/krew, or the krew-index CI's
// cmd/validate-krew-manifest) once per machine, into the user cache, and returns its path.
func krewTool(t *testing.T, cmd string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	gobin := filepath.Join(cache, "kubectl-lanaccess", "tools", "krew-"+KrewVersion)
	bin := filepath.Join(gobin, cmd)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	start := time.Now()
	releasetest.Go(t, t.TempDir(), releasetest.GoEnv("GOBIN="+gobin), "install", "sigs.k8s.io/krew/cmd/"+cmd+"@"+KrewVersion)
	t.Logf("built %s %s in %s", cmd, KrewVersion, time.Since(start).Round(time.Second))
	return bin
}

// licenseNames are the names krew-index's CI accepts as the installed license
// (sigs.k8s.io/krew/cmd/validate-krew-manifest: validateLicenseFileExists).
var licenseNames = []string{"license", "license.txt", "license.md", "licenses", "licenses.txt", "licenses.md", "copying", "copying.txt"}

func TestGoreleasersKrewManifest(t *testing.T) {
	d := releasetest.Dist(t, "krew")
	file := filepath.Join(d, "krew", "lanaccess.yaml")
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var m manifest
	require.NoError(t, yaml.UnmarshalStrict(raw, &m))
	var meta struct {
		Version string `json:"version"`
	}
	b, err := os.ReadFile(filepath.Join(d, "metadata.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &meta))

	t.Run("text rules", func(t *testing.T) {
		checkTexts(t, Texts{Name: m.Metadata.Name, ShortDescription: m.Spec.ShortDescription, Description: m.Spec.Description, Caveats: m.Spec.Caveats})
		assert.Equal(t, "v"+meta.Version, m.Spec.Version)
	})

	t.Run("krew's validator", func(t *testing.T) {
		// The structural checks of krew-index's CI: schema, name = file name, sha256 form,
		// selectors that match supported platforms and do not overlap. -skip-install: it would
		// download from the release URLs; the install test below installs the local archives.
		out, err := exec.Command(krewTool(t, "validate-krew-manifest"), "-manifest", file, "-skip-install").CombinedOutput()
		require.NoError(t, err, "%s", out)
	})

	g := readGoreleaser(t)
	want := len(g.Builds[0].Goos) * len(g.Builds[0].Goarch)
	require.Len(t, m.Spec.Platforms, want, "one platform per archive")
	krew := krewTool(t, "krew")
	for _, p := range m.Spec.Platforms {
		goos, goarch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		t.Run("install "+goos+"/"+goarch, func(t *testing.T) {
			archive := filepath.Join(d, path.Base(p.URI))
			// krew unpacks .tar.gz and .zip itself, on any machine: every archive is installable here.
			root := t.TempDir()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, krew, "install", "--manifest="+file, "--archive="+archive)
			cmd.Env = []string{"KREW_ROOT=" + root, "KREW_OS=" + goos, "KREW_ARCH=" + goarch, "KREW_NO_UPGRADE_CHECK=1",
				"HOME=" + t.TempDir(), "PATH=" + filepath.Join(root, "bin") + ":/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			t.Logf("krew install %s/%s: %s", goos, goarch, time.Since(start).Round(time.Millisecond))

			// What krew-index's CI looks for: a license among the installed files.
			store := filepath.Join(root, "store", m.Metadata.Name, m.Spec.Version)
			installed := map[string]bool{}
			require.NoError(t, filepath.WalkDir(store, func(p string, e os.DirEntry, err error) error {
				if err == nil && e.Type().IsRegular() {
					rel, _ := filepath.Rel(store, p)
					installed[rel] = true
				}
				return err
			}))
			license := ""
			for f := range installed {
				for _, n := range licenseNames {
					if strings.EqualFold(filepath.Base(f), n) {
						license = f
					}
				}
			}
			require.NotEmpty(t, license, "no license among %v", installed)
			repoLicense, err := os.ReadFile(filepath.Join(releasetest.ModuleRoot(t), "LICENSE"))
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(store, license))
			require.NoError(t, err)
			assert.Equal(t, repoLicense, got, "the repository's license")

			bin := "kubectl-lanaccess"
			if goos == "windows" {
				bin += ".exe"
			}
			assert.Equal(t, bin, p.Bin)
			require.True(t, installed[bin], "the binary %s among %v", bin, installed)
			// The completion helper travels too; krew links only the binary, so krew users link
			// it themselves (docs/install.md, "Shell completion").
			assert.True(t, installed["kubectl_complete-lanaccess"], "the completion helper among %v", installed)
			// krew's link: kubectl-<name, '-' as '_'>, .exe for Windows (installation.pluginNameToBin).
			link := filepath.Join(root, "bin", "kubectl-"+strings.ReplaceAll(m.Metadata.Name, "-", "_")+filepath.Ext(bin))
			target, err := os.Readlink(link)
			require.NoError(t, err, "krew links the plugin into KREW_ROOT/bin")
			assert.Equal(t, filepath.Join(store, bin), target)

			if goos != runtime.GOOS || goarch != runtime.GOARCH {
				return // this machine runs its own platform's binary only
			}
			var v version.Info
			require.NoError(t, json.Unmarshal([]byte(releasetest.Run(t, link, nil, "version", "-o", "json")), &v))
			assert.Equal(t, m.Spec.Version, v.Version, "the installed plugin is the manifest's version")
		})
	}
}
