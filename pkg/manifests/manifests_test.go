package manifests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/jsonpath"

	"github.com/lanaccess/kubectl-lanaccess/pkg/version"
)

// kubernetesManifests are the names whose documents are Kubernetes objects.
var kubernetesManifests = []string{"rbac", "rbac-doctor", "rbac-helpers", "rbac-vpn-exec", "rbac-node-configz", "rbac-node-read", "job", "helm-test", "argocd", "job-vpn", "helm-test-vpn", "argocd-vpn"}

// inCluster are the examples that run the plugin's image in a pod.
var inCluster = []string{"job", "helm-test", "argocd", "job-vpn", "helm-test-vpn", "argocd-vpn"}

// decodeAll decodes every document of name strictly (an unknown or misspelt field is an error)
// with client-go's scheme, into typed objects.
func decodeAll(t *testing.T, name string) []runtime.Object {
	t.Helper()
	return decodeDocs(t, name, rendered(t, name, Options{}))
}

// rendered is what a user applies of name: the printed YAML, or for helm-test what real Helm
// renders of it (release proxy in namespace traefik).
func rendered(t *testing.T, name string, o Options) []byte {
	t.Helper()
	if strings.HasPrefix(name, "helm-test") {
		return helmTemplate(t, name, o, "proxy", "traefik", nil)
	}
	raw, err := Render(name, o)
	require.NoError(t, err)
	return raw
}

// decodeDocs decodes every document of raw strictly into typed objects.
func decodeDocs(t *testing.T, name string, raw []byte) []runtime.Object {
	t.Helper()
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var objs []runtime.Object
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		require.NoError(t, err, "%s document %d does not decode strictly:\n%s", name, i, doc)
		require.NotEmpty(t, gvk.Kind)
		objs = append(objs, obj)
	}
	require.NotEmpty(t, objs, name)
	return objs
}

func TestEveryKubernetesManifestDecodesIntoTypedObjects(t *testing.T) {
	for _, name := range kubernetesManifests {
		t.Run(name, func(t *testing.T) {
			for _, obj := range decodeAll(t, name) {
				_, isUnstructured := obj.(runtime.Unstructured)
				assert.False(t, isUnstructured, "%T is not a typed object", obj)
			}
		})
	}
}

func TestEveryNameIsPrintableAndUnknownNamesAreRefused(t *testing.T) {
	for _, n := range Names() {
		b, err := Get(n)
		require.NoError(t, err, n)
		assert.NotEmpty(t, b, n)
	}
	_, err := Get("rbca")
	require.ErrorContains(t, err, `no manifest "rbca" (choose from rbac, rbac-doctor`)
	rbac, err := Get("rbac")
	require.NoError(t, err)
	doctor, err := Get("rbac-doctor")
	require.NoError(t, err)
	assert.Equal(t, string(doctor), string(rbac), "rbac is the read-only bundle; the others are opt-in by name")
}

// doctorPod returns the pod template of an example and its annotations.
func doctorPod(t *testing.T, name string) (corev1.PodSpec, map[string]string) {
	t.Helper()
	return podOf(t, name, decodeAll(t, name))
}

// podOf returns the pod spec and annotations of the one Job or Pod among objs.
func podOf(t *testing.T, name string, objs []runtime.Object) (corev1.PodSpec, map[string]string) {
	t.Helper()
	for _, obj := range objs {
		switch v := obj.(type) {
		case *batchv1.Job:
			return v.Spec.Template.Spec, v.Annotations
		case *corev1.Pod:
			return v.Spec, v.Annotations
		}
	}
	t.Fatalf("%s has no Job or Pod", name)
	return corev1.PodSpec{}, nil
}

// renderPod renders an example with o and returns its pod template.
func renderPod(t *testing.T, name string, o Options) corev1.PodSpec {
	t.Helper()
	spec, _ := podOf(t, name, decodeDocs(t, name, rendered(t, name, o)))
	return spec
}

