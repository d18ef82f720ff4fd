package podruntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

var labEnv = TraefikEnv{PodIP: "10.244.1.5", Endpoint: "https://10.0.10.10:6443", TokenFile: "/p/traefik.token", CAFile: "/s/ca.crt"}

func TestTraefikArgsBindTheEntrypointsOnThePodIPAndReachTheAPIServer(t *testing.T) {
	got := TraefikArgs([]string{
		"--entryPoints.web.address=:8000/tcp", "--entryPoints.websecure.address=:8443/tcp",
		"--entryPoints.websecure.http.tls=true", "--providers.kubernetescrd", "--providers.kubernetesingress",
	}, labEnv)
	assert.Equal(t, []string{
		"--entryPoints.web.address=10.244.1.5:8000/tcp", "--entryPoints.websecure.address=10.244.1.5:8443/tcp",
		"--entryPoints.websecure.http.tls=true", "--providers.kubernetescrd", "--providers.kubernetesingress",
		"--providers.kubernetescrd.endpoint=https://10.0.10.10:6443", "--providers.kubernetescrd.token=/p/traefik.token",
		"--providers.kubernetescrd.certauthfilepath=/s/ca.crt",
		"--providers.kubernetesingress.endpoint=https://10.0.10.10:6443", "--providers.kubernetesingress.token=/p/traefik.token",
		"--providers.kubernetesingress.certauthfilepath=/s/ca.crt",
		"--global.checknewversion=false", "--global.sendanonymoususage=false",
	}, got)
}

func TestTraefikArgsKeepWhatTheContainerSays(t *testing.T) {
	env := labEnv
	env.Wildcard = true
	got := TraefikArgs([]string{"traefik", "--entrypoints.web.address=:8000", "--providers.kubernetesgateway.experimentalchannel=true",
		"--providers.kubernetesingress=false", "--global.checkNewVersion=true"}, env)
	assert.Equal(t, "--entrypoints.web.address=:8000", got[0], "a pod of its own binds the wildcard")
	assert.Contains(t, got, "--providers.kubernetesgateway.token=/p/traefik.token", "a provider enabled through an option")
	assert.NotContains(t, got, "--providers.kubernetesingress.token=/p/traefik.token", "a disabled provider")
	assert.NotContains(t, got, "--global.checknewversion=false", "the container's own choice stays")
	assert.NotContains(t, got, "traefik")
}
