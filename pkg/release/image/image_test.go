package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// A goreleaser snapshot's identity: the '+' of its version cannot be in a tag.
var build = version.Info{Version: "v0.4.1-snapshot+1c512fe", Commit: "1c512fe0123456789abcdef0123456789abcdef0", Date: "2026-11-30T05:22:33Z"}

const wantTag = "v0.4.1-snapshot_1c512fe"

// binaries are the plugin's binaries for every platform of the image, built once by TestMain
// in scratch, which also holds the shared layout and outlives every test.
var (
	binaries map[string]string
	scratch  string
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "image-test")
		if err != nil {
			panic(err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		scratch = dir
		root, err := releasetest.FindModuleRoot()
		if err != nil {
			panic(err)
		}
		binaries = map[string]string{}
		for _, p := range Platforms {
			goos, goarch, _ := strings.Cut(p, "/")
			out := filepath.Join(dir, goos+"_"+goarch, "kubectl-lanaccess")
			if err := releasetest.BuildTo(out, root, goos, goarch, releasetest.LDFlags(build.Version, build.Commit, build.Date)); err != nil {
				panic(err)
			}
			binaries[p] = out
		}
		return m.Run()
	}())
}

// built is the layout of the tests that only read it, built once. It lives in TestMain's
// scratch directory: a t.TempDir would be removed with the first test that builds it.
var built struct {
	sync.Once
	dir string
	idx v1.ImageIndex
}

func builtLayout(t *testing.T) (string, v1.ImageIndex) {
	t.Helper()
	built.Do(func() {
		built.dir = filepath.Join(scratch, "layout")
		built.idx = buildLayoutAt(t, built.dir)
	})
	require.NotNil(t, built.idx, "the shared layout failed to build")
	return built.dir, built.idx
}

func buildLayout(t *testing.T) (string, v1.ImageIndex) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	return dir, buildLayoutAt(t, dir)
}

func buildLayoutAt(t *testing.T, dir string) v1.ImageIndex {
	t.Helper()
	idx, info, err := Build(context.Background(), Options{Binaries: binaries, License: filepath.Join(releasetest.ModuleRoot(t), "LICENSE"), Version: build.Version})
	require.NoError(t, err)
	assert.Equal(t, build, info)
	require.NoError(t, WriteLayout(dir, idx, version.ImageTag(info.Version)))
	return idx
}

func TestTheLayoutHoldsAMultiPlatformImageOfTheRelease(t *testing.T) {
	dir, _ := builtLayout(t)
	_, tag, err := ReadIndex(dir)
	require.NoError(t, err)
	assert.Equal(t, wantTag, tag, "the version, '+' as '_'")
	checkLayout(t, dir, build.Version, build.Commit)
}

// checkLayout reads the OCI layout at dir back from disk, as a registry push or a containerd
// import would, and checks each platform's image: config, filesystem, binary; the binary of this
// machine's platform must run and report version and commit.
func checkLayout(t *testing.T, dir, wantVersion, wantCommit string) {
	t.Helper()
	idx, tag, err := ReadIndex(dir)
	require.NoError(t, err)
	assert.Equal(t, version.ImageTag(wantVersion), tag, "tag = the release version")
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	assert.Equal(t, "application/vnd.oci.image.index.v1+json", string(m.MediaType))
	require.Len(t, m.Manifests, len(Platforms))

	license, err := os.ReadFile(filepath.Join(releasetest.ModuleRoot(t), "LICENSE"))
	require.NoError(t, err)
	assert.Equal(t, wantVersion, m.Annotations["org.opencontainers.image.version"], "the index is annotated too")
	assert.Equal(t, Source, m.Annotations["org.opencontainers.image.source"])
	for i, desc := range m.Manifests {
		platform := desc.Platform.OS + "/" + desc.Platform.Architecture
		assert.Equal(t, Platforms[i], platform)
		t.Run(platform, func(t *testing.T) {
			img, err := Read(dir, platform)
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, desc.Platform.OS, cfg.OS)
			assert.Equal(t, desc.Platform.Architecture, cfg.Architecture)
			assert.Equal(t, "65532:65532", cfg.Config.User)
			assert.Equal(t, []string{"/usr/local/bin/kubectl-lanaccess"}, cfg.Config.Entrypoint)
			assert.Equal(t, []string{"PATH=/usr/local/bin", "HOME=/home/nonroot"}, cfg.Config.Env, "the Job's command is found on PATH; ~ is a directory")
			assert.Equal(t, wantVersion, cfg.Config.Labels["org.opencontainers.image.version"])
			assert.Equal(t, wantCommit, cfg.Config.Labels["org.opencontainers.image.revision"])

			root := t.TempDir()
			require.NoError(t, Unpack(img, root))
			var names []string
			require.NoError(t, filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					rel, _ := filepath.Rel(root, p)
					names = append(names, rel)
				}
				return err
			}))
			assert.ElementsMatch(t, []string{"usr/local/bin/kubectl-lanaccess", "usr/share/doc/kubectl-lanaccess/LICENSE"}, names, "nothing but the binary and the license")
			bin := filepath.Join(root, "usr/local/bin/kubectl-lanaccess")
			st, err := os.Stat(bin)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
			got, err := os.ReadFile(filepath.Join(root, "usr/share/doc/kubectl-lanaccess/LICENSE"))
			require.NoError(t, err)
			assert.Equal(t, license, got)
			f, err := elf.Open(bin)
			require.NoError(t, err)
			assert.Equal(t, elfMachine[desc.Platform.Architecture], f.Machine)
			require.NoError(t, f.Close())
			if platform != runtime.GOOS+"/"+runtime.GOARCH {
				return // this machine runs its own platform's binary only
			}
			var v version.Info
			require.NoError(t, json.Unmarshal([]byte(releasetest.Run(t, bin, nil, "version", "-o", "json")), &v))
			assert.Equal(t, wantVersion, v.Version)
			assert.Equal(t, wantCommit, v.Commit)
			assert.Equal(t, v.Date, cfg.Created.UTC().Format(time.RFC3339), "created at the commit, not at build time")
			assert.Contains(t, releasetest.Run(t, bin, nil, "manifests", "job"), "image: "+version.ImageRepository+":"+version.ImageTag(wantVersion)+"\n",
				"the binary in the image names the image it is in")
		})
	}
}