func TestTheExamplesRunTheImageOfThisVersion(t *testing.T) {
	for _, name := range inCluster {
		spec := renderPod(t, name, Options{})
		assert.Equal(t, version.Image(), spec.Containers[0].Image, name)
		// The test binary carries no release version: a clearly-dev tag.
		assert.Equal(t, version.ImageRepository+":"+version.DevTag, spec.Containers[0].Image, name)
		spec = renderPod(t, name, Options{Image: "registry.lan:5000/mirror/kubectl-lanaccess:v0.2.0"})
		assert.Equal(t, "registry.lan:5000/mirror/kubectl-lanaccess:v0.2.0", spec.Containers[0].Image, name)
	}
}

func TestTheExamplesTrustTheCAOfAConfigMapWhenGiven(t *testing.T) {
	for _, name := range []string{"job", "helm-test", "argocd"} {
		t.Run(name, func(t *testing.T) {
			spec := renderPod(t, name, Options{})
			assert.Empty(t, spec.Volumes)
			assert.Empty(t, spec.Containers[0].VolumeMounts)
			assert.NotContains(t, spec.Containers[0].Args, "--ca-file")

			spec = renderPod(t, name, Options{CAConfigMap: "proxy-ca"})
			require.Len(t, spec.Volumes, 1)
			v := spec.Volumes[0]
			require.NotNil(t, v.ConfigMap)
			assert.Equal(t, "proxy-ca", v.ConfigMap.Name)
			assert.Equal(t, []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}, v.ConfigMap.Items)
			c := spec.Containers[0]
			require.Len(t, c.VolumeMounts, 1)
			assert.Equal(t, corev1.VolumeMount{Name: v.Name, MountPath: CAMountPath, ReadOnly: true}, c.VolumeMounts[0])
			i := slices.Index(c.Args, "--ca-file")
			require.GreaterOrEqual(t, i, 0, "%v", c.Args)
			assert.Equal(t, CAMountPath+"/ca.crt", c.Args[i+1], "the file the mount holds")
		})
	}
}

func TestRenderRefusesNamesThatWouldChangeTheYAML(t *testing.T) {
	for _, o := range []Options{
		{CAConfigMap: "proxy-ca\n    hostNetwork: true"},
		{CAConfigMap: "Proxy_CA"},
		{Image: "evil image"},
		{Image: "ghcr.io/x/y:v1\nhostPID: true"},
		{Image: "ghcr.io/x/y:v1 # comment"},
	} {
		_, err := Render("job", o)
		assert.Error(t, err, "%+v", o)
	}
}

// The Job's log is its JSON report alone: the container writes it on stdout, and what it would
// write on stderr (--wait's attempts, the error) to the kubelet's termination message file,
// which the pod declares as such; the header's recipe keeps the log as the report, with no
// filter, and reads the attempts from the pod's status.
func TestTheJobKeepsItsReportInThePodLog(t *testing.T) {
	for name, job := range map[string]string{"job": "lanaccess-doctor", "job-vpn": "lanaccess-vpn-trace"} {
		spec := renderPod(t, name, Options{})
		c := spec.Containers[0]
		assert.Equal(t, "json", c.Args[slices.Index(c.Args, "-o")+1], "the JSON report on stdout, in the pod's log")
		i := slices.Index(c.Args, "--log-file")
		require.GreaterOrEqual(t, i, 0, "%v", c.Args)
		assert.Equal(t, corev1.TerminationMessagePathDefault, c.Args[i+1])
		assert.Equal(t, c.Args[i+1], c.TerminationMessagePath)
		assert.Equal(t, corev1.TerminationMessageReadFile, c.TerminationMessagePolicy, "the file, never the log's tail")
		assert.NotContains(t, c.Args, "--json-file", "no file that goes away with the pod")
		assert.Empty(t, spec.Volumes)
		raw, err := Get(name)
		require.NoError(t, err)
		// The re-run recipe of the header (the lab test runs it): delete, apply, wait, logs, verdict.
		for _, line := range []string{
			"kubectl -n lanaccess delete job " + job + " --ignore-not-found",
			"kubectl lanaccess manifests " + name + " | kubectl apply -f -",
			"kubectl -n lanaccess wait job/" + job + " --timeout=6m --for=jsonpath='{.status.conditions[-1:].type}'",
			"kubectl -n lanaccess logs job/" + job + " > lanaccess.json",
			"kubectl -n lanaccess get pods -l job-name=" + job + " -o jsonpath='{.items[*].status.containerStatuses[0].state.terminated.message}'",
			"kubectl -n lanaccess wait job/" + job + " --timeout=30s --for=condition=Complete",
		} {
			assert.Contains(t, string(raw), "#   "+line+"\n", name)
		}
		assert.NotContains(t, string(raw), "sed ", name)
	}
	// The hooks' logs are read by people (helm test --logs, Argo CD's UI): attempts and report.
	for _, name := range []string{"helm-test", "argocd", "helm-test-vpn", "argocd-vpn"} {
		assert.NotContains(t, renderPod(t, name, Options{}).Containers[0].Args, "--log-file", name)
	}
}

