package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out, _, _ := runCLI(t, fixtureClients(t, fixtures+"/healthy"), append([]string{"__complete"}, args...)...)
	var got []string
	for line := range strings.SplitSeq(out, "\n") {
		if line == "" || strings.HasPrefix(line, ":") {
			continue
		}
		word, _, _ := strings.Cut(line, "\t")
		got = append(got, word)
	}
	return got
}

func TestFlagValuesComplete(t *testing.T) {
	assert.Equal(t, []string{"json", "junit"}, complete(t, "doctor", "-o", "j"))
	assert.Equal(t, []string{"fail", "warn"}, complete(t, "vpn-trace", "--fail-on", ""))
	assert.Equal(t, []string{"always"}, complete(t, "client-check", "--color", "al"))
	assert.Equal(t, []string{"LA301", "LA302", "LA303", "LA304"}, complete(t, "doctor", "--only", "LA30"))
	assert.Equal(t, []string{"LA1,VPN001"}, complete(t, "vpn-trace", "--only", "LA1,VPN001"))
	assert.Contains(t, complete(t, "doctor", "--skip", "LA106-AD"), "LA106-ADMISSION")
	assert.Contains(t, complete(t, "doctor", "-n", "lan"), "lan-dns", "namespaces come from the cluster")
}

func TestTheCompletionExecutableAsksThePlugin(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "kubectl-lanaccess")
	require.NoError(t, os.WriteFile(plugin, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755))
	script, err := filepath.Abs(filepath.Join("..", "..", "..", "kubectl_complete-lanaccess", "kubectl_complete-lanaccess"))
	require.NoError(t, err)
	cmd := exec.Command(script, "doctor", "--only", "LA1")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "__complete doctor --only LA1\n", string(out))
}
