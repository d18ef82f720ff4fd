// Package roundtrip is the round trip of a printed fix, for the tests of every check family (as
// kubectl's pkg/cmd/testing is for kubectl's commands): a remediation is a shell snippet for
// people to paste, and Cluster.Apply runs it the way kubectl would against the fake API the
// checks read (the client-go object tracker applies JSON and merge patches with the same
// libraries as the API server); Cluster.Discover then models the cluster again, so that a test
// shows the check passing on the result.
package roundtrip

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
)

// Cluster is a fake API server's two clients.
type Cluster struct {
	CS *fake.Clientset
	DC *dynamicfake.FakeDynamicClient
}

// New serves objs, with every permission granted.
func New(t testing.TB, objs []runtime.Object) Cluster {
	t.Helper()
	cs, dc, err := fixture.Clients(objs)
	require.NoError(t, err)
	fixture.ReactAccess(cs, func(authorizationv1.ResourceAttributes) bool { return true })
	return Cluster{CS: cs, DC: dc}
}

// WithOverlay serves the fixtures of dirs (the first is the base) with overlay, a YAML stream
// of objects that replace or delete theirs (see internal/fixture), on top.
func WithOverlay(t testing.TB, overlay string, dirs ...string) Cluster {
	t.Helper()
	objs, err := fixture.Load(dirs...)
	require.NoError(t, err)
	if overlay != "" {
		more, err := fixture.Decode("overlay", []byte(overlay))
		require.NoError(t, err)
		objs, err = fixture.Overlay(append(objs, more...)...)
		require.NoError(t, err)
	}
	return New(t, objs)
}

// Discover models the cluster as doctor's discovery does.
func (c Cluster) Discover(t testing.TB, sel kube.Selection) *kube.Setup {
	t.Helper()
	setup, err := kube.Discover(context.Background(), clientgo.Wrap(c.CS), c.DC, sel)
	require.NoError(t, err)
	return setup
}

