// Package kubeletshim serves a lab node's kubelet port in front of the node's kwok. It answers
// exec itself, running the command in the pod's own namespaces as a container runtime does: the
// network namespace of the pod's sandbox (its node's for a hostNetwork pod), and the pod's
// hostPath volumes at their mount paths. kwok cannot: v0.8.0 runs every exec as a child of its
// own process, in its namespaces (pkg/kwok/server/debugging_exec.go, ExecInContainer), and its
// Exec API offers only a working directory, environment variables and a user
// (pkg/apis/v1alpha1/exec_types.go, ExecTargetLocal). Everything else (logs, port-forward,
// configz, healthz) is proxied to kwok, which listens on the node's loopback.
package kubeletshim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// Config is one node's shim.
type Config struct {
	Layout layout.Layout
	Node   layout.Node
	// Listen is the kubelet address the API server dials (the node's LAN address, kubelet port).
	Listen string
	// Upstream is kwok's own address (plain HTTP on the node's loopback).
	Upstream string
	// CertFile and KeyFile are the node's kubelet serving certificate; ClientCAFile verifies
	// the API server's kubelet client certificate.
	CertFile, KeyFile, ClientCAFile string
	// Kubeconfig reads the pods the shim execs into.
	Kubeconfig string
	Log        *log.Logger
}

// Run serves until ctx ends.
func Run(ctx context.Context, c Config) error {
	up, err := url.Parse(c.Upstream)
	if err != nil {
		return fmt.Errorf("upstream %q: %w", c.Upstream, err)
	}
	caPEM, err := os.ReadFile(c.ClientCAFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s holds no certificate", c.ClientCAFile)
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(scratchRoot(c.Layout), 0o755); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/exec/", &execHandler{cfg: c, client: client})
	mux.Handle("/", httputil.NewSingleHostReverseProxy(up))
	srv := &http.Server{
		Addr:              c.Listen,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          c.Log,
		// Only the API server talks to a kubelet: it must show a certificate of the lab's CA.
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	c.Log.Printf("kubelet shim of %s on %s (exec here, the rest to kwok at %s)", c.Node.NS, c.Listen, c.Upstream)
	if err := srv.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
