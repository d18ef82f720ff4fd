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

	k3s := &metav1.ObjectMeta{Annotations: map[string]string{"objectset.rio.cattle.io/id": "coredns"}}
	o, ok = OwnerOf(k3s)
	assert.True(t, ok)
	assert.Equal(t, "k3s", o.Tool)

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
