package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOwnerOfTellsHelmArgoCDAndK3s(t *testing.T) {
	helm := &metav1.ObjectMeta{Namespace: "lan-dns", Name: "lan-dns",
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "coredns-1.46.2"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "lan-dns", "meta.helm.sh/release-namespace": "lan-dns"}}
	o, ok := OwnerOf(helm)
	assert.True(t, ok)
	assert.Equal(t, Owner{Tool: "Helm", Name: "lan-dns", Namespace: "lan-dns", Chart: "coredns-1.46.2"}, o)
	assert.Equal(t, "service.externalIPs", ValuesKey(o.Chart, "Service", "spec.externalIPs"))

	// Argo CD renders the chart itself: the chart's managed-by: Helm label is there, but no
	// release (the corpus case argocd-owned-proxy-lacks-address).
	argo := &metav1.ObjectMeta{Namespace: "traefik", Name: "traefik",
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "traefik-41.3.0"},
		Annotations: map[string]string{"argocd.argoproj.io/tracking-id": "traefik:/Service:traefik/traefik"}}
	o, ok = OwnerOf(argo)
	assert.True(t, ok)
	assert.Equal(t, "Argo CD", o.Tool)
	assert.Equal(t, "traefik", o.Name)
	note := ManagedNote(argo, "Service", "spec.externalIPs")
	assert.Contains(t, note, "Argo CD sets a direct change back")
	assert.Contains(t, note, "service.spec.externalIPs")

	// As k3s writes them (testdata/corpus k3s cases): an empty id, the Addon as owner.
	k3s := &metav1.ObjectMeta{Annotations: map[string]string{
		"objectset.rio.cattle.io/id":              "",
		"objectset.rio.cattle.io/owner-gvk":       "k3s.cattle.io/v1, Kind=Addon",
		"objectset.rio.cattle.io/owner-name":      "coredns",
		"objectset.rio.cattle.io/owner-namespace": "kube-system",
	}}
	o, ok = OwnerOf(k3s)
	assert.True(t, ok)
	assert.Equal(t, Owner{Tool: "k3s", Name: "coredns"}, o)
	assert.Contains(t, ManagedNote(k3s, "ConfigMap", "data.Corefile"), "k3s rewrites it from its manifests at every server start")

	// The seed's lan-dns ConfigMap rendered from the Traefik chart's extraObjects: the release
	// annotations, but no chart label (testdata/corpus/traefik-41-seed-extraobjects-verbatim).
	extra := &metav1.ObjectMeta{Namespace: "traefik", Name: "lan-dns",
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "traefik", "meta.helm.sh/release-namespace": "traefik"}}
	assert.Contains(t, ManagedNote(extra, "ConfigMap", "data.Corefile"), "verbatim from the release's values (e.g. the Traefik chart's extraObjects)")

	_, ok = OwnerOf(&metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}})
	assert.False(t, ok, "a chart's label alone is no release")
	assert.Empty(t, ManagedNote(&metav1.ObjectMeta{}, "Service", "spec.externalIPs"))
}

func TestValuesKeyFollowsTheTraefikChartVersion(t *testing.T) {
	assert.Equal(t, "service.externalIPs", ValuesKey("traefik-27.0.2", "Service", "spec.externalIPs"))
	assert.Equal(t, "service.spec.externalIPs", ValuesKey("traefik-41.3.0", "Service", "spec.externalIPs"))
	assert.Empty(t, ValuesKey("nginx-1.0.0", "Service", "spec.externalIPs"))
	assert.Empty(t, ValuesKey("", "Service", "spec.externalIPs"))
}
