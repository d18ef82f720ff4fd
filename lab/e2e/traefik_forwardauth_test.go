//go:build lab

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/internal/traefikoracle"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/fwdauth"
)

// Every case of testdata/traefik-forwardauth.json, through the lab's real Traefik: a Middleware
// with the case's forwardAuth (a patched case's patch applied by the API server as kubectl
// --type=merge does), an Ingress of its own host that names it, the lab's auth server answering
// the case's auth answer; the browser must get exactly the case's answer. This is the proof
// LA401's unit tests rely on when their stand-in proxies answer from that file.
func TestTraefikForwardAuthCasesOnTheLab(t *testing.T) {
	start := time.Now()
	cases, err := traefikoracle.Load(oracleCasesFile)
	require.NoError(t, err)
	dc, err := dynamic.NewForConfig(lab.Config)
	require.NoError(t, err)
	for _, c := range cases {
		host := c.Name + ".apps.example.com"
		name := "fa-" + c.Name
		fa := c.ForwardAuth
		if c.PatchOf != "" {
			base, _ := cases.Named(c.PatchOf)
			fa = base.ForwardAuth
		}
		createMiddleware(t, dc, "monitoring", name, map[string]any{"forwardAuth": fa})
		if c.PatchOf != "" {
			patch, err := json.Marshal(c.Patch)
			require.NoError(t, err)
			kubectl(t, "-n", "monitoring", "patch", "middleware", name, "--type=merge", "-p", string(patch))
		}
		createIngress(t, "monitoring", name, host, "websecure", "monitoring-"+name+"@kubernetescrd")
		lab.AnswerForwardAuth(t, host, &fwdauth.Answer{Status: c.Auth.Status, Location: c.Auth.Location})
	}
	for _, c := range cases {
		host := c.Name + ".apps.example.com"
		eventually(t, 20*time.Second, func() error {
			resp, err := httpsVia(host, proxyAddresses[0], 3*time.Second)
			if err != nil {
				return err
			}
			if resp.StatusCode != c.Browser.Status || resp.Header.Get("Location") != c.Browser.Location {
				return fmt.Errorf("case %s: Traefik answers %d %q, the case says %d %q", c.Name,
					resp.StatusCode, resp.Header.Get("Location"), c.Browser.Status, c.Browser.Location)
			}
			return nil
		})
	}
	t.Logf("%d cases proven on Traefik in %s", len(cases), time.Since(start))
}

// createMiddleware creates a traefik.io Middleware, deleted at cleanup.
func createMiddleware(t *testing.T, dc dynamic.Interface, ns, name string, spec map[string]any) {
	t.Helper()
	createTraefikObject(t, dc, middlewaresGVR, "Middleware", ns, name, spec)
}

// createTraefikObject creates a traefik.io/v1alpha1 object of kind with spec, deleted at
// cleanup; the API server validates it against Traefik's own CRD.
func createTraefikObject(t *testing.T, dc dynamic.Interface, gvr schema.GroupVersionResource, kind, ns, name string, spec map[string]any) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
	_, err := dc.Resource(gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err, "the API server takes the %s under Traefik's CRD", kind)
	t.Cleanup(func() {
		_ = dc.Resource(gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// createIngress creates an Ingress of class traefik for host to Service grafana (namespace ns
// must be monitoring for the backend) on the given entrypoints, with the apps wildcard
// certificate and the given middlewares annotation ("" for none); deleted at cleanup.
func createIngress(t *testing.T, ns, name, host, entrypoints, middlewares string) {
	t.Helper()
	class := "traefik"
	prefix := networkingv1.PathTypePrefix
	ann := map[string]string{"traefik.ingress.kubernetes.io/router.entrypoints": entrypoints}
	if middlewares != "" {
		ann["traefik.ingress.kubernetes.io/router.middlewares"] = middlewares
	}
	if entrypoints == "websecure" {
		ann["traefik.ingress.kubernetes.io/router.tls"] = "true"
	}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec: networkingv1.IngressSpec{
			IngressClassName: &class,
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "apps-wildcard-tls"}},
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "grafana", Port: networkingv1.ServiceBackendPort{Name: "http"}},
				}}},
			}}}},
		},
	}
	_, err := lab.Client.NetworkingV1().Ingresses(ns).Create(context.Background(), ing, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = lab.Client.NetworkingV1().Ingresses(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}
