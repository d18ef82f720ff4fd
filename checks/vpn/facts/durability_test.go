package facts

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

func TestTheKubeletConfigurationIsReadThroughTheNodeProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/nodes/node-1/proxy/configz":
		case "/api/v1/nodes/node-3/proxy/configz":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"nodes \"node-3\" is forbidden: User \"viewer\" cannot get resource \"nodes/proxy\""}`))
			return
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		_, _ = w.Write([]byte(`{"kubeletconfig":{"allowedUnsafeSysctls":["net.ipv4.ip_forward"]}}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	tr := New(Seams{Client: clientgo.Wrap(cs)}, Options{})
	list, err := tr.kubeletAllowlist(t.Context(), "node-1")
	require.NoError(t, err)
	assert.Equal(t, []string{"net.ipv4.ip_forward"}, list)
	_, err = tr.kubeletAllowlist(t.Context(), "node-2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the kubelet of node node-2 does not serve /configz")
	_, err = tr.kubeletAllowlist(t.Context(), "node-3")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs get on nodes/proxy")
}