// The recipe waits with --for=jsonpath='{.status.conditions[-1:].type}' and no value: kubectl
// (k8s.io/kubectl/pkg/cmd/wait/json.go, checkCondition) is satisfied when the expression finds
// exactly one value, and errors on more than one. The Job's last condition is found once it
// finishes, whether it succeeds or fails: the Job controller (pkg/controller/job,
// trackJobStatusAndRemoveFinalizers) first appends SuccessCriteriaMet or FailureTarget, then
// Complete or Failed once the pods' finalizers are gone, which is why the verdict is a second
// wait, for Complete. A running Job has no condition. The lab test runs the recipe against a
// real Job controller (a completed Job); this covers the failed one too.
func TestTheRecipesWaitEndsOnCompleteAndOnFailed(t *testing.T) {
	j := jsonpath.New("wait").AllowMissingKeys(true)
	require.NoError(t, j.Parse("{.status.conditions[-1:].type}"))
	for status, want := range map[string]string{
		`{}`:                        "",
		`{"active": 1, "ready": 1}`: "",
		`{"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}], "succeeded": 1}`: "Complete",
		`{"conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}], "failed": 1}`:           "Failed",
		`{"conditions": [{"type": "FailureTarget", "status": "True"}]}`:                                                              "FailureTarget",
	} {
		var job map[string]any
		require.NoError(t, json.Unmarshal([]byte(`{"status": `+status+`}`), &job))
		results, err := j.FindResults(job)
		require.NoError(t, err)
		require.Len(t, results, 1)
		if want == "" {
			assert.Empty(t, results[0], "a running Job: kubectl keeps waiting")
			continue
		}
		require.Len(t, results[0], 1, "exactly one value, or kubectl wait errors")
		assert.Equal(t, want, results[0][0].Interface())
	}
}

func TestTheCIExamplesRunDoctorAsTheServiceAccount(t *testing.T) {
	for name, wantAnnotations := range map[string]map[string]string{
		"job":       nil,
		"helm-test": {"helm.sh/hook": "test"},
		"argocd":    {"argocd.argoproj.io/hook": "PostSync"},
	} {
		t.Run(name, func(t *testing.T) {
			spec, annotations := doctorPod(t, name)
			for k, v := range wantAnnotations {
				assert.Equal(t, v, annotations[k], k)
			}
			sa := "kubectl-lanaccess" // rbac-doctor's; the Helm test binds the release's own
			if name == "helm-test" {
				sa = "proxy-lanaccess"
			}
			assert.Equal(t, sa, spec.ServiceAccountName)
			assert.Equal(t, corev1.RestartPolicyNever, spec.RestartPolicy, "a failed doctor is a failed run, not a restart")
			require.Len(t, spec.Containers, 1)
			c := spec.Containers[0]
			assert.Equal(t, []string{"kubectl-lanaccess"}, c.Command)
			assert.Equal(t, "doctor", c.Args[0])
			assert.Contains(t, c.Args, "--no-helpers", "the CI examples are bound to the read-only role only")
			assert.Contains(t, strings.Join(c.Args, " "), "--wait 3m")
			require.NotNil(t, c.SecurityContext)
			assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
			assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
			assert.True(t, *spec.SecurityContext.RunAsNonRoot)
		})
	}
}

