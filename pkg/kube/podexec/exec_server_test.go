package podexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// execServer is a stand-in for the API server's pods/exec endpoint that runs the command on
// this machine, the way a container runtime would: the process is NOT tied to the stream, so a
// client that goes away leaves it running unless the command guards itself.
type execServer struct {
	t *testing.T
	// websocket false refuses the WebSocket upgrade, as an old API server or a proxy does.
	websocket bool
	// forbid answers 403 like RBAC denying pods/exec.
	forbid bool
	// path replaces PATH for the commands (an image with few tools).
	path string
	// plainExitErrors reports non-zero exits as kwok does: an internal error ending in
	// "exit status N", not the NonZeroExitCode status.
	plainExitErrors bool

	mu        sync.Mutex
	protocols []string
	commands  [][]string
	exited    chan *os.ProcessState
}

func newExecServer(t *testing.T, websocket bool) (*execServer, *rest.Config) {
	t.Helper()
	s := &execServer{t: t, websocket: websocket, exited: make(chan *os.ProcessState, 8)}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, &rest.Config{Host: srv.URL}
}

func (s *execServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !strings.HasSuffix(req.URL.Path, "/exec") {
		http.NotFound(w, req)
		return
	}
	if s.forbid {
		writeStatus(w, apierrors.NewForbidden(corev1.Resource("pods/exec"), "p", errors.New(`User "viewer" cannot create resource "pods/exec"`)))
		return
	}
	q := req.URL.Query()
	cmd := q["command"]
	if wsstream.IsWebSocketRequest(req) {
		if !s.websocket {
			writeStatus(w, apierrors.NewBadRequest("websocket upgrade not supported"))
			return
		}
		s.serveWebSocket(w, req, cmd)
		return
	}
	s.serveSPDY(w, req, cmd)
}

func writeStatus(w http.ResponseWriter, se *apierrors.StatusError) {
	st := se.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

func (s *execServer) record(protocol string, cmd []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.protocols = append(s.protocols, protocol)
	s.commands = append(s.commands, cmd)
}

func (s *execServer) serveWebSocket(w http.ResponseWriter, req *http.Request, cmd []string) {
	channels := []wsstream.ChannelType{wsstream.ReadChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.IgnoreChannel}
	if req.URL.Query().Get("stdin") != "true" {
		channels[0] = wsstream.IgnoreChannel
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		remotecommand.StreamProtocolV5Name: {Binary: true, Channels: channels},
	})
	conn.SetIdleTimeout(time.Minute)
	_, streams, err := conn.Open(w, req)
	if err != nil {
		s.t.Errorf("websocket open: %v", err)
		return
	}
	defer func() { _ = conn.Close() }()
	_, _ = streams[remotecommand.StreamStdOut].Write(nil) // tells the client the streams exist
	s.record(remotecommand.StreamProtocolV5Name, cmd)
	var stdin io.Reader
	if channels[0] == wsstream.ReadChannel {
		stdin = streams[remotecommand.StreamStdIn]
	}
	s.run(cmd, stdin, streams[remotecommand.StreamStdOut], streams[remotecommand.StreamStdErr], streams[remotecommand.StreamErr])
}

func (s *execServer) serveSPDY(w http.ResponseWriter, req *http.Request, cmd []string) {
	if _, err := httpstream.Handshake(req, w, []string{remotecommand.StreamProtocolV4Name}); err != nil {
		return
	}
	type streamAndReply struct {
		httpstream.Stream
		replySent <-chan struct{}
	}
	streamCh := make(chan streamAndReply)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(st httpstream.Stream, replySent <-chan struct{}) error {
		streamCh <- streamAndReply{Stream: st, replySent: replySent}
		return nil
	})
	if conn == nil {
		return
	}
	defer func() { _ = conn.Close() }()
	want := 3 // error, stdout, stderr
	if req.URL.Query().Get("stdin") == "true" {
		want++
	}
	var stdin io.Reader
	var stdout, stderr, errStream io.Writer
	for i := range want {
		select {
		case st := <-streamCh:
			<-st.replySent
			switch st.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				errStream = st
			case corev1.StreamTypeStdout:
				stdout = st
			case corev1.StreamTypeStderr:
				stderr = st
			case corev1.StreamTypeStdin:
				stdin = st
			}
		case <-time.After(10 * time.Second):
			s.t.Errorf("spdy: only %d of %d streams", i, want)
			return
		}
	}
	s.record(remotecommand.StreamProtocolV4Name, cmd)
	s.run(cmd, stdin, stdout, stderr, errStream)
}

// run starts cmd like a runtime: unrelated to the request's lifetime.
func (s *execServer) run(cmd []string, stdin io.Reader, stdout, stderr, errStream io.Writer) {
	c := exec.Command(cmd[0], cmd[1:]...)
	if s.path != "" {
		c.Env = []string{"PATH=" + s.path}
		if p, err := lookPathIn(cmd[0], s.path); err == nil {
			c.Path = p
		} else {
			c.Err = nil
			c.Path = "/nonexistent/" + cmd[0]
		}
	}
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	if err := c.Start(); err != nil {
		// What containerd reports when the image lacks the program.
		st := apierrors.NewInternalError(fmt.Errorf("OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown", cmd[0])).Status()
		b, _ := json.Marshal(st)
		_, _ = errStream.Write(b)
		return
	}
	err := c.Wait()
	s.exited <- c.ProcessState
	var st metav1.Status
	var ee *exec.ExitError
	switch {
	case err == nil:
		st = metav1.Status{Status: metav1.StatusSuccess}
	case errors.As(err, &ee) && s.plainExitErrors:
		st = apierrors.NewInternalError(fmt.Errorf("error executing command in container: cmd wait: %s: %w", strings.Join(cmd, " "), err)).Status()
	case errors.As(err, &ee):
		code := ee.ExitCode()
		if code < 0 { // killed by a signal: the runtime reports 128+signal
			code = 137
		}
		st = metav1.Status{Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: fmt.Sprint(code)}}}}
	default:
		st = apierrors.NewInternalError(err).Status()
	}
	b, _ := json.Marshal(st)
	_, _ = errStream.Write(b)
}

func lookPathIn(name, dir string) (string, error) {
	p := dir + "/" + name
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p, nil
	}
	return "", os.ErrNotExist
}
