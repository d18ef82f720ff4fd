package labctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/fwdauth"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// ProbeHost is the application name the seed checks.
const ProbeHost = "grafana.apps.example.com"

// workloads must be available before the lab counts as up.
var workloads = []struct{ ns, name string }{
	{"kube-system", "coredns"}, {"traefik", "traefik"}, {"traefik", "lan-dns"},
	{"monitoring", "grafana"}, {"web", "web"}, {"vpn", "openvpn"}, {"auth", "forward-auth"},
}

// waitFor polls check every interval until it returns nil or timeout passes.
func waitFor(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		stepCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		last = check(stepCtx)
		cancel()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not ready after %s: %w", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func deploymentsAvailable(c kubernetes.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		var missing []string
		for _, w := range workloads {
			d, err := c.AppsV1().Deployments(w.ns).Get(ctx, w.name, metav1.GetOptions{})
			if err != nil {
				missing = append(missing, fmt.Sprintf("%s/%s: %v", w.ns, w.name, err))
				continue
			}
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			if d.Status.AvailableReplicas < want || d.Status.UpdatedReplicas < want {
				missing = append(missing, fmt.Sprintf("%s/%s %d/%d", w.ns, w.name, d.Status.AvailableReplicas, want))
			}
		}
		if len(missing) > 0 {
			return errors.New("deployments not available: " + strings.Join(missing, ", "))
		}
		return nil
	}
}

// zoneAnswers checks that every node address answers the probe host with the three addresses.
func zoneAnswers(l layout.Layout) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, n := range l.Nodes[:3] {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(ProbeHost), dns.TypeA)
			c := &dns.Client{Timeout: time.Second}
			r, _, err := c.ExchangeContext(ctx, m, net.JoinHostPort(n.LANIP, "53"))
			if err != nil {
				return fmt.Errorf("DNS %s on %s: %w", ProbeHost, n.LANIP, err)
			}
			if len(r.Answer) != 3 {
				return fmt.Errorf("DNS %s on %s: %d answers, want 3", ProbeHost, n.LANIP, len(r.Answer))
			}
		}
		return nil
	}
}

// proxyRedirects checks that the proxy answers the probe host with a 302 through a node
// address, with the lab CA verifying the certificate.
func proxyRedirects(l layout.Layout) func(context.Context) error {
	return func(ctx context.Context) error {
		caPEM, err := os.ReadFile(l.CAFile())
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		target := net.JoinHostPort(l.Nodes[0].LANIP, "443")
		client := &http.Client{
			Timeout: 2 * time.Second,
			Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: ProbeHost},
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, target)
				},
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+ProbeHost+"/", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			return fmt.Errorf("https://%s via %s answered %s, want 302", ProbeHost, target, resp.Status)
		}
		if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, fwdauth.IdentityProviderStart+"?") {
			return fmt.Errorf("https://%s via %s redirects to %q, want the identity provider %s", ProbeHost, target, loc, fwdauth.IdentityProviderStart)
		}
		return nil
	}
}

// tunnelUp checks that the laptop reaches the VPN server's tunnel address.
func tunnelUp(l layout.Layout) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := netns.Run(ctx, l.Laptop.NS, "ping", "-c", "1", "-W", "1", l.VPNServerTun)
		return err
	}
}
