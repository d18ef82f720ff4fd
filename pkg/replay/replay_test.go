package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

const token = "t0ken-that-must-never-be-recorded"

// apiServer is a loopback API server that answers a Secret, a ConfigMap and a Pod, and
// insists on the bearer token.
func apiServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Warning", `299 - "spec.externalIPs is deprecated"`)
		var obj any
		switch r.URL.Path {
		case "/api/v1/namespaces/app/secrets/tls":
			obj = corev1.Secret{TypeMeta: metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: "app"},
				Data: map[string][]byte{"tls.key": []byte("PRIVATE KEY MATERIAL")}, StringData: map[string]string{"password": "hunter2hunter2"}}
		case "/api/v1/namespaces/app/pods/web":
			obj = corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
				Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"password":"hunter2hunter2"}`}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2hunter2"}, {Name: "MODE", Value: "fast"}}}}}}
		default:
			w.WriteHeader(http.StatusNotFound)
			obj = metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Reason: metav1.StatusReasonNotFound, Code: 404}
		}
		_ = json.NewEncoder(w).Encode(obj)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRecordingKeepsNoSecretDataNoTokenAndReplaysTheAnswers(t *testing.T) {
	srv := apiServer(t)
	rec := NewRecorder("doctor", "test")
	cfg := &rest.Config{Host: srv.URL, BearerToken: token, WrapTransport: rec.WrapTransport, WarningHandler: rest.NoWarnings{}}
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	sec, err := cs.CoreV1().Secrets("app").Get(ctx, "tls", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "PRIVATE KEY MATERIAL", string(sec.Data["tls.key"]), "the run itself sees the real answer")
	pod, err := cs.CoreV1().Pods("app").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps("app").Get(ctx, "missing", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err))

	var buf bytes.Buffer
	require.NoError(t, rec.Bundle().Write(&buf))
	zr, err := gzip.NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	for _, secret := range []string{token, "Bearer", "hunter2hunter2", "PRIVATE KEY", "UFJJVkFURSBLRVkgTUFURVJJQUw", "managedFields"} {
		assert.NotContains(t, string(plain), secret)
	}
	assert.Contains(t, string(plain), `"tls.key"`, "a Secret's keys stay, their values go")
	assert.Contains(t, string(plain), `"fast"`, "an ordinary variable's value stays")

	b, err := Read(bytes.NewReader(buf.Bytes()), "bundle")
	require.NoError(t, err)
	play := NewPlayer(b)
	replayed, err := kubernetes.NewForConfig(&rest.Config{Host: "https://replay.invalid", Transport: play.Transport(), WarningHandler: rest.NoWarnings{}})
	require.NoError(t, err)
	pod2, err := replayed.CoreV1().Pods("app").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, pod.Spec.Containers[0].Env[1], pod2.Spec.Containers[0].Env[1])
	assert.Equal(t, Redacted, pod2.Spec.Containers[0].Env[0].Value)
	_, err = replayed.CoreV1().ConfigMaps("app").Get(ctx, "missing", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a recorded 404 replays as one: %v", err)
	_, err = replayed.CoreV1().Services("app").Get(ctx, "never-asked", metav1.GetOptions{})
	var nr *NotRecordedError
	assert.ErrorAs(t, err, &nr, "a question the bundle does not hold is an error, never an answer")
}

func TestTypedErrorsSurviveTheBundle(t *testing.T) {
	target := netip.MustParseAddrPort("10.0.10.13:53")
	cases := map[string]struct {
		err   error
		check func(error) bool
	}{
		"no answer": {&probe.NoAnswerError{Target: target, Network: "udp", What: "A x.", Within: time.Second, Err: errors.New("i/o timeout")}, probe.IsNoAnswer},
		"refused":   {fmt.Errorf("dial: %w", syscall.ECONNREFUSED), probe.IsRefused},
		"exit": {&podexec.ExitError{Code: 3, Stderr: "boom"}, func(err error) bool {
			code, ok := podexec.ExitCode(err)
			return ok && code == 3
		}},
		"tool missing": {&podexec.ToolMissingError{Tool: "sysctl"}, podexec.IsToolMissing},
		"forbidden":    {apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("no")), apierrors.IsForbidden},
		"deadline":     {fmt.Errorf("exec: %w", context.DeadlineExceeded), func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		"lookup": {&net.DNSError{Err: "no such host", Name: "x.example.org", IsNotFound: true}, func(err error) bool {
			var d *net.DNSError
			return errors.As(err, &d) && d.IsNotFound
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(failureOf(c.err))
			require.NoError(t, err)
			var f Failure
			require.NoError(t, json.Unmarshal(raw, &f))
			got := f.Err()
			assert.True(t, c.check(got), "%T %v", got, got)
			assert.Contains(t, got.Error(), strings.SplitN(c.err.Error(), ":", 2)[0])
		})
	}
}

func TestPlayerAnswersInOrderThenRepeatsTheLast(t *testing.T) {
	b := &Bundle{Execs: []Exec{
		{Namespace: "h", Pod: "lanaccess-0a1b2c3d-2-node-1", Command: []string{"cat", "x"}, Stdout: "first"},
		{Namespace: "h", Pod: "lanaccess-0a1b2c3d-2-node-1", Command: []string{"cat", "x"}, Stdout: "second"},
	}}
	ex := NewPlayer(b).Executor()
	// The helper pod's sequence number follows the order nodes were reached: keys leave it out.
	ref := podexec.PodRef{Namespace: "h", Name: "lanaccess-0a1b2c3d-7-node-1"}
	for _, want := range []string{"first", "second", "second"} {
		out, _, err := ex.Exec(context.Background(), ref, "", []string{"cat", "x"}, nil)
		require.NoError(t, err)
		assert.Equal(t, want, string(out))
	}
	_, _, err := ex.Exec(context.Background(), ref, "", []string{"cat", "y"}, nil)
	assert.ErrorIs(t, err, errNotRecorded)
}

// fakeDNS answers every question with one A record.
type fakeDNS struct{}

func (fakeDNS) Query(_ context.Context, server netip.AddrPort, name string, qtype uint16, network string) (*probe.DNSReply, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.Response, m.Authoritative = true, true
	rr, err := dns.NewRR(dns.Fqdn(name) + " 30 IN A 10.0.10.11")
	if err != nil {
		return nil, err
	}
	m.Answer = append(m.Answer, rr)
	return &probe.DNSReply{Server: server, Network: network, Attempts: 1, RTT: 3 * time.Millisecond, Msg: m}, nil
}

func TestDNSRepliesReplayUnderTheRandomLabelAsked(t *testing.T) {
	rec := NewRecorder("doctor", "test")
	server := netip.MustParseAddrPort("10.0.10.11:53")
	_, err := rec.DNS(fakeDNS{}).Query(context.Background(), server, "lanaccess-probe-abcd1234.apps.example.com", dns.TypeA, "udp")
	require.NoError(t, err)
	reply, err := NewPlayer(rec.Bundle()).DNS().Query(context.Background(), server, "lanaccess-probe-zzzz9999.apps.example.com", dns.TypeA, "udp")
	require.NoError(t, err)
	assert.Equal(t, "lanaccess-probe-zzzz9999.apps.example.com.", reply.Msg.Answer[0].Header().Name)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.10.11")}, reply.Addrs())
	assert.True(t, reply.Authoritative())
	assert.Equal(t, 3*time.Millisecond, reply.RTT)
}