// resources maps the kinds remediations name (kubectl's singular lower-case form, or
// kind.group) to their resource; the typed ones go through the clientset's tracker.
var resources = map[string]schema.GroupVersionResource{
	"service":                          {Version: "v1", Resource: "services"},
	"configmap":                        {Version: "v1", Resource: "configmaps"},
	"deployment":                       {Group: "apps", Version: "v1", Resource: "deployments"},
	"daemonset":                        {Group: "apps", Version: "v1", Resource: "daemonsets"},
	"ingress":                          {Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
	"validatingadmissionpolicy":        {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
	"validatingadmissionpolicybinding": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
}

// dynamicResources are the custom resources remediations name.
var dynamicResources = map[string]schema.GroupVersionResource{
	"middleware.traefik.io":                    {Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"},
	"httproute.gateway.networking.k8s.io":      {Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"},
	"referencegrant.gateway.networking.k8s.io": {Group: "gateway.networking.k8s.io", Version: "v1beta1", Resource: "referencegrants"},
	"ingressroute":                             {Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"},
	"ingressroutes.traefik.io":                 {Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"},
	"middleware":                               {Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"},
	"clusterpolicy.kyverno.io":                 {Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"},
	"policy.kyverno.io":                        {Group: "kyverno.io", Version: "v1", Resource: "policies"},
	"k8sexternalips.constraints.gatekeeper.sh": {Group: "constraints.gatekeeper.sh", Version: "v1beta1", Resource: "k8sexternalips"},
	"authorizationpolicy.security.istio.io":    {Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"},
}

// Apply runs every command of remediation against the cluster. Only kubectl patch, annotate and apply -f - are
// understood: a remediation that needs anything else cannot be round-tripped here, and the
// test says so.
func (c Cluster) Apply(t testing.TB, remediation string) {
	t.Helper()
	file, err := syntax.NewParser().Parse(strings.NewReader(remediation), "remediation")
	require.NoError(t, err, "the remediation does not parse as a shell script:\n%s", remediation)
	require.NotEmpty(t, file.Stmts, "the remediation has no command:\n%s", remediation)
	for _, st := range file.Stmts {
		call, ok := st.Cmd.(*syntax.CallExpr)
		require.True(t, ok, "not a simple command in:\n%s", remediation)
		words := make([]string, len(call.Args))
		for i, w := range call.Args {
			words[i], err = expand.Literal(nil, w)
			require.NoError(t, err)
		}
		var stdin string
		for _, r := range st.Redirs {
			if r.Hdoc != nil {
				stdin, err = expand.Document(nil, r.Hdoc)
				require.NoError(t, err)
			}
		}
		require.NoError(t, c.kubectl(t.Context(), words, stdin), "running %q", strings.Join(words, " "))
	}
}

// kubectlCall is a kubectl command line: its arguments, -n, and the other flags by name.
type kubectlCall struct {
	ns    string
	args  []string
	flags map[string]string
}

// parseKubectl reads the kubectl command lines remediations use: -n, -p and -f with their
// value, --flag=value, and the arguments.
func parseKubectl(words []string) (kubectlCall, error) {
	if len(words) == 0 || words[0] != "kubectl" {
		return kubectlCall{}, fmt.Errorf("not a kubectl command: %v", words)
	}
	k := kubectlCall{flags: map[string]string{}}
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-n" && i+1 < len(words):
			k.ns = words[i+1]
			i++
		case (w == "-p" || w == "-f") && i+1 < len(words):
			k.flags[w] = words[i+1]
			i++
		case strings.HasPrefix(w, "--"):
			name, value, _ := strings.Cut(w, "=")
			k.flags[name] = value
		default:
			k.args = append(k.args, w)
		}
	}
	if len(k.args) == 0 {
		return kubectlCall{}, fmt.Errorf("no verb")
	}
	return k, nil
}

func (c Cluster) kubectl(ctx context.Context, words []string, stdin string) error {
	k, err := parseKubectl(words)
	if err != nil {
		return err
	}
	args := k.args
	switch args[0] {
	case "patch":
		if len(args) != 3 {
			return fmt.Errorf("patch wants KIND NAME: %v", args)
		}
		pt := types.StrategicMergePatchType
		switch k.flags["--type"] {
		case "json":
			pt = types.JSONPatchType
		case "merge":
			pt = types.MergePatchType
		}
		return c.patch(ctx, args[1], k.ns, args[2], pt, []byte(k.flags["-p"]))
	case "annotate":
		return c.annotate(ctx, k)
	case "get", "describe":
		return nil // reads: they show the user something and change nothing
	case "delete":
		if len(args) != 3 {
			return fmt.Errorf("delete wants KIND NAME: %v", args)
		}
		return c.delete(ctx, args[1], k.ns, args[2])
	case "rollout":
		// A restart changes no object the checks read: the configuration it makes a workload
		// reload was written by the commands before it.
		if len(args) >= 2 && args[1] == "restart" {
			return nil
		}
		return fmt.Errorf("kubectl rollout %v is not understood by the round trip", args[1:])
	case "apply":
		return c.applyManifests(ctx, k, stdin)
	}
	return fmt.Errorf("kubectl %s is not understood by the round trip", args[0])
}

// annotate runs kubectl annotate KIND NAME KEY=VALUE... as the merge patch it is.
func (c Cluster) annotate(ctx context.Context, k kubectlCall) error {
	if len(k.args) < 4 {
		return fmt.Errorf("annotate wants KIND NAME KEY=VALUE: %v", k.args)
	}
	ann := map[string]any{}
	for _, kv := range k.args[3:] {
		key, value, _ := strings.Cut(kv, "=")
		ann[key] = value
	}
	raw := fmt.Sprintf(`{"metadata":{"annotations":%s}}`, mustJSON(ann))
	return c.patch(ctx, k.args[1], k.ns, k.args[2], types.MergePatchType, []byte(raw))
}

// applyManifests runs kubectl apply -f - on the manifests of stdin.
func (c Cluster) applyManifests(ctx context.Context, k kubectlCall, stdin string) error {
	if k.flags["-f"] != "-" {
		return fmt.Errorf("apply reads stdin only")
	}
	objs, err := fixture.Decode("stdin", []byte(stdin))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func (c Cluster) patch(ctx context.Context, kind, ns, name string, pt types.PatchType, data []byte) error {
	kind = strings.ToLower(kind)
	if gvr, ok := resources[kind]; ok {
		_, err := c.CS.Invokes(clienttesting.NewPatchAction(gvr, ns, name, pt, data), nil)
		return err
	}
	if gvr, ok := dynamicResources[kind]; ok {
		_, err := c.DC.Resource(gvr).Namespace(ns).Patch(ctx, name, pt, data, metav1.PatchOptions{})
		return err
	}
	return fmt.Errorf("kind %q is not known to the round trip", kind)
}

// create creates o, or replaces it when it exists (kubectl apply's outcome for a new manifest).
func (c Cluster) create(ctx context.Context, o runtime.Object) error {
	if u, ok := o.(*unstructured.Unstructured); ok {
		gvr, found := dynamicResources[strings.ToLower(u.GetKind())+"."+u.GroupVersionKind().Group]
		if !found {
			return fmt.Errorf("custom kind %s is not known to the round trip", u.GroupVersionKind())
		}
		_, err := c.DC.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = c.DC.Resource(gvr).Namespace(u.GetNamespace()).Update(ctx, u, metav1.UpdateOptions{})
		}
		return err
	}
	err := c.CS.Tracker().Add(o)
	if apierrors.IsAlreadyExists(err) {
		m, ok := o.(metav1.Object)
		kinds, _, kerr := scheme.Scheme.ObjectKinds(o)
		if !ok || kerr != nil || len(kinds) == 0 {
			return fmt.Errorf("%T: not a known Kubernetes object", o)
		}
		gvr, ok := resources[strings.ToLower(kinds[0].Kind)]
		if !ok {
			return fmt.Errorf("kind %q is not known to the round trip", kinds[0].Kind)
		}
		err = c.CS.Tracker().Update(gvr, o, m.GetNamespace())
	}
	return err
}

func (c Cluster) delete(ctx context.Context, kind, ns, name string) error {
	kind = strings.ToLower(kind)
	if gvr, ok := resources[kind]; ok {
		return c.CS.Tracker().Delete(gvr, ns, name)
	}
	if gvr, ok := dynamicResources[kind]; ok {
		return c.DC.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	return fmt.Errorf("kind %q is not known to the round trip", kind)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Alternatives splits a remediation at its "# or ..." lines: each part is one way to fix.
func Alternatives(remediation string) []string {
	var out []string
	var cur []string
	for line := range strings.SplitSeq(remediation, "\n") {
		if strings.HasPrefix(line, "# or") && len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
		cur = append(cur, line)
	}
	return append(out, strings.Join(cur, "\n"))
}