func TestARebuildHasTheSameDigest(t *testing.T) {
	_, a := builtLayout(t)
	_, b := buildLayout(t)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	assert.Equal(t, da, db)
}

func TestBuildRefusesWrongBinaries(t *testing.T) {
	license := filepath.Join(releasetest.ModuleRoot(t), "LICENSE")
	ctx := context.Background()
	bins := binaries
	for name, tc := range map[string]struct {
		binaries map[string]string
		version  string
		want     string
	}{
		"another machine's binary":          {map[string]string{"linux/amd64": bins["linux/amd64"], "linux/arm64": bins["linux/amd64"]}, "", "ELF machine EM_X86_64, want EM_AARCH64"},
		"a platform the image has not":      {map[string]string{"linux/amd64": bins["linux/amd64"], "linux/arm64": bins["linux/arm64"], "linux/s390x": bins["linux/amd64"]}, "", "no platform linux/s390x"},
		"a missing platform":                {map[string]string{"linux/amd64": bins["linux/amd64"]}, "", "no binary for linux/arm64"},
		"another version than goreleaser's": {bins, "v0.4.2", "is version " + build.Version + ", not v0.4.2"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := Build(ctx, Options{Binaries: tc.binaries, License: license, Version: tc.version})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// A dynamically linked binary needs a loader and a libc the image has not.
	dynamic, err := os.Executable()
	require.NoError(t, err)
	if checkStaticELF(dynamic, elfMachine[runtime.GOARCH]) == nil {
		dynamic = "/bin/sh"
	}
	assert.ErrorContains(t, checkStaticELF(dynamic, elfMachine[runtime.GOARCH]), "dynamically linked")
}

func TestPushWritesTheIndexToARegistry(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: the test registry needs none
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	_, idx := builtLayout(t)
	repo := strings.TrimPrefix(srv.URL, "http://") + "/lanaccess/kubectl-lanaccess"
	ref, err := Push(context.Background(), idx, repo, wantTag)
	require.NoError(t, err)
	assert.Equal(t, repo+":"+wantTag, ref.String())

	tag, err := name.NewTag(repo + ":" + wantTag)
	require.NoError(t, err)
	pulled, err := remote.Index(tag)
	require.NoError(t, err)
	want, err := idx.Digest()
	require.NoError(t, err)
	got, err := pulled.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// The layer holds a world-writable /tmp (sticky, as on any Linux) and the user's HOME, owned by
// the user: read as tar headers (Unpack applies the umask).
func TestTheLayerHasAWritableTmpAndTheUsersHome(t *testing.T) {
	layer, err := filesystem(time.Unix(0, 0), []byte("bin"), []byte("license"))
	require.NoError(t, err)
	dirs := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		dirs[h.Name] = h
	}
	require.Contains(t, dirs, "tmp/")
	assert.Equal(t, int64(0o1777), dirs["tmp/"].Mode)
	require.Contains(t, dirs, "home/nonroot/")
	assert.Equal(t, int64(0o700), dirs["home/nonroot/"].Mode)
	assert.Equal(t, []int{65532, 65532}, []int{dirs["home/nonroot/"].Uid, dirs["home/nonroot/"].Gid}, "owned by %s", User)
	assert.Equal(t, Home, "/home/nonroot")
}
