package podexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
)

// PodRef names a pod.
type PodRef struct {
	Namespace string
	Name      string
}

func (r PodRef) String() string { return r.Namespace + "/" + r.Name }

// Executor runs a command in a container and returns what it wrote. A command that ran and
// exited non-zero returns its output and an *ExitError; a command that could not be started
// because the image lacks it returns a *ToolMissingError.
type Executor interface {
	Exec(ctx context.Context, ref PodRef, container string, cmd []string, stdin io.Reader) (stdout, stderr []byte, err error)
}

// ExitError is a remote command that ran and exited with a non-zero code.
type ExitError struct {
	Pod       PodRef
	Container string
	Command   []string
	Code      int
	Stderr    string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%q in pod %s exited with code %d", strings.Join(e.Command, " "), e.Pod, e.Code)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + truncateText(s, 300)
	}
	return msg
}

// TimedOut reports whether the remote guard killed the command (timeout exits 124, or 137 when
// the KILL signal was used).
func (e *ExitError) TimedOut() bool { return e.Code == 124 || e.Code == 137 }

// ToolMissingError says the image has no such program: the command was not run, so nothing
// can be concluded from it.
type ToolMissingError struct {
	Pod       PodRef
	Container string
	Tool      string
	Detail    string
}

func (e *ToolMissingError) Error() string {
	return fmt.Sprintf("the image of pod %s (container %s) has no %q: %s", e.Pod, e.Container, e.Tool, truncateText(e.Detail, 200))
}

// ExitCode returns the remote exit code carried by err, if any.
func ExitCode(err error) (int, bool) {
	if ee, ok := errors.AsType[*ExitError](err); ok {
		return ee.Code, true
	}
	return 0, false
}

// IsToolMissing reports whether err says the image lacks the program.
func IsToolMissing(err error) bool {
	var tm *ToolMissingError
	return errors.As(err, &tm)
}

// guardScript makes a remote command end by itself: when the client goes away (Ctrl-C, a
// check deadline) the API server closes the stream, but the container runtime keeps an exec'd
// process running. `timeout -s KILL` bounds it; images whose timeout lacks that syntax (old
// busybox) or have none run the command unguarded rather than not at all. $0 carries the
// seconds, "$@" the command, so nothing is re-quoted.
const guardScript = `if timeout -s KILL 1 true >/dev/null 2>&1; then exec timeout -s KILL "$0" "$@"; fi; exec "$@"`

// GuardCommand wraps cmd so that it is killed after limit on the remote side.
func GuardCommand(cmd []string, limit time.Duration) []string {
	secs := max(int(math.Ceil(limit.Seconds())), 1)
	return append([]string{"sh", "-c", guardScript, strconv.Itoa(secs)}, cmd...)
}

// RemoteLimit is how long a remote command may live: the caller's deadline plus a second of
// slack (the stream closes first, so the client sees the deadline, not a kill), or def.
func RemoteLimit(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d) + time.Second
	}
	return def
}

// RemoteExecutor is the real Executor: the pods/exec subresource over WebSocket (v5 protocol),
// falling back to SPDY when the server or a proxy refuses the WebSocket upgrade, as kubectl
// exec does.
type RemoteExecutor struct {
	config *rest.Config
	rest   rest.Interface
	// DefaultLimit bounds a remote command when the context has no deadline.
	DefaultLimit time.Duration
	// MaxOutput bounds what is kept of stdout and of stderr; more is an error, not a silent cut.
	MaxOutput int
}

// NewRemoteExecutor builds the executor from the same rest.Config as the clientset: the core
// group's REST client, as client-go's typed core/v1 NewForConfig builds it.
func NewRemoteExecutor(config *rest.Config) (*RemoteExecutor, error) {
	hc, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("exec client: %w", err)
	}
	core, err := client.GroupRESTClient(config, hc, corev1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("exec client: %w", err)
	}
	return &RemoteExecutor{config: config, rest: core, DefaultLimit: 2 * time.Minute, MaxOutput: DefaultMaxOutput}, nil
}

// Exec runs cmd in the container, guarded so it cannot outlive the context.
func (e *RemoteExecutor) Exec(ctx context.Context, ref PodRef, container string, cmd []string, stdin io.Reader) ([]byte, []byte, error) {
	if len(cmd) == 0 {
		return nil, nil, errors.New("exec: empty command")
	}
	remote := GuardCommand(cmd, RemoteLimit(ctx, e.DefaultLimit))
	req := e.rest.Post().Resource("pods").Namespace(ref.Namespace).Name(ref.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   remote,
			Stdin:     stdin != nil,
			Stdout:    true,
			Stderr:    true,
		}, client.ParameterCodec())
	u := req.URL()
	spdyExec, err := remotecommand.NewSPDYExecutor(e.config, "POST", u)
	if err != nil {
		return nil, nil, fmt.Errorf("exec in pod %s: %w", ref, err)
	}
	// WebSocket must be GET (RFC 6455 4.1).
	wsExec, err := remotecommand.NewWebSocketExecutor(e.config, "GET", u.String())
	if err != nil {
		return nil, nil, fmt.Errorf("exec in pod %s: %w", ref, err)
	}
	exec, err := remotecommand.NewFallbackExecutor(wsExec, spdyExec, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("exec in pod %s: %w", ref, err)
	}
	// Past a bound, the stream is ended at once: not every transport stops on a write error
	// (the WebSocket one keeps reading until the context ends).
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	stdout := &cappedBuffer{max: e.MaxOutput, over: stop}
	stderr := &cappedBuffer{max: min(e.MaxOutput, MaxStderr), over: stop}
	err = exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	// Once the cap cancels the stream, StreamWithContext returns while client-go's copy
	// goroutine may still be writing: seal each buffer and read a copy, never the live one.
	out, outFull := stdout.seal()
	errOut, errFull := stderr.seal()
	if outFull || errFull {
		// Cut short on purpose: what was read is not the whole answer, so it is no answer.
		return out, errOut, fmt.Errorf("exec in pod %s: output larger than %d bytes (stdout) or %d bytes (stderr): not read further", ref, stdout.max, stderr.max)
	}
	return out, errOut, classifyExecError(err, ref, container, cmd, string(errOut))
}

