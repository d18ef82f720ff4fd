package kube

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// ReadLog records the LIST requests the API server answered with 200 OK: each proves that the
// user may list that resource there, so LA001 need not ask. A list narrowed by a label or
// field selector proves nothing about an unnarrowed one (an authorizer may judge selectors),
// and neither does a request under a path prefix this parser does not know: those are not
// recorded, and LA001 asks.
type ReadLog struct {
	mu     sync.Mutex
	listed map[AccessQuestion]bool
}

// Wrap is a transport.WrapperFunc (rest.Config.Wrap) that records into l.
func (l *ReadLog) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &readLogTransport{next: rt, log: l}
}

// Listed reports whether a request of this run proved q (a list, in q.Namespace or across all
// namespaces when it is "").
func (l *ReadLog) Listed(q AccessQuestion) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.listed[q]
}

type readLogTransport struct {
	next http.RoundTripper
	log  *ReadLog
}

func (t *readLogTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusOK && req.Method == http.MethodGet {
		if q, ok := listRequest(req.URL); ok {
			t.log.mu.Lock()
			if t.log.listed == nil {
				t.log.listed = map[AccessQuestion]bool{}
			}
			t.log.listed[q] = true
			t.log.mu.Unlock()
		}
	}
	return resp, err
}

// WrappedRoundTripper is the transport t wraps (client-go's utilnet.RoundTripperWrapper, which
// its connection and TLS-cache helpers unwrap).
func (t *readLogTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// listRequest reads a collection GET of the Kubernetes API (/api/v1/[namespaces/NS/]RESOURCE,
// /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE) without selectors and not a watch.
func listRequest(u *url.URL) (AccessQuestion, bool) {
	q := u.Query()
	if q.Has("labelSelector") || q.Has("fieldSelector") || q.Get("watch") == "true" || q.Get("watch") == "1" {
		return AccessQuestion{}, false
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api" && parts[1] == "v1":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, rest = parts[1], parts[3:]
	default:
		return AccessQuestion{}, false
	}
	ns := ""
	if len(rest) == 3 && rest[0] == "namespaces" {
		ns, rest = rest[1], rest[2:]
	}
	if len(rest) != 1 || rest[0] == "" {
		return AccessQuestion{}, false // a named object or a subresource
	}
	return AccessQuestion{Verb: "list", Group: group, Resource: rest[0], Namespace: ns}, true
}
