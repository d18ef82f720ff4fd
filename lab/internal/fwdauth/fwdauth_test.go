package fwdauth

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ask(t *testing.T, h http.Handler, host string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/oauth2/auth", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-Host", host)
	req.Header.Set("X-Forwarded-Uri", "/d/x?a=1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandlerSendsAnonymousBrowsersToTheIdentityProvider(t *testing.T) {
	rec := ask(t, Handler(filepath.Join(t.TempDir(), "none.json")), "grafana.apps.example.com")
	assert.Equal(t, http.StatusFound, rec.Code)
	assert.Equal(t, "https://auth.example.com/oauth2/start?rd=https%3A%2F%2Fgrafana.apps.example.com%2Fd%2Fx%3Fa%3D1", rec.Header().Get("Location"))
}

func TestHandlerAnswersWhatTheFileSaysForItsHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "answers.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"grafana.apps.example.com":{"status":302,"location":"/oauth2/start?rd=%2F"},"x.example.com":{"status":401}}`), 0o600))
	h := Handler(path)
	rec := ask(t, h, "grafana.apps.example.com")
	assert.Equal(t, http.StatusFound, rec.Code)
	assert.Equal(t, "/oauth2/start?rd=%2F", rec.Header().Get("Location"))
	rec = ask(t, h, "x.example.com")
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.Empty(t, rec.Header().Get("Location"))
	assert.Contains(t, ask(t, h, "other.example.com").Header().Get("Location"), IdentityProviderStart)

	require.NoError(t, os.WriteFile(path, []byte(`{`), 0o600))
	assert.Equal(t, http.StatusInternalServerError, ask(t, h, "grafana.apps.example.com").Code, "a broken file is no answer")
}
