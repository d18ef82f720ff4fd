package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The oracle of these tests is cli-runtime's ConfigFlags, which kubeFlags replaces (it is a
// test dependency only: the binary does not link it, deps_test.go).

// flagTable describes each flag of fs: shorthand, type, default and help.
func flagTable(fs *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		out[f.Name] = fmt.Sprintf("-%s %s default=%q: %s", f.Shorthand, f.Value.Type(), f.DefValue, f.Usage)
	})
	return out
}

// Every flag a kubectl plugin takes from genericclioptions.NewConfigFlags is here with the same
// shorthand, type, default and help; --cache-dir's help says that it has no effect.
func TestKubeFlagsAreThoseOfKubectlPlugins(t *testing.T) {
	t.Setenv("KUBECACHEDIR", "")
	ours := pflag.NewFlagSet("ours", pflag.ContinueOnError)
	newKubeFlags().AddFlags(ours)
	theirs := pflag.NewFlagSet("cli-runtime", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).AddFlags(theirs)
	want, got := flagTable(theirs), flagTable(ours)
	require.Contains(t, got["cache-dir"], "it has no effect")
	got["cache-dir"] = strings.Replace(got["cache-dir"], " (accepted as kubectl's; it has no effect: this plugin keeps no cache)", "", 1)
	assert.Equal(t, want, got)
	assert.Len(t, got, 20)
}

// kubeconfigFile writes a kubeconfig of two contexts, clusters and users, and the PEM files
// its flags may name (empty: client-go checks that they can be read, not what they hold).
func kubeconfigFile(t *testing.T) (kubeconfig, dir string) {
	t.Helper()
	dir = t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o600))
	}
	kubeconfig = filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: c1, cluster: {server: "https://10.0.0.1:6443"}}
