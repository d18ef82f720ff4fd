// Package fwdauth is the lab's forward-auth server (`lab serve-auth`, the pod of image
// forward-auth): what oauth2-proxy or Authelia answer Traefik's forwardAuth middleware for an
// anonymous browser. It answers every request with a 302 to the identity provider, carrying the
// original URL that Traefik passes in X-Forwarded-Proto/-Host/-Uri, unless its answers file
// names another answer for the request's X-Forwarded-Host: the lab's faults make it answer as
// an auth server that writes its Location as a path, and the real Traefik in front of it decides
// what the browser gets.
package fwdauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
)

// IdentityProviderStart is where the lab's auth server sends an anonymous browser.
const IdentityProviderStart = "https://auth.example.com/oauth2/start"

// Answer is what the auth server answers for one host.
type Answer struct {
	Status   int    `json:"status"`
	Location string `json:"location,omitempty"`
}

// Answers maps an X-Forwarded-Host to the answer for it: the content of the answers file.
type Answers map[string]Answer

// ReadAnswers reads an answers file; a missing or empty file is no special answer.
func ReadAnswers(path string) (Answers, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) || (err == nil && len(b) == 0) {
		return Answers{}, nil
	}
	if err != nil {
		return nil, err
	}
	var a Answers
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Handler answers forwardAuth requests, reading the answers file at each request (the file is
// a ConfigMap volume that the lab rewrites when the ConfigMap changes).
func Handler(answersFile string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answers, err := ReadAnswers(answersFile)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		host := r.Header.Get("X-Forwarded-Host")
		a, ok := answers[host]
		if !ok {
			a = Answer{Status: http.StatusFound, Location: IdentityProviderStart + "?rd=" + url.QueryEscape(originalURL(r))}
		}
		if a.Location != "" {
			w.Header().Set("Location", a.Location)
		}
		w.WriteHeader(a.Status)
	})
}

// originalURL is the browser's URL as Traefik's forwardAuth describes it to the auth server.
func originalURL(r *http.Request) string {
	proto := r.Header.Get("X-Forwarded-Proto")
	if proto == "" {
		proto = "http"
	}
	return proto + "://" + r.Header.Get("X-Forwarded-Host") + r.Header.Get("X-Forwarded-Uri")
}
