package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"
)

// kubeFlags are kubectl's connection flags, the ones every kubectl plugin takes: --kubeconfig,
// --context, --cluster, --user, -n/--namespace, -s/--server, the credentials (--token,
// --client-certificate, --client-key), the TLS ones (--certificate-authority,
// --insecure-skip-tls-verify, --tls-server-name), impersonation (--as, --as-group, --as-uid,
// --as-user-extra), --proxy-url, --disable-compression, --request-timeout and --cache-dir.
//
// They mirror cli-runtime's genericclioptions.ConfigFlags as NewConfigFlags(true) makes it
// (k8s.io/cli-runtime v0.37.2, pkg/genericclioptions/config_flags.go): the same names,
// shorthands, defaults and help (AddFlags), bound to client-go's clientcmd overrides the same
// way (toRawKubeConfigLoader), one loader per run (usePersistentConfig). ConfigFlags itself is
// not used: it also builds a disk-cached discovery client and a REST mapper, which link
// cli-runtime's resource builder, kustomize (with Go's plugin package) and client-go's whole
// API scheme into the binary, for clients this plugin never asks it for.
type kubeFlags struct {
	kubeconfig string
	// cacheDir is accepted for kubectl's sake and read by nothing: kubectl keeps its discovery
	// and HTTP caches there, and this plugin keeps none (it asks discovery once per run).
	cacheDir  string
	userExtra []string
	overrides clientcmd.ConfigOverrides

	mu     sync.Mutex
	loader clientcmd.ClientConfig
}

// newKubeFlags returns kubectl's defaults (NewConfigFlags): everything empty but
// --request-timeout "0" (no timeout: the command's own applies, newClients) and --cache-dir.
func newKubeFlags() *kubeFlags {
	return &kubeFlags{
		cacheDir:  defaultCacheDir(),
		overrides: clientcmd.ConfigOverrides{Timeout: "0"},
	}
}

// defaultCacheDir is kubectl's: $KUBECACHEDIR, else ~/.kube/cache (config_flags.go,
// getDefaultCacheDir).
func defaultCacheDir() string {
	if kcd := os.Getenv("KUBECACHEDIR"); kcd != "" {
		return kcd
	}
	return filepath.Join(homedir.HomeDir(), ".kube", "cache")
}

