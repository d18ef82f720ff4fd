//go:build lab

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/internal/roundtrip"
)

var ingressRouteTCPsGVR = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutetcps"}

// tcpVia opens a TCP connection to ip:port, sends an HTTP request for host and returns the
// status line the other end writes (through a TCP router: the backend's own answer).
func tcpVia(ip, port, host string) (string, error) {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), 3*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// An IngressRouteTCP HostSNI(`*`) on an extra entry point that a port of the proxy Service
// reaches: the real Traefik forwards the LAN's connections to the node addresses' 9000 to
// the auth server's Service with no forwardAuth on the way (the backend's own answer comes back), and
// doctor's LA107 says so (LA107-TCP-UDP-ROUTE) while LA102 leaves the port to it. Its printed
// fix, pasted, keeps 9000 inside the cluster: the node addresses' 9000 then refuses, and LA107
// passes for the route.
func TestLA107TCPRouteOnAnExtraPortAgreesWithTraefik(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	patchTraefik(t, func(c *corev1.Container) {
		c.Args = append(c.Args, "--entryPoints.tcpecho.address=:9000/tcp")
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "tcpecho", ContainerPort: 9000, Protocol: corev1.ProtocolTCP})
	}, func(p corev1.Pod) bool {
		return strings.Contains(strings.Join(p.Spec.Containers[0].Args, " "), "--entryPoints.tcpecho.address=:9000/tcp")
	})
	services := lab.Client.CoreV1().Services("traefik")
	svc, err := services.Get(ctx, "traefik", metav1.GetOptions{})
	require.NoError(t, err)
	origPorts := svc.Spec.Ports
	svc.Spec.Ports = append(append([]corev1.ServicePort{}, origPorts...),
		corev1.ServicePort{Name: "tcpecho", Port: 9000, TargetPort: intstr.FromString("tcpecho"), Protocol: corev1.ProtocolTCP})
	_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = services.Delete(context.Background(), "traefik-internal", metav1.DeleteOptions{})
		cur, err := services.Get(context.Background(), "traefik", metav1.GetOptions{})
		if err == nil {
			cur.Spec.Ports = origPorts
			_, err = services.Update(context.Background(), cur, metav1.UpdateOptions{})
		}
		assert.NoError(t, err)
		lab.WaitProxySynced(t)
	})
	// the backend is the lab's real auth server (lab serve-auth): it answers the raw request
	createTraefikObject(t, dc, ingressRouteTCPsGVR, "IngressRouteTCP", "auth", "echo", map[string]any{
		"entryPoints": []any{"tcpecho"},
		"routes":      []any{map[string]any{"match": "HostSNI(`*`)", "services": []any{map[string]any{"name": "oauth2-proxy", "port": int64(4180)}}}},
	})
	lab.WaitProxySynced(t)
	var status string
	eventually(t, 30*time.Second, func() error {
		status, err = tcpVia(proxyAddresses[0], "9000", "anything.example")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(status, "HTTP/1.1 2") && !strings.HasPrefix(status, "HTTP/1.1 3") {
			return fmt.Errorf("the node address's 9000 answers %q, want the backend's own answer", status)
		}
		return nil
	})

	r := doctor(t, "--only", "LA102,LA107", "--no-helpers")
	la107 := r.check(t, "LA107")
	var fix string
	for _, f := range la107.Findings {
		if f.Object == "IngressRouteTCP auth/echo" {
			assert.Equal(t, "LA107-TCP-UDP-ROUTE", f.Code, "%+v", f)
			assert.Contains(t, f.Message, "9000/TCP of Service traefik/traefik")
			fix = f.Remediation
		}
	}
	require.NotEmpty(t, fix, "LA107 names the TCP route: %+v", la107.Findings)
	for _, f := range r.check(t, "LA102").Findings {
		assert.NotEqual(t, "LA102-EXTRA-PORT", f.Code, "a port a TCP router serves is LA107's: %+v", f)
	}

	pasteKubectl(t, roundtrip.Alternatives(fix)[0])
	lab.WaitProxySynced(t)
	eventually(t, 30*time.Second, func() error {
		if s, err := tcpVia(proxyAddresses[0], "9000", "anything.example"); err == nil {
			return fmt.Errorf("the node address's 9000 still answers %q after the fix", s)
		}
		return nil
	})
	_, err = services.Get(ctx, "traefik-internal", metav1.GetOptions{})
	require.NoError(t, err, "the fix keeps 9000 on a Service inside the cluster")
	after := doctor(t, "--only", "LA107", "--no-helpers").check(t, "LA107")
	for _, f := range after.Findings {
		if f.Object == "IngressRouteTCP auth/echo" {
			assert.Equal(t, "LA107-NOT-ON-LAN", f.Code, "%+v", f)
		}
	}
	t.Logf("TCP route on 9000: Traefik answered %q from the LAN; LA107 %s -> %s; test %s", status, la107.Status, after.Status, time.Since(start))
}