// classifyExecError turns what the exec stream returned into ExitError, ToolMissingError, or
// an error naming the pod (RBAC denials keep their API status, so apierrors.IsForbidden works).
func classifyExecError(err error, ref PodRef, container string, cmd []string, stderr string) error {
	if err == nil {
		return nil
	}
	code, ok := remoteExitCode(err)
	if ok {
		// 127 is a shell saying it found no such program (126: found, not executable); the
		// guard runs the command with exec, so this is the command or a program its script runs.
		if code == 127 || code == 126 {
			if tool, ok := missingTool(stderr); ok {
				return &ToolMissingError{Pod: ref, Container: container, Tool: tool, Detail: strings.TrimSpace(stderr)}
			}
		}
		return &ExitError{Pod: ref, Container: container, Command: cmd, Code: code, Stderr: stderr}
	}
	// The runtime could not start the guard itself: there is no shell in the image.
	if msg := err.Error(); strings.Contains(msg, `"sh": executable file not found`) || strings.Contains(msg, `exec: "sh"`) {
		return &ToolMissingError{Pod: ref, Container: container, Tool: "sh", Detail: msg}
	}
	// SPDY reports a refused upgrade as text; give RBAC denials back their status so callers
	// can tell "not permitted" (SKIP, naming the grant) from "broken" (ERROR).
	if !apierrors.IsForbidden(err) && strings.Contains(err.Error(), " is forbidden") {
		err = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403,
			Reason: metav1.StatusReasonForbidden, Message: err.Error()}}
	}
	return fmt.Errorf("exec in pod %s: %w", ref, err)
}

// exitStatusText is how some runtimes (kwok, CRI shims) report a non-zero exit: as an internal
// error ending in Go's "exit status N" instead of the NonZeroExitCode status.
var exitStatusText = regexp.MustCompile(`(?:exit status|exit code) (\d+)\s*$`)

// remoteExitCode reads the command's exit code from the stream's error, in either form.
func remoteExitCode(err error) (int, bool) {
	if code, ok := errors.AsType[utilexec.ExitError](err); ok {
		return code.ExitStatus(), true
	}
	if m := exitStatusText.FindStringSubmatch(err.Error()); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			return n, true
		}
	}
	return 0, false
}

// failedToRun is coreutils timeout's complaint, quoted with ASCII or typographic quotes
// depending on the locale.
var failedToRun = regexp.MustCompile("failed to run command ['\u2018\"]([^'\u2019\"]+)['\u2019\"]")

// missingTool finds the program a shell could not run in its complaint: "sh: ip: not found"
// (busybox), "sh: 1: ip: not found" (dash), "sh: line 1: ip: command not found" (bash),
// "exec: ip: not found", "timeout: failed to run command 'ip': No such file or directory".
func missingTool(stderr string) (string, bool) {
	for line := range strings.SplitSeq(stderr, "\n") {
		l := strings.TrimSpace(line)
		if m := failedToRun.FindStringSubmatch(l); m != nil {
			return m[1], true
		}
		for _, suffix := range []string{": command not found", ": not found", ": Permission denied", ": No such file or directory"} {
			if !strings.HasSuffix(l, suffix) {
				continue
			}
			parts := strings.Split(strings.TrimSuffix(l, suffix), ": ")
			if tool := strings.TrimSpace(parts[len(parts)-1]); tool != "" && !strings.ContainsAny(tool, " \t") {
				return tool, true
			}
		}
	}
	return "", false
}

// Bounds of what an exec reads back: the largest answer the plugin expects is a node's socket
// tables (about 150 bytes a socket); anything past the bound ends the stream.
const (
	DefaultMaxOutput = 8 << 20
	MaxStderr        = 64 << 10
)

// errOutputTooLarge ends an exec stream that went past its bound.
var errOutputTooLarge = errors.New("exec output past its bound")

// cappedBuffer keeps at most max bytes; more ends the stream (the remote command is then
// killed by the guard, or when the stream closes). The buffer is a field, not embedded: an
// embedded bytes.Buffer would lend its ReadFrom to io.Copy, bypassing the cap. Writes come from
// the stream's goroutines, which can outlive the stream's return once the cap cancelled it.
type cappedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	max    int
	full   bool
	sealed bool
	// over is called once the bound is passed (it ends the stream).
	over func()
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sealed {
		return 0, errOutputTooLarge
	}
	if c.max > 0 && c.buf.Len()+len(p) > c.max {
		if !c.full && c.over != nil {
			c.over()
		}
		c.full = true
		if room := c.max - c.buf.Len(); room > 0 {
			c.buf.Write(p[:room])
		}
		return 0, errOutputTooLarge
	}
	return c.buf.Write(p)
}

// seal ends the buffer: later writes are refused, and what it holds is returned as a copy with
// whether the bound was passed.
func (c *cappedBuffer) seal() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
	return bytes.Clone(c.buf.Bytes()), c.full
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
