// Package releasetest builds and runs the plugin binary for tests, the way users and the release
// build it: with the go command of this machine, from a source tree, with or without ldflags.
package releasetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Main is the plugin's main package.
const Main = "./cmd/kubectl-lanaccess"

// FindModuleRoot is the directory of the repository's go.mod, found upwards from the working
// directory (a test's package directory).
func FindModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// ModuleRoot is FindModuleRoot for a test.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Dist is goreleaser's output directory of `make release-check` ($DIST, default the module's
// dist/), which must hold marker (a file or directory goreleaser writes there).
func Dist(t testing.TB, marker string) string {
	t.Helper()
	d := os.Getenv("DIST")
	if d == "" {
		d = filepath.Join(ModuleRoot(t), "dist")
	}
	if _, err := os.Stat(filepath.Join(d, marker)); err != nil { //nolint:gosec // G703: $DIST is the tester's own directory
		t.Fatalf("run goreleaser first (make release-check): %v", err)
	}
	return d
}

// GoEnv is the environment of a go command run by a test: this process's, with the given
// overrides (KEY=VALUE, later ones win). GOFLAGS is set to the go command's default
// (-buildvcs=auto) so that neither a go env file (GOENV; an empty GOFLAGS would fall back to
// it) nor the caller's GOFLAGS changes what is tested; pass GOFLAGS=... to set more.
func GoEnv(overrides ...string) []string {
	env := append(os.Environ(), "GOFLAGS=-buildvcs=auto", "CGO_ENABLED=0")
	return append(env, overrides...)
}

// RunGo runs the go command in dir (ten minutes at most) and returns its combined output.
func RunGo(dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("go %v in %s: %w\n%s", args, dir, err, out)
	}
	return string(out), nil
}

// Go is RunGo for a test: a failure fails it.
func Go(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := RunGo(dir, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// LDFlags are the release's linker flags (.goreleaser.yaml, Makefile) for a version, commit and
// date.
func LDFlags(version, commit, date string) string {
	const pkg = "github.com/lanaccess/kubectl-lanaccess/pkg/version"
	return "-s -w -X " + pkg + ".version=" + version + " -X " + pkg + ".commit=" + commit + " -X " + pkg + ".date=" + date
}

// BuildTo builds the plugin from the module at dir for goos/goarch as the release does (static,
// -trimpath, ldflags) into out.
func BuildTo(out, dir, goos, goarch, ldflags string) error {
	_, err := RunGo(dir, GoEnv("GOOS="+goos, "GOARCH="+goarch), "build", "-trimpath", "-ldflags", ldflags, "-o", out, Main)
	return err
}

// Build is BuildTo for a test, into a temporary directory; it returns the binary's path.
func Build(t testing.TB, dir, goos, goarch, ldflags string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kubectl-lanaccess")
	if err := BuildTo(out, dir, goos, goarch, ldflags); err != nil {
		t.Fatal(err)
	}
	return out
}

// Run runs the binary with args (one minute at most) and returns its stdout; a non-zero exit
// fails the test, with stderr.
func Run(t testing.TB, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", bin, args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
