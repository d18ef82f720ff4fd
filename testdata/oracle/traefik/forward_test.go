// Package traefik is the oracle for what Traefik's forwardAuth middleware gives a browser: it
// runs Traefik's own middleware (github.com/traefik/traefik/v3, pkg/middlewares/auth NewForward,
// built from the Go module proxy) in front of a loopback auth server, for every case of
// forwardauth.json, and asserts the browser gets exactly what the file says. kubectl-lanaccess's
// LA401 tests read the same file: their stand-in proxies answer what Traefik is proven to answer
// here. It is its own module so that the plugin's go.mod does not grow by Traefik's ~2,500
// packages (cold build about 30 minutes on 2 busy cores, seconds from the build cache).
package traefik

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/traefik/traefik/v3/pkg/config/dynamic"
	"github.com/traefik/traefik/v3/pkg/middlewares/auth"
)

type answer struct {
	Status   int    `json:"status"`
	Location string `json:"location"`
}

type forwardCase struct {
	Name        string          `json:"name"`
	ForwardAuth json.RawMessage `json:"forwardAuth"`
	PatchOf     string          `json:"patchOf"`
	Patch       json.RawMessage `json:"patch"`
	Auth        answer          `json:"auth"`
	Browser     answer          `json:"browser"`
}

func loadCases(t *testing.T) []forwardCase {
	t.Helper()
	data, err := os.ReadFile("forwardauth.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []forwardCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("forwardauth.json: %v", err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("forwardauth.json has no case")
	}
	return file.Cases
}

// forwardAuthOf is the case's Middleware forwardAuth: its own, or its patchOf case's with the
// merge patch applied to the whole Middleware, as the API server applies kubectl's --type=merge.
func forwardAuthOf(t *testing.T, cases []forwardCase, c forwardCase) json.RawMessage {
	t.Helper()
	if c.PatchOf == "" {
		return c.ForwardAuth
	}
	for _, base := range cases {
		if base.Name != c.PatchOf {
			continue
		}
		var mw, patch any
		if err := json.Unmarshal([]byte(`{"spec":{"forwardAuth":`+string(forwardAuthOf(t, cases, base))+`}}`), &mw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(c.Patch, &patch); err != nil {
			t.Fatalf("case %s: patch: %v", c.Name, err)
		}
		merged, err := json.Marshal(mergePatch(mw, patch).(map[string]any)["spec"].(map[string]any)["forwardAuth"])
		if err != nil {
			t.Fatal(err)
		}
		return merged
	}
	t.Fatalf("case %s: no case %s", c.Name, c.PatchOf)
	return nil
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// dialStandIns makes Go's default transport, which Traefik's forwardAuth client uses when the
// middleware has no TLS options (forward.go NewForward), reach the loopback auth server for the
// cluster names of the cases, and nothing else (no proxy from the environment either).
func dialStandIns(t *testing.T, to string) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport)
	dial, proxy := tr.DialContext, tr.Proxy
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr.Proxy = nil
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch addr {
		case "authelia.auth.svc.cluster.local:9091", "oauth2-proxy.auth.svc.cluster.local:4180":
			return d.DialContext(ctx, network, to)
		}
		return nil, fmt.Errorf("the oracle dials only its auth server, not %s", addr)
	}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		tr.DialContext, tr.Proxy = dial, proxy
	})
}

// TestTraefikForwardAuthGivesTheBrowserWhatTheCasesSay: the auth server answers the case's
// status and Location; Traefik's forwardAuth middleware, configured with the case's Middleware
// forwardAuth, answers the browser; the browser's status and Location are the case's.
func TestTraefikForwardAuthGivesTheBrowserWhatTheCasesSay(t *testing.T) {
	cases := loadCases(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var asked *http.Request
			authSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked = r
				if c.Auth.Location != "" {
					w.Header().Set("Location", c.Auth.Location)
				}
				w.WriteHeader(c.Auth.Status)
			}))
			t.Cleanup(authSrv.Close)
			dialStandIns(t, authSrv.Listener.Addr().String())

			var cfg dynamic.ForwardAuth
			raw := forwardAuthOf(t, cases, c)
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatalf("forwardAuth %s does not read as Traefik's dynamic configuration: %v", raw, err)
			}
			app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
			mw, err := auth.NewForward(context.Background(), app, cfg, "monitoring-forward-auth@kubernetescrd")
			if err != nil {
				t.Fatalf("Traefik refuses the middleware: %v", err)
			}
			proxy := httptest.NewServer(mw)
			t.Cleanup(proxy.Close)

			req, err := http.NewRequest(http.MethodGet, proxy.URL+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "grafana.apps.example.com"
			browser := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{},
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := browser.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if asked == nil {
				t.Fatal("Traefik did not ask the auth server")
			}
			if got := resp.StatusCode; got != c.Browser.Status {
				t.Errorf("status: Traefik gave %d, the case says %d", got, c.Browser.Status)
			}
			if got := resp.Header.Get("Location"); got != c.Browser.Location {
				t.Errorf("Location: Traefik gave %q, the case says %q", got, c.Browser.Location)
			}
			if u, err := url.Parse(cfg.Address); err == nil && asked.Host != u.Host {
				t.Errorf("Traefik asked the auth server for Host %q, not the address's %q", asked.Host, u.Host)
			}
		})
	}
}
