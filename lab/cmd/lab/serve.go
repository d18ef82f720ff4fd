package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/fwdauth"
)

// newServeHTTPCommand is the HTTP responder of the lab's web pod and of the internet (what
// hashicorp/http-echo does: answer every request with a fixed text).
func newServeHTTPCommand() *cobra.Command {
	var listen, text string
	cmd := &cobra.Command{
		Use:    "serve-http",
		Short:  "Answer every HTTP request with a fixed text",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv := &http.Server{
				Addr:              listen,
				ReadHeaderTimeout: 5 * time.Second,
				Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "text/plain; charset=utf-8")
					// A client that went away is no error of the server's.
					_, _ = fmt.Fprintln(w, text)
				}),
			}
			go func() {
				<-cmd.Context().Done()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = srv.Shutdown(ctx)
			}()
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ":5678", "address to listen on")
	cmd.Flags().StringVar(&text, "text", "hello", "response body")
	return cmd
}

// newServeAuthCommand is the lab's forward-auth server (package fwdauth): the pod of image
// forward-auth, asked by Traefik's forwardAuth middleware.
func newServeAuthCommand() *cobra.Command {
	var listen []string
	var answers string
	cmd := &cobra.Command{
		Use:    "serve-auth",
		Short:  "Answer forwardAuth requests with a 302 to the identity provider (or the answers file's answer)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			errs := make(chan error, len(listen))
			srvs := make([]*http.Server, 0, len(listen))
			for _, addr := range listen {
				srv := &http.Server{Addr: addr, ReadHeaderTimeout: 5 * time.Second, Handler: fwdauth.Handler(answers)}
				srvs = append(srvs, srv)
				go func() { errs <- srv.ListenAndServe() }()
			}
			select {
			case err := <-errs:
				return err
			case <-cmd.Context().Done():
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			for _, srv := range srvs {
				_ = srv.Shutdown(ctx)
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&listen, "listen", []string{":4180"}, "addresses to listen on")
	cmd.Flags().StringVar(&answers, "answers", "", "answers file: JSON object of X-Forwarded-Host -> {status, location}")
	return cmd
}
