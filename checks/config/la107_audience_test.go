package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

func TestAudienceBrokenVariants(t *testing.T) {
	runBrokenVariants(t, "la107-")
}

func ingressRouteObject(ns, name, match string, middlewares ...map[string]any) *unstructured.Unstructured {
	route := map[string]any{"kind": "Rule", "match": match, "services": []any{map[string]any{"name": "svc", "port": int64(80)}}}
	if len(middlewares) > 0 {
		var mw []any
		for _, m := range middlewares {
			mw = append(mw, m)
		}
		route["middlewares"] = mw
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"routes": []any{route}},
	}}
}

func TestAudienceFollowsMiddlewareChains(t *testing.T) {
	chainMW := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"name": "secured", "namespace": "traefik"},
		"spec":     map[string]any{"chain": map[string]any{"middlewares": []any{map[string]any{"name": "forward-auth"}}}},
	}}
	env := configEnv(t, nil, addObjects(chainMW, ingressRouteObject("web", "docs", "Host(`docs.apps.example.com`)", map[string]any{"name": "secured", "namespace": "traefik"})))
	st, o := runConfigCheck(t, Audience(env))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
}

func TestAudienceIgnoresRoutesOutsideTheZoneAndOtherIngressClasses(t *testing.T) {
	nginx := "nginx"
	other := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "shop"},
		Spec:       networkingv1.IngressSpec{IngressClassName: &nginx, Rules: []networkingv1.IngressRule{{Host: "shop.apps.example.com"}}},
	}
	env := configEnv(t, nil, addObjects(other, ingressRouteObject("web", "public", "Host(`www.example.org`)")))
	st, o := runConfigCheck(t, Audience(env))
	assert.Equal(t, engine.StatusPass, st, "%+v", o.Findings)
}

func TestAudienceRouteWithoutHostAnswersTheZoneToo(t *testing.T) {
	env := configEnv(t, nil, addObjects(ingressRouteObject("web", "catch-all", "PathPrefix(`/`)")))
	_, o := runConfigCheck(t, Audience(env))
	f := configFindings(o, engine.SeverityWarn, "IngressRoute web/catch-all")
	require.Len(t, f, 1)
	assert.Contains(t, f[0].Message, "every host (no Host rule)")
}

func TestAudienceWithoutTheMiddlewareCRDJudgesByName(t *testing.T) {
	env := configEnv(t, nil, func(objs []runtime.Object) []runtime.Object {
		var out []runtime.Object
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok && (u.GetKind() == "Middleware" || u.GetName() == "middlewares.traefik.io") {
				continue
			}
			out = append(out, o)
		}
		return out
	})
	st, o := runConfigCheck(t, Audience(env))
	assert.Equal(t, engine.StatusPass, st, "forward-auth names an authentication middleware: %+v", o.Findings)
}