- {name: c2, cluster: {server: "https://10.0.0.2:6443", insecure-skip-tls-verify: true}}
users:
- {name: u1, user: {token: one}}
- {name: u2, user: {token: two, as: bob}}
contexts:
- {name: ctx1, context: {cluster: c1, user: u1, namespace: ns1}}
- {name: ctx2, context: {cluster: c2, user: u2}}
current-context: ctx1
`), 0o600))
	return kubeconfig, dir
}

// resolved is what a command gets from the flags: the client configuration (or its error),
// the context and the namespace.
func resolved(t *testing.T, cfg *rest.Config, err error, loader clientcmd.ClientConfig) string {
	t.Helper()
	require.NoError(t, err)
	if cfg.Proxy != nil {
		u, perr := cfg.Proxy(nil)
		require.NoError(t, perr)
		cfg.Proxy = nil
		cfg.Host += " via proxy " + u.String()
	}
	raw, rerr := loader.RawConfig()
	ns, explicit, nerr := loader.Namespace()
	return fmt.Sprintf("%+v\ncontext %q (%v)\nnamespace %q %v (%v)", *cfg, raw.CurrentContext, rerr, ns, explicit, nerr)
}

// The same command line gives the same client configuration, context and namespace as
// cli-runtime's ConfigFlags: kubectl's meaning of every flag, and its errors.
func TestKubeFlagsResolveAsConfigFlagsDo(t *testing.T) {
	kubeconfig, dir := kubeconfigFile(t)
	pem := func(f string) string { return filepath.Join(dir, f) }
	for _, args := range [][]string{
		{},
		{"--context", "ctx2"},
		{"-n", "team-a"},
		{"--namespace=ns/team-a", "--context=ctx2"},
		{"--cluster", "c2", "--user", "u2"},
		{"-s", "https://192.0.2.7:6443", "--tls-server-name", "api.example.com", "--token", "t0k"},
		{"--insecure-skip-tls-verify", "--disable-compression", "--proxy-url", "http://127.0.0.1:3128"},
		{"--insecure-skip-tls-verify", "--certificate-authority", pem("ca.pem")},
		{"--certificate-authority", pem("ca.pem"), "--client-certificate", pem("cert.pem"), "--client-key", pem("key.pem")},
		{"--as", "alice", "--as-group", "g1", "--as-group", "g2", "--as-uid", "42", "--as-user-extra", "a=1", "--as-user-extra", "a=2", "--as-user-extra", "b="},
		{"--request-timeout", "5s"},
		{"--request-timeout", "7"},
		{"--request-timeout", "soon"},
		{"--context", "nope"},
		{"--certificate-authority", pem("missing.pem")},
		{"--kubeconfig", pem("missing")},
		{"--cache-dir", pem("cache")},
	} {
		t.Run(strings.ReplaceAll(strings.Join(args, " "), dir, "DIR"), func(t *testing.T) {
			if !hasFlag(args, "--kubeconfig") {
				args = append([]string{"--kubeconfig", kubeconfig}, args...)
			}
			theirs := genericclioptions.NewConfigFlags(true)
			tfs := pflag.NewFlagSet("cli-runtime", pflag.ContinueOnError)
			theirs.AddFlags(tfs)
			require.NoError(t, tfs.Parse(args))
			ours := newKubeFlags()
			ofs := pflag.NewFlagSet("ours", pflag.ContinueOnError)
			ours.AddFlags(ofs)
			require.NoError(t, ofs.Parse(args))

			tcfg, terr := theirs.ToRESTConfig()
			ocfg, oerr := ours.ToRESTConfig()
			if terr != nil {
				require.ErrorContains(t, oerr, terr.Error()) // ours may name the flag too
			} else {
				want := resolved(t, tcfg, terr, theirs.ToRawKubeConfigLoader())
				assert.Equal(t, want, resolved(t, ocfg, oerr, ours.ToRawKubeConfigLoader()))
			}
			assert.Equal(t, *theirs.Namespace, ours.Namespace())
			assert.Equal(t, *theirs.Context, ours.Context())
			assert.Equal(t, *theirs.APIServer, ours.Server())
		})
	}
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// KUBECONFIG is read when --kubeconfig is not given, as kubectl reads it.
func TestKubeFlagsReadKUBECONFIG(t *testing.T) {
	kubeconfig, _ := kubeconfigFile(t)
	t.Setenv("KUBECONFIG", kubeconfig)
	f := newKubeFlags()
	fs := pflag.NewFlagSet("ours", pflag.ContinueOnError)
	f.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--context", "ctx2"}))
	cfg, err := f.ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://10.0.0.2:6443", cfg.Host)
	assert.Equal(t, "bob", cfg.Impersonate.UserName)
}

// newClients reads the run's context, server and namespace through the flags: the kubeconfig's
// current context and its namespace, --context's, and -n over both.
func TestClientsTakeTheContextAndNamespaceOfTheFlags(t *testing.T) {
	kubeconfig, _ := kubeconfigFile(t)
	for _, tc := range []struct {
		args                     []string
		context, server, namespc string
	}{
		{nil, "ctx1", "https://10.0.0.1:6443", "ns1"},
		{[]string{"--context", "ctx2"}, "ctx2", "https://10.0.0.2:6443", "default"},
		{[]string{"--context", "ctx2", "-n", "team-a"}, "ctx2", "https://10.0.0.2:6443", "team-a"},
		{[]string{"-s", "https://192.0.2.7:6443"}, "ctx1", "https://192.0.2.7:6443", "ns1"},
	} {
		f := newKubeFlags()
		fs := pflag.NewFlagSet("ours", pflag.ContinueOnError)
		f.AddFlags(fs)
		require.NoError(t, fs.Parse(append([]string{"--kubeconfig", kubeconfig}, tc.args...)))
		c, err := newClients(f, time.Second)
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, tc.context, c.cluster.Context, "%v", tc.args)
		assert.Equal(t, tc.server, c.cluster.Server, "%v", tc.args)
		assert.Equal(t, tc.namespc, c.namespace, "%v", tc.args)
	}
}

// A kubeconfig flag whose value cannot be used ends the run before it asks anything: exit 2,
// naming the value. ConfigFlags drops a malformed --as-user-extra silently; an impersonation
// other than the one asked for is refused here.
func TestBadKubeconfigFlagValuesExitTwo(t *testing.T) {
	kubeconfig, _ := kubeconfigFile(t)
	for flag, value := range map[string]string{
		"--as-user-extra":   "no-equals-sign",
		"--request-timeout": "soon",
		"--context":         "nope",
	} {
		_, errOut, code := runReal(t, "doctor", "--kubeconfig", kubeconfig, flag, value)
		assert.Equal(t, ExitUsage, code, "%s %s: %s", flag, value, errOut)
		assert.Contains(t, errOut, value, "%s %s", flag, value)
	}
}
