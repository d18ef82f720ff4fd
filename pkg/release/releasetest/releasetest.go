// Package releasetest builds and runs the plugin binary for tests, the way users and the release
// build it: with the go command of this machine, from a source tree, with or without ldflags.
package releasetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Main is the plugin's main package.
const Main = "./cmd/kubectl-lanaccess"

// ModuleRoot is the directory of the repository's go.mod, found upwards from the test's directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// GoEnv is the environment of a go command run by a test: this process's, with the given
// overrides (KEY=VALUE, later ones win). GOFLAGS is set to the go command's default
// (-buildvcs=auto) so that neither a go env file (GOENV; an empty GOFLAGS would fall back to
// it) nor the caller's GOFLAGS changes what is tested; pass GOFLAGS=... to set more.
func GoEnv(overrides ...string) []string {
	env := append(os.Environ(), "GOFLAGS=-buildvcs=auto", "CGO_ENABLED=0")
	return append(env, overrides...)
}

// Go runs the go command in dir and returns its combined output; a failure fails the test.
func Go(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
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
