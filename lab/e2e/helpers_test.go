//go:build lab

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const probeHost = "grafana.apps.example.com"

// query sends one DNS question to server:53 over proto ("udp" or "tcp").
func query(server, name string, qtype uint16, proto string) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: proto, Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, net.JoinHostPort(server, "53"))
	return r, err
}

func aRecords(r *dns.Msg) []string {
	var ips []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	return ips
}

// eventually retries check until it passes or timeout (for changes the lab applies
// asynchronously, like a CoreDNS reload).
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// httpsVia does curl --resolve: SNI and Host = host, TCP to ip:443, the lab CA, no redirect
// followed.
func httpsVia(host, ip string, timeout time.Duration) (*http.Response, error) {
	caPEM, err := os.ReadFile(lab.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(ip, "443"))
			},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Get("https://" + host + "/")
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	return resp, nil
}

// runningPods lists the Running pods of a selector.
func runningPods(t *testing.T, namespace, selector string) []corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := lab.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	require.NotEmpty(t, pods, "no running pod for %s in %s", selector, namespace)
	return pods
}

// httpFrom fetches url with curl from inside a lab namespace, bounded by timeout.
func httpFrom(namespace, url string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Second)
	defer cancel()
	return lab.Exec(ctx, namespace, "curl", "-s", "-m", fmt.Sprintf("%.1f", timeout.Seconds()), url)
}

// kubectl runs the lab's kubectl with the admin kubeconfig, bounded to a minute.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, lab.KubectlBin, append([]string{"--kubeconfig", lab.Kubeconfig}, args...)...).CombinedOutput()
	require.NoError(t, err, "kubectl %v: %s", args, out)
	return string(out)
}

// pasteKubectl runs a printed command line as a user pastes it: through bash, with the lab's
// kubectl on PATH and its kubeconfig.
func pasteKubectl(t *testing.T, line string) {
	t.Helper()
	bin := t.TempDir()
	require.NoError(t, os.Symlink(lab.KubectlBin, filepath.Join(bin, "kubectl")))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+lab.Kubeconfig)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the API server refuses the printed fix %q:\n%s", line, out)
}
