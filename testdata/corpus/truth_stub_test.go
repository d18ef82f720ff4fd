//go:build corpus

package corpus

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/internal/corednsrun"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAPI serves the case's Services, EndpointSlices and Namespaces to the kubernetes plugin:
// lists as JSON, watches that stay open without events. A cluster always has the default
// kubernetes Service; it is added when the case does not list it.
type fakeAPI struct {
	srv *http.Server
	URL string
}

func startFakeAPI(c *corpusCase) (*fakeAPI, error) {
	svcs := c.services()
	slices := c.endpointSlices()
	nss := c.namespaces()
	hasKubernetes := false
	for _, s := range svcs {
		if s.Namespace == "default" && s.Name == "kubernetes" {
			hasKubernetes = true
		}
	}
	if !hasKubernetes {
		ip := "10.96.0.1"
		for _, s := range svcs {
			if strings.HasPrefix(s.Spec.ClusterIP, "10.43.") {
				ip = "10.43.0.1" // k3s's service CIDR
			}
		}
		svcs = append(svcs, corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}},
		})
		ready := true
		port, name, proto := int32(6443), "https", corev1.ProtocolTCP
		slices = append(slices, discoveryv1.EndpointSlice{
			TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", Labels: map[string]string{"kubernetes.io/service-name": "kubernetes"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.10.10"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
		})
	}
	hasDefault := false
	for _, n := range nss {
		hasDefault = hasDefault || n.Name == "default"
	}
	if !hasDefault {
		nss = append(nss, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	}
	lists := map[string]any{
		"/api/v1/services":                         list("ServiceList", "v1", svcs),
		"/apis/discovery.k8s.io/v1/endpointslices": list("EndpointSliceList", "discovery.k8s.io/v1", slices),
		"/api/v1/namespaces":                       list("NamespaceList", "v1", nss),
		"/api/v1/pods":                             list("PodList", "v1", []corev1.Pod{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, ok := lists[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
			if r.URL.Query().Get("sendInitialEvents") == "true" {
				// Not a server that streams lists: the reflector falls back to list+watch.
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400}`, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			select {
			case <-r.Context().Done():
			case <-time.After(60 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
	port, err := corednsrun.FreePort()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	a := &fakeAPI{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	go func() { _ = a.srv.Serve(l) }()
	return a, nil
}

func (a *fakeAPI) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
}

func list[T any](kind, apiVersion string, items []T) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": map[string]any{"resourceVersion": "1"}, "items": items}
}
