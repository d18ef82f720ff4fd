package version_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/lanaccess/kubectl-lanaccess/internal/releasetest"
	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

const modulePath = "github.com/lanaccess/kubectl-lanaccess"

const platform = runtime.GOOS + "/" + runtime.GOARCH

// commitTime is the time of the test's commit: it is part of the pseudo-version.
const commitTime = "2026-11-30T05:22:33Z"

// checkout copies the working tree (tracked and untracked files that .gitignore does not
// exclude) into a fresh git repository with one commit, and returns its directory and commit.
// A copy rather than this checkout: a git worktree's .git is a file, which the go command does
// not recognise as a repository (cmd/go/internal/vcs: RootNames {".git", isDir: true}).
func checkout(t *testing.T) (string, string) {
	t.Helper()
	root := releasetest.ModuleRoot(t)
	files, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	require.NoError(t, err)
	dir := t.TempDir()
	for name := range strings.SplitSeq(strings.TrimRight(string(files), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet committed
		}
		require.NoError(t, err)
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, info.Mode().Perm()))
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.invalid",
			"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.invalid",
			"GIT_AUTHOR_DATE="+commitTime, "GIT_COMMITTER_DATE="+commitTime)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "test")
	return dir, git("rev-parse", "HEAD")
}

func versionOf(t *testing.T, bin string) version.Info {
	t.Helper()
	var got version.Info
	require.NoError(t, json.Unmarshal([]byte(releasetest.Run(t, bin, nil, "version", "-o", "json")), &got))
	return got
}

// userAgentOf runs doctor against a fake API server and returns the User-Agent of its first request.
func userAgentOf(t *testing.T, bin string) string {
	t.Helper()
	var once sync.Once
	agent := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { agent <- r.UserAgent() })
		http.Error(w, "test server", http.StatusForbidden)
	}))
	defer srv.Close()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "doctor", "--no-helpers", "--server", srv.URL, "--request-timeout", "5s")
	cmd.Env = []string{"HOME=" + home, "KUBECONFIG=" + filepath.Join(home, "none")}
	out, _ := cmd.CombinedOutput() // the run fails: the server refuses everything
	select {
	case ua := <-agent:
		return ua
	default:
		t.Fatalf("doctor made no request:\n%s", out)
		return ""
	}
}

// The identity of a build, in `version` and in the User-Agent, with the release's ldflags and
// without them: `go build` in a clone, and `go install module@version` (docs/install.md's
// line) from a module proxy.
func TestVersionAndUserAgentOfEachKindOfBuild(t *testing.T) {
	src, rev := checkout(t)
	bin := t.TempDir()
	short := rev[:12]
	pseudo := "v0.0.0-20261130052233-" + short

	t.Run("ldflags", func(t *testing.T) {
		out := releasetest.Build(t, src, runtime.GOOS, runtime.GOARCH, releasetest.LDFlags("v9.8.7", rev, "2026-12-01T00:00:00Z"))
		assert.Equal(t, version.Info{Version: "v9.8.7", Commit: rev, Date: "2026-12-01T00:00:00Z"}, versionOf(t, out))
		assert.Equal(t, "kubectl-lanaccess/v9.8.7 ("+platform+") kubectl-lanaccess/"+rev[:7], userAgentOf(t, out))
	})

	t.Run("go build in a clone", func(t *testing.T) {
		out := filepath.Join(bin, "build")
		releasetest.Go(t, src, releasetest.GoEnv(), "build", "-trimpath", "-o", out, releasetest.Main)
		assert.Equal(t, version.Info{Version: pseudo, Commit: rev, Date: commitTime}, versionOf(t, out))
		assert.Equal(t, "kubectl-lanaccess/"+pseudo+" ("+platform+") kubectl-lanaccess/"+rev[:7], userAgentOf(t, out))
	})

	t.Run("go install module@version", func(t *testing.T) {
		const release = "v0.3.1"
		proxy := moduleProxy(t, src, release)
		// A private module cache, so that the test's module version never lands in the
		// machine's; the dependencies come from the machine's download cache (a valid
		// GOPROXY) before the network.
		modcache := t.TempDir()
		gobin := filepath.Join(bin, "install")
		env := releasetest.GoEnv(
			"GOPROXY=file://"+proxy+",file://"+goEnv(t, "GOMODCACHE")+"/cache/download,"+goEnv(t, "GOPROXY"),
			"GONOSUMDB="+modulePath, "GOMODCACHE="+modcache, "GOBIN="+gobin,
			"GOFLAGS=-modcacherw -trimpath")
		releasetest.Go(t, t.TempDir(), env, "install", modulePath+"/cmd/kubectl-lanaccess@"+release)
		out := filepath.Join(gobin, "kubectl-lanaccess")
		assert.Equal(t, version.Info{Version: release, Commit: "unknown", Date: "unknown"}, versionOf(t, out))
		assert.Equal(t, "kubectl-lanaccess/"+release+" ("+platform+") kubectl-lanaccess/unknown", userAgentOf(t, out))
		assert.Contains(t, releasetest.Run(t, out, nil, "manifests", "job"), "image: "+version.ImageRepository+":"+release+"\n",
			"a released module version names its released image")
	})
}

// moduleProxy writes a GOPROXY directory (https://go.dev/ref/mod#goproxy-protocol) that serves
// the module in dir at version v.
func moduleProxy(t *testing.T, dir, v string) string {
	t.Helper()
	proxy := t.TempDir()
	at := filepath.Join(proxy, modulePath, "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	var zip bytes.Buffer
	require.NoError(t, modzip.CreateFromDir(&zip, module.Version{Path: modulePath, Version: v}, dir))
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	for name, content := range map[string][]byte{
		"list":      []byte(v + "\n"),
		v + ".info": []byte(fmt.Sprintf(`{"Version":%q,"Time":%q}`, v, commitTime)),
		v + ".mod":  gomod,
		v + ".zip":  zip.Bytes(),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(at, name), content, 0o644))
	}
	return proxy
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