// AddFlags registers the flags on fs with ConfigFlags.AddFlags' names and help; the names are
// client-go's (clientcmd.Flag*) where it has them.
func (f *kubeFlags) AddFlags(fs *pflag.FlagSet) {
	o := &f.overrides
	fs.StringVar(&f.kubeconfig, "kubeconfig", f.kubeconfig, "Path to the kubeconfig file to use for CLI requests.")
	fs.StringVar(&f.cacheDir, "cache-dir", f.cacheDir, "Default cache directory (accepted as kubectl's; it has no effect: this plugin keeps no cache)")
	fs.StringVar(&o.AuthInfo.ClientCertificate, clientcmd.FlagCertFile, "", "Path to a client certificate file for TLS")
	fs.StringVar(&o.AuthInfo.ClientKey, clientcmd.FlagKeyFile, "", "Path to a client key file for TLS")
	fs.StringVar(&o.AuthInfo.Token, clientcmd.FlagBearerToken, "", "Bearer token for authentication to the API server")
	fs.StringVar(&o.AuthInfo.Impersonate, clientcmd.FlagImpersonate, "", "Username to impersonate for the operation. User could be a regular user or a service account in a namespace.")
	fs.StringVar(&o.AuthInfo.ImpersonateUID, clientcmd.FlagImpersonateUID, "", "UID to impersonate for the operation.")
	fs.StringArrayVar(&o.AuthInfo.ImpersonateGroups, clientcmd.FlagImpersonateGroup, []string{}, "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	fs.StringArrayVar(&f.userExtra, "as-user-extra", []string{}, "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	fs.StringVar(&o.Context.Cluster, clientcmd.FlagClusterName, "", "The name of the kubeconfig cluster to use")
	fs.StringVar(&o.Context.AuthInfo, clientcmd.FlagAuthInfoName, "", "The name of the kubeconfig user to use")
	fs.StringVarP(&o.Context.Namespace, clientcmd.FlagNamespace, "n", "", "If present, the namespace scope for this CLI request")
	fs.StringVar(&o.CurrentContext, clientcmd.FlagContext, "", "The name of the kubeconfig context to use")
	fs.StringVarP(&o.ClusterInfo.Server, clientcmd.FlagAPIServer, "s", "", "The address and port of the Kubernetes API server")
	fs.StringVar(&o.ClusterInfo.TLSServerName, clientcmd.FlagTLSServerName, "", "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used")
	fs.BoolVar(&o.ClusterInfo.InsecureSkipTLSVerify, clientcmd.FlagInsecure, false, "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure")
	fs.StringVar(&o.ClusterInfo.CertificateAuthority, clientcmd.FlagCAFile, "", "Path to a cert file for the certificate authority")
	fs.StringVar(&o.Timeout, clientcmd.FlagTimeout, o.Timeout, "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
	fs.BoolVar(&o.ClusterInfo.DisableCompression, clientcmd.FlagDisableCompression, false, "If true, opt-out of response compression for all requests to the server")
	fs.StringVar(&o.ClusterInfo.ProxyURL, clientcmd.FlagProxyURL, "", "Proxy URL to use for requests to the API server")
}

// Namespace is -n's value ("" when not given: the kubeconfig context's namespace applies).
func (f *kubeFlags) Namespace() string { return f.overrides.Context.Namespace }

// Context is --context's value ("" when not given).
func (f *kubeFlags) Context() string { return f.overrides.CurrentContext }

// Server is -s/--server's value ("" when not given).
func (f *kubeFlags) Server() string { return f.overrides.ClusterInfo.Server }

// ToRESTConfig is the client configuration of the kubeconfig (or the pod's ServiceAccount)
// with the flags applied. A malformed --as-user-extra is an error here, where ConfigFlags
// drops it silently: an impersonation that is not the one asked for is no diagnosis. A bad
// --request-timeout is refused as clientcmd refuses it (ParseTimeout), naming the flag.
func (f *kubeFlags) ToRESTConfig() (*rest.Config, error) {
	if _, err := parseUserExtra(f.userExtra); err != nil {
		return nil, err
	}
	if _, err := clientcmd.ParseTimeout(f.overrides.Timeout); err != nil {
		return nil, fmt.Errorf("--request-timeout %q: %w", f.overrides.Timeout, err)
	}
	return f.ToRawKubeConfigLoader().ClientConfig()
}

// ToRawKubeConfigLoader is the kubeconfig loader of the flags, made once on first use (after
// the flags were parsed), as ConfigFlags' persistent loader is.
func (f *kubeFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loader == nil {
		f.loader = f.newLoader()
	}
	return f.loader
}

// newLoader binds the flags as ConfigFlags.toRawKubeConfigLoader does: client-go's default
// loading rules (KUBECONFIG, ~/.kube/config; --kubeconfig alone when given) with kubectl's
// historical defaults for a kubeconfig without a cluster (clientcmd.DefaultClientConfig,
// ClusterDefaults; newClients refuses that case before it asks localhost:8080), and no
// interactive prompt (there is no --password).
func (f *kubeFlags) newLoader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	rules.ExplicitPath = f.kubeconfig
	overrides := f.overrides
	overrides.ClusterDefaults = clientcmd.ClusterDefaults
	if extra, err := parseUserExtra(f.userExtra); err == nil && len(extra) > 0 {
		overrides.AuthInfo.ImpersonateUserExtra = extra
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides)
}

// parseUserExtra reads --as-user-extra's KEY=VALUE values (a key repeated collects values).
func parseUserExtra(values []string) (map[string][]string, error) {
	extra := map[string][]string{}
	for _, v := range values {
		key, value, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--as-user-extra %q: want KEY=VALUE", v)
		}
		extra[key] = append(extra[key], value)
	}
	return extra, nil
}
