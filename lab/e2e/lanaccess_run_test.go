//go:build lab

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// lanaccessBinary builds the plugin once per test binary, from this checkout.
var lanaccessBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lanaccess-e2e-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kubectl-lanaccess")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-lanaccess")
	cmd.Dir = filepath.Dir(lab.LabDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kubectl-lanaccess: %w: %s", err, out)
	}
	return bin, nil
})

// lanaccessReport is the part of the JSON contract the tests read.
type lanaccessReport struct {
	Command string `json:"command"`
	Checks  []struct {
		ID       string           `json:"id"`
		Status   string           `json:"status"`
		Reason   string           `json:"reason"`
		Findings []engine.Finding `json:"findings"`
	} `json:"checks"`
}

type lanaccessRun struct {
	Exit   int
	Stderr string
	Report lanaccessReport
}

// lanaccessCmd is the plugin with the lab's kubeconfig, run in a lab namespace ("" = the
// workstation; "laptop" for --from-client, where the VPN client is connected).
func lanaccessCmd(t *testing.T, ctx context.Context, namespace string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := lanaccessBinary()
	require.NoError(t, err)
	argv := append([]string{bin, "--kubeconfig", lab.Kubeconfig}, args...)
	if namespace != "" {
		argv = append([]string{"ip", "netns", "exec", namespace}, argv...)
	}
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// runLanaccess runs the plugin with -o json and returns its exit code and report.
func runLanaccess(t *testing.T, namespace string, timeout time.Duration, args ...string) lanaccessRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// With LANACCESS_REPLAY_EVERY=1 (make test-lab) a vpn-trace run is also recorded, and its
	// bundle replayed offline must give the same verdicts, as doctor's (checkReplay); with
	// --from-client too, whose ladder from this machine is recorded at its prober.
	var bundle string
	if len(args) > 0 && args[0] == "vpn-trace" && os.Getenv(replayEveryEnv) == "1" && !containsArg(args, "--record") {
		bundle = filepath.Join(t.TempDir(), "vpn-trace.gz")
		args = append(append([]string{}, args...), "--record", bundle)
	}
	cmd := lanaccessCmd(t, ctx, namespace, append(args, "-o", "json")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := lanaccessRun{Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("kubectl-lanaccess %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &r.Report), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	if bundle != "" {
		checkReplay(t, "vpn-trace", bundle, result{Code: r.Exit, Stdout: stdout.String(), Stderr: stderr.String()})
	}
	return r
}

// check returns one check's result; the test fails if the run did not report it.
func (r lanaccessRun) check(t *testing.T, id string) (status, reason string, findings []engine.Finding) {
	t.Helper()
	for _, c := range r.Report.Checks {
		if c.ID == id {
			return c.Status, c.Reason, c.Findings
		}
	}
	t.Fatalf("no %s in the report (stderr: %s)", id, r.Stderr)
	return "", "", nil
}

func findingText(fs []engine.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s %s: %s %v\n", f.Severity, f.Object, f.Message, f.Evidence)
	}
	return b.String()
}

// ourPodWatch records every pod event carrying the plugin's label, cluster-wide, from now on.
type ourPodWatch struct {
	mu     sync.Mutex
	events []watch.EventType
	names  []string
	w      watch.Interface
	done   chan struct{}
}

func watchOurPods(t *testing.T) *ourPodWatch {
	t.Helper()
	w, err := lab.Client.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{
		LabelSelector: podexec.ManagedByLabel + "=" + podexec.ManagedByValue,
	})
	require.NoError(t, err)
	pw := &ourPodWatch{w: w, done: make(chan struct{})}
	go func() {
		defer close(pw.done)
		for ev := range w.ResultChan() {
			if obj, ok := ev.Object.(metav1.Object); ok {
				pw.mu.Lock()
				pw.events = append(pw.events, ev.Type)
				pw.names = append(pw.names, obj.GetNamespace()+"/"+obj.GetName())
				pw.mu.Unlock()
			}
		}
	}()
	t.Cleanup(pw.stop)
	return pw
}

func (pw *ourPodWatch) stop() {
	pw.w.Stop()
	<-pw.done
}

func (pw *ourPodWatch) added() []string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var out []string
	for i, e := range pw.events {
		if e == watch.Added {
			out = append(out, pw.names[i])
		}
	}
	return out
}

// ourPodsLeft lists the pods still labelled as the plugin's.
func ourPodsLeft(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := lab.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: podexec.ManagedByLabel + "=" + podexec.ManagedByValue})
	require.NoError(t, err)
	out := make([]string, 0, len(l.Items))
	for _, p := range l.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}
