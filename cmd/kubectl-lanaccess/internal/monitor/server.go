package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/net/netutil"
)

// Handler serves /metrics (Prometheus text or OpenMetrics, as the scraper asks) and /healthz
// (200 while runs keep ending on time, 503 otherwise, with the run count). /healthz says no
// more: whoever reaches it may not read the metrics, and a run's error holds the cluster's
// URL and the API server's text (issue 23); the error is in the log and in
// lanaccess_monitor_runs_total{result}.
func (m *Monitor) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.metrics.reg, promhttp.HandlerOpts{
		Registry:            m.metrics.reg,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, runs, last, _ := m.health(time.Now())
		body := map[string]any{"status": "ok", "runs": runs}
		if !last.IsZero() {
			body["lastRunEnd"] = last.UTC().Format(time.RFC3339Nano)
		}
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			body["status"] = "stalled: no run ended within two intervals and a run timeout"
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(body) // the client went away: nothing to do
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("kubectl lanaccess monitor\n  /metrics  Prometheus metrics\n  /healthz  liveness of the run loop\n"))
	})
	return mux
}

// MaxConnections bounds the connections served at once: a scraper needs one, a dashboard a few;
// more wait in the kernel's backlog instead of each holding a goroutine and its buffers.
const MaxConnections = 32

// Serve runs the checks on their schedule and serves the handler on ln until ctx ends, then
// stops: the current run is cancelled (it records nothing), in-flight scrapes get up to five
// seconds to finish. TLS and basic auth come from Config.WebConfigFile, read by the exporter
// toolkit as every Prometheus exporter reads its --web.config.file (again at each connection,
// so that a renewed certificate or a changed password needs no restart).
func (m *Monitor) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(m.cfg.Log.Handler(), slog.LevelWarn),
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	served := make(chan error, 1)
	webConfig := m.cfg.WebConfigFile
	flags := &web.FlagConfig{WebConfigFile: &webConfig}
	go func() { served <- web.Serve(netutil.LimitListener(ln, MaxConnections), srv, flags, m.cfg.Log) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = errors.Join(err, srv.Shutdown(shutdown))
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
