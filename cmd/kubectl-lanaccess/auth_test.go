package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// A kubeconfig whose user authenticates with `auth-provider: oidc` builds a transport: the
// provider is registered (without the auth import, rest.TransportFor fails with "no Auth
// Provider found for name \"oidc\"").
func TestOIDCAuthProviderIsLinked(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user:
    auth-provider:
      name: oidc
      config:
        client-id: kubectl
        idp-issuer-url: https://idp.example.com
        id-token: eyJhbGciOiJub25lIn0.eyJleHAiOjQxMDI0NDQ4MDB9.
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`), 0o600))
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	require.NotNil(t, cfg.AuthProvider)
	_, err = rest.TransportFor(cfg)
	require.NoError(t, err)
}
