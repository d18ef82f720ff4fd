package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Every group asks its own API path, through the one HTTP client and with cfg's user agent;
// discovery asks /version and /apis as JSON.
func TestClientsetGroups(t *testing.T) {
	var (
		mu      sync.Mutex
		paths   []string
		agent   string
		accepts = map[string]string{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		agent = r.UserAgent()
		accepts[r.URL.Path] = r.Header.Get("Accept")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/version":
			_, _ = w.Write([]byte(`{"gitVersion":"v1.37.2"}`))
		case "/apis":
			_, _ = w.Write([]byte(`{"kind":"APIGroupList","groups":[{"name":"traefik.io","versions":[{"groupVersion":"traefik.io/v1alpha1","version":"v1alpha1"}]}]}`))
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	defer srv.Close()
	cs, err := NewForConfig(&rest.Config{Host: srv.URL, UserAgent: "lanaccess-test", QPS: 50, Burst: 100})
	require.NoError(t, err)
	ctx, opts := context.Background(), metav1.ListOptions{}
	v, err := cs.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", v.GitVersion)
	groups, err := cs.Discovery().ServerGroups()
	require.NoError(t, err)
	require.Len(t, groups.Groups, 1)
	assert.Equal(t, "traefik.io/v1alpha1", groups.Groups[0].Versions[0].GroupVersion)
	for _, call := range []func() error{
		func() error {
			_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, opts)
			return err
		},
		func() error {
			_, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "p", metav1.GetOptions{})
			return err
		},
		func() error { _, err := cs.AppsV1().Deployments("ns").List(ctx, opts); return err },
		func() error { _, err := cs.AppsV1().ReplicaSets("ns").Get(ctx, "rs", metav1.GetOptions{}); return err },
		func() error {
			_, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{}, metav1.CreateOptions{})
			return err
		},
		func() error { _, err := cs.CoreV1().Pods("ns").List(ctx, opts); return err },
		func() error { return cs.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}) },
		func() error { _, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); return err },
		func() error { _, err := cs.CoreV1().Namespaces().List(ctx, opts); return err },
		func() error { _, err := cs.DiscoveryV1().EndpointSlices("ns").List(ctx, opts); return err },
		func() error { _, err := cs.NetworkingV1().Ingresses("ns").List(ctx, opts); return err },
		func() error { _, err := cs.NetworkingV1().ServiceCIDRs().List(ctx, opts); return err },
		func() error { _, err := cs.PolicyV1().PodDisruptionBudgets("ns").List(ctx, opts); return err },
	} {
		require.NoError(t, call())
	}
	assert.Equal(t, []string{
		"GET /version",
		"GET /apis",
		"GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
		"GET /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/p",
		"GET /apis/apps/v1/namespaces/ns/deployments",
		"GET /apis/apps/v1/namespaces/ns/replicasets/rs",
		"POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		"POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
		"GET /api/v1/namespaces/ns/pods",
		"DELETE /api/v1/namespaces/ns/pods/p",
		"GET /api/v1/nodes/n1",
		"GET /api/v1/namespaces",
		"GET /apis/discovery.k8s.io/v1/namespaces/ns/endpointslices",
		"GET /apis/networking.k8s.io/v1/namespaces/ns/ingresses",
		"GET /apis/networking.k8s.io/v1/servicecidrs",
		"GET /apis/policy/v1/namespaces/ns/poddisruptionbudgets",
	}, paths)
	assert.Equal(t, "lanaccess-test", agent)
	assert.Equal(t, "application/json", accepts["/apis"])
	assert.Equal(t, "application/json", accepts["/version"])
}

// A typed read asks protobuf first, as client-go's generated clients do, and decodes the
// answer through Scheme(); a list's options travel as query parameters (ParameterCodec()).
func TestClientsetProtobufAndParameters(t *testing.T) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	var accept, query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept, query = r.Header.Get("Accept"), r.URL.RawQuery
		info, ok := runtime.SerializerInfoForMediaType(Codecs().SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		require.True(t, ok)
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		require.NoError(t, Codecs().EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(pod, w))
	}))
	defer srv.Close()
	cs, err := NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	got, err := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{ResourceVersion: "7"})
	require.NoError(t, err)
	assert.Equal(t, "p", got.Name)
	assert.True(t, strings.HasPrefix(accept, runtime.ContentTypeProtobuf), accept)
	assert.Equal(t, "resourceVersion=7", query)
}

// A discovery answer is read up to MaxDiscoveryBytes: a hostile or broken server streaming
// more is an error, not unbounded memory.
func TestDiscoveryBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"groups":[`))
		chunk := []byte(strings.Repeat(`{"name":"x"},`, 4096))
		for written := 0; written <= MaxDiscoveryBytes; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	cs, err := NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	_, err = cs.Discovery().ServerGroups()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GET /apis: answer larger than 8 MiB")
}

// An error status is the API's error (so apierrors.IsForbidden works), not a decode error.
func TestDiscoveryErrorStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden: /version"}`))
	}))
	defer srv.Close()
	cs, err := NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	_, err = cs.Discovery().ServerVersion()
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
}
