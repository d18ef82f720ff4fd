package kube

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestACollectionGETIsReadAsAList(t *testing.T) {
	for raw, want := range map[string]*AccessQuestion{
		"/api/v1/services?limit=500":                            {Verb: "list", Resource: "services"},
		"/api/v1/namespaces":                                    {Verb: "list", Resource: "namespaces"},
		"/api/v1/namespaces/traefik/pods?limit=500":             {Verb: "list", Resource: "pods", Namespace: "traefik"},
		"/apis/apps/v1/daemonsets":                              {Verb: "list", Group: "apps", Resource: "daemonsets"},
		"/apis/traefik.io/v1alpha1/namespaces/t/ingressroutes":  {Verb: "list", Group: "traefik.io", Resource: "ingressroutes", Namespace: "t"},
		"/api/v1/namespaces/traefik":                            nil, // a named object
		"/api/v1/nodes/node-1":                                  nil,
		"/api/v1/namespaces/vpn/pods/p/exec":                    nil,
		"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1":     nil, // narrowed
		"/api/v1/namespaces/t/pods?labelSelector=app%3Dtraefik": nil,
		"/api/v1/services?watch=true":                           nil,
		"/k8s/clusters/c-1/api/v1/services":                     nil, // a prefix not understood
		"/version":                                              nil,
		"/apis":                                                 nil,
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		q, ok := listRequest(u)
		if want == nil {
			assert.False(t, ok, "%s read as %+v", raw, q)
			continue
		}
		assert.True(t, ok, raw)
		assert.Equal(t, *want, q, raw)
	}
}

// Only a list the server answered proves the permission: a 403 proves nothing.
func TestOnlyAnsweredListsAreRecorded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/nodes" {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer srv.Close()
	var log ReadLog
	c := &http.Client{Transport: log.Wrap(http.DefaultTransport)}
	for _, p := range []string{"/api/v1/services", "/api/v1/nodes"} {
		resp, err := c.Get(srv.URL + p)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	assert.True(t, log.Listed(AccessQuestion{Verb: "list", Resource: "services"}))
	assert.False(t, log.Listed(AccessQuestion{Verb: "list", Resource: "nodes"}))
	assert.False(t, (*ReadLog)(nil).Listed(AccessQuestion{Verb: "list", Resource: "services"}))
}
