package podexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/remotecommand"
)

var testPod = PodRef{Namespace: "vpn", Name: "openvpn-0"}

func newTestExecutor(t *testing.T, websocket bool) (*execServer, *RemoteExecutor) {
	t.Helper()
	srv, cfg := newExecServer(t, websocket)
	e, err := NewRemoteExecutor(cfg)
	require.NoError(t, err)
	return srv, e
}

func TestExecRunsTheCommandOverWebSocketAndReturnsItsOutput(t *testing.T) {
	srv, e := newTestExecutor(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, errOut, err := e.Exec(ctx, testPod, "openvpn", []string{"sh", "-c", "echo forwarded; echo warn >&2"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "forwarded\n", string(out))
	assert.Equal(t, "warn\n", string(errOut))
	assert.Equal(t, []string{remotecommand.StreamProtocolV5Name}, srv.protocols)
	// The remote side ran the guard, bounded by the context's deadline (10 s + 1 s of slack).
	require.Len(t, srv.commands, 1)
	assert.Equal(t, []string{"sh", "-c", guardScript}, srv.commands[0][:3])
	assert.Contains(t, []string{"10", "11"}, srv.commands[0][3])
}

func TestExecFallsBackToSPDYWhenTheWebSocketUpgradeIsRefused(t *testing.T) {
	srv, e := newTestExecutor(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _, err := e.Exec(ctx, testPod, "c", []string{"cat"}, strings.NewReader("from stdin"))
	require.NoError(t, err)
	assert.Equal(t, "from stdin", string(out))
	assert.Equal(t, []string{remotecommand.StreamProtocolV4Name}, srv.protocols)
}

func TestANonZeroExitSurfacesTheCodeAndStderrOnBothProtocols(t *testing.T) {
	for _, ws := range []bool{true, false} {
		_, e := newTestExecutor(t, ws)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, _, err := e.Exec(ctx, testPod, "c", []string{"sh", "-c", "echo partial; echo nope >&2; exit 3"}, nil)
		cancel()
		require.Error(t, err)
		code, ok := ExitCode(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, 3, code)
		assert.Equal(t, "partial\n", string(out))
		assert.Contains(t, err.Error(), "nope")
		assert.Contains(t, err.Error(), testPod.String())
	}
}

func TestAnExitReportedAsAnInternalErrorStillGivesTheCode(t *testing.T) {
	srv, e := newTestExecutor(t, true)
	srv.plainExitErrors = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := e.Exec(ctx, testPod, "c", []string{"sh", "-c", "echo no route >&2; exit 9"}, nil)
	code, ok := ExitCode(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 9, code)
	assert.Contains(t, err.Error(), "no route")
	_, _, err = e.Exec(ctx, testPod, "c", []string{"nslookup-that-does-not-exist"}, nil)
	var tm *ToolMissingError
	require.ErrorAs(t, err, &tm, "%v", err)
	assert.Equal(t, "nslookup-that-does-not-exist", tm.Tool)
}

func TestACancelledRunDoesNotLeaveTheRemoteCommandRunning(t *testing.T) {
	srv, e := newTestExecutor(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := e.Exec(ctx, testPod, "c", []string{"sleep", "60"}, nil)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	// The stand-in runtime does not kill the process when the stream goes: only the guard can.
	select {
	case ps := <-srv.exited:
		assert.False(t, ps.Success())
	case <-time.After(10 * time.Second):
		t.Fatal("the remote sleep was still running 10 s after the client gave up")
	}
}

// toolDir builds a PATH with only the named programs, like a minimal image.
func toolDir(t *testing.T, tools ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		require.NoError(t, err, tool)
		require.NoError(t, os.Symlink(p, filepath.Join(dir, tool)))
	}
	return dir
}

func TestAnImageWithoutTimeoutStillRunsTheCommand(t *testing.T) {
	srv, e := newTestExecutor(t, true)
	srv.path = toolDir(t, "sh", "cat")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _, err := e.Exec(ctx, testPod, "c", []string{"cat", "/proc/sys/net/ipv4/ip_forward"}, nil)
	require.NoError(t, err)
	assert.Regexp(t, `^[01]\n$`, string(out))
}

func TestAProgramMissingFromTheImageIsToolMissingNamingIt(t *testing.T) {
	srv, e := newTestExecutor(t, true)
	srv.path = toolDir(t, "sh", "timeout")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := e.Exec(ctx, testPod, "openvpn", []string{"iptables-save", "-t", "nat"}, nil)
	require.Error(t, err)
	var tm *ToolMissingError
	require.ErrorAs(t, err, &tm, "%v", err)
	assert.Equal(t, "iptables-save", tm.Tool)
	assert.Contains(t, err.Error(), "vpn/openvpn-0")
}

func TestAnImageWithoutAShellIsToolMissingSh(t *testing.T) {
	srv, e := newTestExecutor(t, true)
	srv.path = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := e.Exec(ctx, testPod, "c", []string{"cat", "/etc/hostname"}, nil)
	var tm *ToolMissingError
	require.ErrorAs(t, err, &tm, "%v", err)
	assert.Equal(t, "sh", tm.Tool)
}

func TestDeniedExecKeepsTheForbiddenStatus(t *testing.T) {
	for _, ws := range []bool{true, false} {
		srv, e := newTestExecutor(t, ws)
		srv.forbid = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _, err := e.Exec(ctx, testPod, "c", []string{"true"}, nil)
		cancel()
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "websocket=%v: %v (%T)", ws, err, err)
	}
}

func TestOutputBeyondTheCapIsAnErrorNotASilentCut(t *testing.T) {
	_, e := newTestExecutor(t, true)
	e.MaxOutput = 1000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _, err := e.Exec(ctx, testPod, "c", []string{"head", "-c", "5000", "/dev/zero"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than 1000 bytes")
	assert.Len(t, out, 1000)
}

func TestMissingToolIsReadFromEachShellsWording(t *testing.T) {
	cases := map[string]string{
		"sh: ip: not found":                                                        "ip",
		"sh: 1: exec: ip: not found":                                               "ip",
		"/bin/sh: line 1: nslookup: command not found":                             "nslookup",
		"timeout: failed to run command 'dig': No such file or directory":          "dig",
		"timeout: failed to run command \u2018ip\u2019: No such file or directory": "ip",
	}
	for stderr, want := range cases {
		got, ok := missingTool(stderr)
		assert.True(t, ok, stderr)
		assert.Equal(t, want, got, stderr)
	}
	_, ok := missingTool("connection timed out; no servers could be reached")
	assert.False(t, ok)
}

func TestAnEndlessOutputIsCutAtTheCapNotAtTheDeadline(t *testing.T) {
	for _, ws := range []bool{true, false} {
		_, e := newTestExecutor(t, ws)
		e.MaxOutput = 64 << 10
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		out, _, err := e.Exec(ctx, testPod, "c", []string{"cat", "/dev/zero"}, nil)
		cancel()
		require.Error(t, err, "websocket=%v", ws)
		assert.Contains(t, err.Error(), "not read further")
		assert.Len(t, out, 64<<10)
		assert.Less(t, time.Since(start), 10*time.Second, "websocket=%v: the stream ends at the cap", ws)
	}
}