func lintWorkflow(t *testing.T, content []byte) []*actionlint.Error {
	t.Helper()
	opts := &actionlint.LinterOptions{}
	// shellcheck, when installed, also checks the run: scripts.
	if path, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = path
	}
	var out bytes.Buffer
	linter, err := actionlint.NewLinter(&out, opts)
	require.NoError(t, err)
	errs, err := linter.Lint(".github/workflows/lanaccess.yaml", content, nil)
	require.NoError(t, err)
	return errs
}

func TestTheGitHubActionsExamplePassesActionlint(t *testing.T) {
	for name, cmd := range map[string]string{"github-actions": "doctor", "github-actions-vpn": "vpn-trace -n vpn --only VPN001,VPN002"} {
		t.Run(name, func(t *testing.T) {
			wf, err := Get(name)
			require.NoError(t, err)
			errs := lintWorkflow(t, wf)
			msgs := make([]string, 0, len(errs))
			for _, e := range errs {
				msgs = append(msgs, fmt.Sprintf("%d:%d %s [%s]", e.Line, e.Column, e.Message, e.Kind))
			}
			assert.Empty(t, msgs)
			assert.Contains(t, string(wf), "run: kubectl-lanaccess "+cmd+" --wait 3m --junit-file")
			assert.Contains(t, string(wf), `>> "$GITHUB_STEP_SUMMARY"`)
			assert.Regexp(t, `uses: mikepenz/action-junit-report@[0-9a-f]{40} # v`, string(wf), "a third-party action pinned to a commit")
			assertPinned(t, wf)
			assert.Contains(t, string(wf), "${{ runner.arch }}", "the runner's architecture's archive")
			assert.Contains(t, string(wf), "github-actions-vpn", "the VPN deploy's variant is named")
			assert.Contains(t, string(wf), "LANACCESS_VERSION: dev\n", "the test binary is no release: no release to download")
			assert.NotContains(t, string(wf), "{%")
		})
	}
}

func TestActionlintCatchesABrokenWorkflow(t *testing.T) {
	// The same workflow with a typo in an expression and an unknown context property: the lint
	// above can fail. (The inputs of an action pinned to a commit are not known to actionlint.)
	wf, err := Get("github-actions")
	require.NoError(t, err)
	broken := strings.Replace(string(wf), "github.event.workflow_run.conclusion", "github.event.workflow_run.conclusoin(", 1)
	broken = strings.Replace(broken, "runner.arch }}", "runner.archh }}", 1)
	assert.GreaterOrEqual(t, len(lintWorkflow(t, []byte(broken))), 2)
}

// The Argo CD example's advice names no sync wave that no object carries: its hook is PostSync,
// which Argo CD runs after every wave of the Sync phase is applied and Healthy.
func TestTheArgoCDExampleAdvisesNoWaveItDoesNotCarry(t *testing.T) {
	raw, err := Get("argocd")
	require.NoError(t, err)
	_, annotations := doctorPod(t, "argocd")
	assert.Equal(t, "PostSync", annotations["argocd.argoproj.io/hook"])
	wave, carried := annotations["argocd.argoproj.io/sync-wave"]
	header := strings.ToLower(string(raw[:bytes.Index(raw, []byte("apiVersion:"))]))
	if !carried {
		assert.NotRegexp(t, `earlier (sync )?wave|sync-wave:`, header)
		assert.Contains(t, header, "no sync wave needed")
		return
	}
	assert.Contains(t, header, wave)
}
