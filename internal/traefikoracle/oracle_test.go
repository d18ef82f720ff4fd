package traefikoracle

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const casesFile = "../../testdata/traefik-forwardauth.json"

func TestLoadGivesAPatchedCaseItsBasesForwardAuthWithThePatch(t *testing.T) {
	cs, err := Load(casesFile)
	require.NoError(t, err)
	base, ok := cs.Named("oauth2-proxy-path")
	require.True(t, ok)
	patched, ok := cs.Named("oauth2-proxy-path-patched")
	require.True(t, ok)
	assert.Equal(t, ForwardAuth{Address: base.Of().Address, PreserveLocationHeader: true}, patched.Of())
	assert.Equal(t, []any{"X-Auth-Request-User", "X-Auth-Request-Email"}, patched.ForwardAuth["authResponseHeaders"], "the base's other fields are kept")
	assert.Nil(t, base.ForwardAuth["preserveLocationHeader"], "the base is not changed")
}

func TestGivesAnswersOnlyWhatACaseProves(t *testing.T) {
	cs, err := Load(casesFile)
	require.NoError(t, err)
	fa := ForwardAuth{Address: "http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth"}
	auth := Answer{Status: 302, Location: "/oauth2/start?rd=%2F"}
	got, ok := cs.Gives(fa, auth)
	require.True(t, ok)
	assert.Equal(t, Answer{Status: 302, Location: "http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/start?rd=%2F"}, got)
	fa.PreserveLocationHeader = true
	got, ok = cs.Gives(fa, auth)
	require.True(t, ok)
	assert.Equal(t, "/oauth2/start?rd=%2F", got.Location)
	_, ok = cs.Gives(fa, Answer{Status: 302, Location: "/elsewhere"})
	assert.False(t, ok, "an auth answer no case has")
}

func TestLoadRefusesAPatchBeyondSpecForwardAuth(t *testing.T) {
	for name, patch := range map[string]string{
		"another spec field": `{"spec": {"forwardAuth": {}, "other": 1}}`,
		"metadata too":       `{"spec": {"forwardAuth": {}}, "metadata": {}}`,
		"no forwardAuth":     `{"spec": {}}`,
	} {
		path := filepath.Join(t.TempDir(), "cases.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"cases": [
			{"name": "a", "forwardAuth": {"address": "http://a/"}},
			{"name": "b", "patchOf": "a", "patch": `+patch+`}]}`), 0o600))
		_, err := Load(path)
		assert.Error(t, err, name)
	}
	path := filepath.Join(t.TempDir(), "cases.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"cases": [{"name": "b", "patchOf": "a", "patch": {"spec": {"forwardAuth": {}}}}]}`), 0o600))
	_, err := Load(path)
	assert.ErrorContains(t, err, "not an unpatched case")
}

func TestTraefikVersionIsTheOneTheLabRuns(t *testing.T) {
	v, err := TraefikVersion("../../lab/versions.env")
	require.NoError(t, err)
	assert.Regexp(t, `^v3\.[0-9]+\.[0-9]+$`, v)
	path := filepath.Join(t.TempDir(), "versions.env")
	require.NoError(t, os.WriteFile(path, []byte("K8S_VERSION=v1.37.2\n"), 0o600))
	_, err = TraefikVersion(path)
	assert.ErrorContains(t, err, "has no TRAEFIK_VERSION")
}
