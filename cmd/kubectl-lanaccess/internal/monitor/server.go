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
)

// Handler serves /metrics (Prometheus text or OpenMetrics, as the scraper asks) and /healthz
// (200 while runs keep ending on time, 503 otherwise, with the run count and the last error).
func (m *Monitor) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.metrics.reg, promhttp.HandlerOpts{
		Registry:            m.metrics.reg,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, runs, last, lastErr := m.health(time.Now())
		body := map[string]any{"status": "ok", "runs": runs}
		if !last.IsZero() {
			body["lastRunEnd"] = last.UTC().Format(time.RFC3339Nano)
		}
		if lastErr != nil {
			body["lastRunError"] = clip(lastErr.Error(), 1000)
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

// Serve runs the checks on their schedule and serves the handler on ln until ctx ends, then
// stops: the current run is cancelled (it records nothing), in-flight scrapes get up to five
// seconds to finish.
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
	go func() { served <- srv.Serve(ln) }()
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
